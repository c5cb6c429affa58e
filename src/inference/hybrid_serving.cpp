// Serving a hybrid Mamba/attention model (hybrid_serving.hpp).
#include "hybrid_serving.hpp"

#include "fmsim/inference/serving_constants.hpp"

namespace fmsim::inference {

using workload::HybridLayer;

workload::MambaShape serving_mamba_shape(const workload::MambaShape& shape, int tp) {
  workload::MambaShape s = shape;
  if (replicates_single_mamba_group(shape, tp)) s.groups = tp;
  return s;
}

double mamba_state_bytes_per_sequence(const workload::ModelSpec& m, double tp, double ssm_element_bytes) {
  const auto s = serving_mamba_shape(m.hybrid.mamba, static_cast<int>(tp));
  const double conv = s.conv_dim() / tp * (s.conv_kernel - 1) * kActivationBytes;
  const double ssm = s.heads / tp * s.head_dim * static_cast<double>(s.state) * ssm_element_bytes;
  return m.hybrid.count(HybridLayer::mamba) * (conv + ssm);
}

double mamba_prefill_scan_s(const compute::ComputeModel& gpu, const std::vector<workload::SsdKernel>& forward_kernels,
                            double tokens) {
  if (tokens <= 0) return 0.0;
  double s = 0;
  for (const auto& kernel : forward_kernels) s += workload::ssd_kernel_s(gpu, kernel, tokens, false);
  return s;
}

double mamba_decode_update_s(const compute::ComputeModel& gpu, const workload::MambaShape& s, double tp, double sequences,
                             double ssm_element_bytes) {
  if (sequences <= 0) return 0.0;
  const double H = s.heads / tp, G = s.groups / tp, P = s.head_dim, N = s.state;
  // causal_conv1d_update: the conv state read and shifted back, the new x, B, C in and out.
  const double conv = 2.0 * s.conv_dim() / tp * (s.conv_kernel - 1) * kActivationBytes + 2.0 * s.conv_dim() / tp * kActivationBytes;
  // selective_state_update: the SSM state read and written; x, z, y (H P each), B and C (G N each), dt.
  const double ssm = 2.0 * H * P * N * ssm_element_bytes + (3.0 * H * P + 2.0 * G * N + H) * kActivationBytes;
  return gpu.memory_s(sequences * conv) + gpu.memory_s(sequences * ssm);
}

double mamba_prefill_conv_s(const compute::ComputeModel& gpu, const workload::MambaShape& s, double tp, double tokens) {
  if (tokens <= 0) return 0.0;
  return gpu.memory_s(2.0 * tokens * s.conv_dim() / tp * kActivationBytes);  // causal_conv1d_fn with SiLU
}

}  // namespace fmsim::inference
