#include "fmsim/inference/moe_backend.hpp"

#include <algorithm>
#include <stdexcept>

namespace fmsim::inference {

MoeBackendCosts moe_backend_costs(MoeBackend backend, bool fp4_weights) {
  switch (backend) {
    case MoeBackend::grouped_gemm: return {};
    case MoeBackend::cutlass:
      return {kCutlassMoeFixed_s, fp4_weights ? kCutlassMoeWeightStreamFraction : kCutlassMoeWeightStreamFractionFp8, kCutlassMoeGemmSlowdown};
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

double moe_experts_s(const MoeBackendCosts& costs, const std::vector<MoeGemm>& gemms, double hbm_bandwidth_Bps, double other_launches_s) {
  double gemm_s = 0, launches_s = other_launches_s;
  for (const MoeGemm& g : gemms) {
    if (g.parts.total_s() <= 0) continue;
    const double stream_s = costs.weight_stream_fraction > 0 && hbm_bandwidth_Bps > 0
                                ? g.weight_bytes / (hbm_bandwidth_Bps * costs.weight_stream_fraction)
                                : 0.0;
    gemm_s += std::max({costs.gemm_slowdown * g.parts.compute_s, g.parts.memory_s, stream_s});
    launches_s += g.parts.overhead_s;
  }
  if (gemm_s <= 0) return 0.0;
  // The measured fixed cost holds every launch of the module; without one, the GEMMs keep their own.
  return gemm_s + (costs.fixed_s > 0 ? std::max(costs.fixed_s - other_launches_s, launches_s - other_launches_s) : launches_s - other_launches_s);
}

}  // namespace fmsim::inference
