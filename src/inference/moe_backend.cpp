#include "fmsim/inference/moe_backend.hpp"

#include <algorithm>
#include <stdexcept>

namespace fmsim::inference {

MoeBackendCosts moe_backend_costs(MoeBackend backend) {
  switch (backend) {
    case MoeBackend::grouped_gemm: return {};
    case MoeBackend::cutlass: return {kCutlassMoeFixed_s, kCutlassMoeWeightStreamFraction};
    case MoeBackend::trtllm_gen: return {kTrtllmGenMoeFixed_s, kTrtllmGenMoeWeightStreamFraction};
    case MoeBackend::triton: return {kTritonMoeFixed_s, kTritonMoeWeightStreamFraction};
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

double moe_experts_s(const MoeBackendCosts& costs, double grouped_s, double active_weight_bytes, double hbm_bandwidth_Bps) {
  if (grouped_s <= 0 && active_weight_bytes <= 0) return 0.0;
  const double stream_s = costs.weight_stream_fraction > 0 && hbm_bandwidth_Bps > 0
                              ? active_weight_bytes / (hbm_bandwidth_Bps * costs.weight_stream_fraction)
                              : 0.0;
  return costs.fixed_s + std::max(grouped_s, stream_s);
}

}  // namespace fmsim::inference
