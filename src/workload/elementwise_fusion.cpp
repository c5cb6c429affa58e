// Element-wise chains run fused or op by op (framework.hpp Fusions, torch.compile). A fused chain reads
// its inputs and writes its output once (the bytes layer_ops.cpp has always charged); unfused, every
// eager PyTorch op of the chain reads its inputs from HBM and writes its output back, in the precision the
// code computes in. The extra bytes per element below count those round trips, op by op, from the eager
// code of the stacks in configs/stacks (docs/model.md "Software stacks"):
// - norm: torchtitan's RMSNorm (torchtitan/models/norms.py, 2025-03; the same composite as
//   torch.nn.RMSNorm in eager mode): x.float() (read 2, write 4), pow(2) (4 + 4), mean (4), x * rsqrt
//   (4 + 4), type_as (4 + 2), * weight (2 + 2) = 36 bytes per element against the fused kernel's 4;
//   autograd runs the gradients of those seven ops: 56 against 8.
// - RoPE: torchtitan's apply_rotary_emb (complex multiply): float() (2 + 4), complex mul by freqs_cis
//   (4 + 4), type_as (4 + 2) = 20 per element of Q and K against 4; backward the same 20 against 4.
// - activation: eager SwiGLU silu(x W1) * (x W3): silu (2 + 2), mul (2 + 2 + 2) = 10 per element of the
//   FFN width against 6; backward mul (6 + 6) and silu (6) = 18 against 12. An unfused bias + GeLU adds
//   the bias in its own op (2 + 2) forward; backward unchanged (GeLU's gradient, then the bias reduction).
// - cross-entropy: logits.float() (2 + 4), log_softmax (max and sum passes, then the output: 4 + 4 + 4),
//   NLL (a gather) = 18 per logit against 8; backward NLL (zero fill 4), log_softmax (4 + 4 + 4), the
//   cast back (4 + 2) = 22 against 8.
// - MoE permutation: the unfused permute (index_select by the sorted routing map) and unpermute
//   (zero-initialised scatter-add) each add one more read and write of the routed rows.
// - MoE router: the unfused score function, top-k, probabilities and aux-loss terms read and write the
//   FP32 tokens x experts logits in about six ops, against one fused kernel.
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

double norm_extra_bytes(const TraceWriter& w, bool backward) {
  if (w.s.framework.fuses_norm()) return 0.0;
  return backward ? 56.0 - 8.0 : 36.0 - 4.0;
}

double rope_extra_bytes(const TraceWriter& w, bool backward) {
  (void)backward;
  if (w.s.framework.fuses_rope()) return 0.0;
  return 20.0 - 4.0;
}

double activation_extra_bytes(const TraceWriter& w, bool backward) {
  if (w.s.framework.fuses_activation()) return 0.0;
  if (w.s.model.gated_mlp) return backward ? 18.0 - 12.0 : 10.0 - 6.0;
  return w.s.model.mlp_bias && !backward ? 4.0 : 0.0;
}

double cross_entropy_extra_bytes(const TraceWriter& w, bool backward) {
  if (w.s.framework.fuses_cross_entropy()) return 0.0;
  return backward ? 22.0 - 8.0 : 18.0 - 8.0;
}

double permute_pass_factor(const TraceWriter& w) { return w.s.framework.fusions.permute ? 1.0 : 2.0; }

double router_extra_bytes(const TraceWriter& w, double tokens) {
  if (w.s.framework.fusions.router) return 0.0;
  return 6.0 * 2.0 * tokens * w.s.model.moe.experts * 4.0;  // six ops, each reading and writing FP32 logits
}

int element_wise_ops(const TraceWriter& w, ElementWiseChain chain) {
  switch (chain) {
    case ElementWiseChain::norm: return w.s.framework.fuses_norm() ? 1 : 7;
    case ElementWiseChain::rope: return w.s.framework.fuses_rope() ? 1 : 6;  // three ops on each of Q and K
    case ElementWiseChain::activation: return w.s.framework.fuses_activation() ? 1 : 2;
    case ElementWiseChain::cross_entropy: return w.s.framework.fuses_cross_entropy() ? 1 : 3;
  }
  return 1;
}

}  // namespace fmsim::workload::detail
