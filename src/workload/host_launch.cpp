// The host issue path of dense layers that no CUDA graph covers (framework.hpp GraphCoverage::none). One
// CPU thread issues every kernel of the step; it runs ahead of the GPU as long as it is faster, so its time
// stays hidden until a layer's kernels are shorter than their issue (small models, short sequences): then
// the GPU waits for the host. Each half of a dense layer gets a node on the rank's "host" stream with the
// half's issue time, and the half's last GPU node waits for it (the MoE blocks' mechanism, moe_host.hpp,
// applied to dense layers). Issue time per kernel, by launch path:
// - te_modules: Megatron-Core with Transformer Engine; each TE module call costs kTeModuleHost_s (its
//   Python around the kernels), each other op kEagerOpHost_s. Attention half: LayerNormLinear (QKV),
//   DotProductAttention, Linear (projection) and two ops (RoPE, bias-dropout-add); MLP half: LayerNormLinear
//   (FC1), Linear (FC2) and two ops (activation, bias-dropout-add). Backward: the same module and op count
//   (their autograd functions).
// - eager: plain PyTorch (torchtitan, Megatron-LM 2021, DeepSpeed): kEagerOpHost_s per kernel-launching op,
//   counted from the ops the layer runs with the stack's fusions (elementwise_fusion.cpp): attention half
//   = norm + QKV + RoPE + the attention core (1 fused kernel; unfused: 2 batched GEMMs, softmax, dropout and
//   3 layout copies) + projection + residual add; MLP half = norm + FC1 + activation + FC2 + residual add.
//   Backward: twice the forward's (autograd runs a gradient op per forward op and two GEMMs per linear).
#include "moe_host_internal.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

double eager_ops(const TraceWriter& w, DenseHalf half) {
  const auto& fw = w.s.framework;
  double ops = element_wise_ops(w, ElementWiseChain::norm) + 1 /* residual add */;
  if (half == DenseHalf::attention) {
    ops += 2;  // QKV and projection GEMMs
    if (w.s.model.learned_positions == 0) ops += element_wise_ops(w, ElementWiseChain::rope);
    ops += fw.attention == AttentionKernel::unfused ? 2 + 1 + (fw.attention_dropout ? 1 : 0) + 3 : 1;
  } else {
    ops += 2 + element_wise_ops(w, ElementWiseChain::activation);  // FC1, activation, FC2
  }
  return ops;
}

}  // namespace

double eager_rope_host_s(const TraceWriter& w) {
  if (w.s.model.learned_positions > 0) return 0.0;
  return w.s.cluster.instance.host_op_time_factor * (element_wise_ops(w, ElementWiseChain::rope) - 1) * kEagerOpHost_s;
}

double dense_half_host_s(const TraceWriter& w, DenseHalf half, bool backward) {
  const auto& fw = w.s.framework;
  if (fw.graphs != GraphCoverage::none) return 0.0;
  // Eager ops take the host's op time factor (Grace: 2.75x), TE modules their x86 figure (moe_host.hpp).
  const double eager_scale = w.s.cluster.instance.host_op_time_factor;
  if (fw.host_launch == HostLaunch::te_modules) {
    const double modules = half == DenseHalf::attention ? 3 : 2;
    return modules * kTeModuleHost_s + eager_scale * 2 * kEagerOpHost_s + (half == DenseHalf::attention ? eager_rope_host_s(w) : 0.0);
  }
  return eager_scale * (backward ? 2.0 : 1.0) * eager_ops(w, half) * kEagerOpHost_s;
}

int dense_host_node(TraceWriter& w, int rank, DenseHalf half, bool backward) {
  const double seconds = dense_half_host_s(w, half, backward);
  if (seconds <= 0) return -1;
  const char* name = half == DenseHalf::attention ? (backward ? "host.attention.bwd" : "host.attention")
                                                  : (backward ? "host.mlp.bwd" : "host.mlp");
  return host_issue_node(w, rank, name, seconds);
}

int gate_on_dense_host(TraceWriter& w, int node, int host) { return host < 0 ? node : gate_on_host(w, node, host); }

}  // namespace fmsim::workload::detail
