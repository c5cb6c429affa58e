#include "fmsim/inference/moe_backend.hpp"

#include <algorithm>
#include <stdexcept>

namespace fmsim::inference {

MoeBackendCosts moe_backend_costs(MoeBackend backend) {
  switch (backend) {
    case MoeBackend::grouped_gemm: return {};
    case MoeBackend::cutlass: return {kCutlassMoeFixed_s, kCutlassMoeWeightStreamFraction, kCutlassMoeGemmSlowdown};
    case MoeBackend::trtllm_gen: return {kTrtllmGenMoeFixed_s, kTrtllmGenMoeWeightStreamFraction, kTrtllmGenMoeGemmSlowdown};
    case MoeBackend::triton: return {kTritonMoeFixed_s, kTritonMoeWeightStreamFraction, kTritonMoeGemmSlowdown};
  }
  return {};
}

const std::vector<std::string>& moe_backend_names() {
  static const std::vector<std::string> names{"grouped_gemm", "cutlass", "trtllm_gen", "triton"};
  return names;
}

std::string to_string(MoeBackend backend) { return moe_backend_names()[static_cast<std::size_t>(backend)]; }

MoeBackend moe_backend_from_name(const std::string& name) {
  const auto& names = moe_backend_names();
  const auto it = std::find(names.begin(), names.end(), name);
  if (it == names.end()) throw std::invalid_argument("unknown MoE backend '" + name + "'");
  return static_cast<MoeBackend>(it - names.begin());
}

double moe_grouped_gemm_s(const MoeBackendCosts& costs, const compute::GemmParts& grouped, double weight_bytes, double hbm_bandwidth_Bps) {
  if (grouped.total_s() <= 0) return 0.0;
  const double stream_s = costs.weight_stream_fraction > 0 && hbm_bandwidth_Bps > 0 ? weight_bytes / (hbm_bandwidth_Bps * costs.weight_stream_fraction) : 0.0;
  return grouped.overhead_s + std::max({costs.gemm_slowdown * grouped.compute_s, grouped.memory_s, stream_s});
}

double moe_experts_s(const MoeBackendCosts& costs, const std::vector<compute::GemmParts>& gemms, const std::vector<double>& weight_bytes,
                     double hbm_bandwidth_Bps) {
  double total = 0;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    total += moe_grouped_gemm_s(costs, gemms[i], i < weight_bytes.size() ? weight_bytes[i] : 0.0, hbm_bandwidth_Bps);
  }
  return total > 0 ? costs.fixed_s + total : 0.0;
}

}  // namespace fmsim::inference
