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
// - RoPE in Megatron's own eager code (_apply_rotary_pos_emb_bshd, rope_utils.py), which runs where the
//   fused kernel cannot take YaRN's attention factor (GPT-OSS): _rotate_half's -x2 on half the elements
//   (1 + 1) and cat (2 + 2), t * cos (2 + 2), rotated * sin (2 + 2), the sum (4 + 2), the final cat with
//   the (empty) pass-through part (2 + 2) = 24 per element against 4. Backward: the two products'
//   gradients (4 + 4), the negation's (2), the chunk's cat of its halves' gradients (4), the sum of t's
//   two gradients (6) and the slice t[..., :rot_dim]'s zero-filled copy (6) = 26 against 4. Ops: per Q
//   and K, cos, sin, two scalings and two casts of the frequencies and the six above (24 a layer).
// - Clamped gated activation (GPT-OSS's swiglu_limit, Megatron activation_func_clamp_value): Megatron's
//   fused quick-GeGLU takes unclamped inputs, so weighted_bias_quick_geglu_impl (fused_bias_geglu.py)
//   first splits FC1's output, clamps each half (1 + 1 per element of the output, each) and concatenates
//   them again (2 + 2): 8 per element of FC1's output (BF16 activations). Backward: each clamp's gradient
//   reads the gradient and the input and writes the result over its half (3 per element of FC1's output
//   each, 6 for the two) and the split's concatenation of the two (2 + 2): 10. A recomputed activation runs the
//   forward again. Transformer Engine's op fuser runs the clamp inside its ScaledClampedQGeGLU
//   (moe/experts.py), so then none.
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

RopePath rope_path(const TraceWriter& w) {
  const auto& f = w.s.framework;
  if (f.torch_compile) return RopePath::fused;
  if (!f.fusions.rope) return RopePath::stack_eager;
  if (w.s.model.rope_attention_factor != 1.0 && !f.fusions.rope_attention_factor) return RopePath::megatron_eager;
  return RopePath::fused;
}

double rope_extra_bytes(const TraceWriter& w, bool backward) {
  switch (rope_path(w)) {
    case RopePath::fused: return 0.0;
    case RopePath::stack_eager: return 20.0 - 4.0;
    case RopePath::megatron_eager: return (backward ? 26.0 : 24.0) - 4.0;
  }
  return 0.0;
}

double activation_clamp_bytes(const TraceWriter& w, bool backward) {
  if (w.s.model.activation_clamp <= 0 || !w.s.model.gated_mlp || w.s.training.te_op_fuser || w.s.framework.torch_compile) return 0.0;
  return backward ? 10.0 : 8.0;
}

int activation_clamp_ops(const TraceWriter& w, bool backward) {
  if (activation_clamp_bytes(w, backward) <= 0) return 0;
  return backward ? 3 : 4;  // split, two clamps, cat; backward the clamps' gradients and the cat
}

double activation_extra_bytes(const TraceWriter& w, bool backward) {
  const double clamp = 2.0 * activation_clamp_bytes(w, backward);  // FC1's output is twice the FFN width
  if (w.s.framework.fuses_activation()) return clamp;
  if (w.s.model.gated_mlp) return clamp + (backward ? 18.0 - 12.0 : 10.0 - 6.0);
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
    case ElementWiseChain::rope:  // torchtitan: three ops on each of Q and K; Megatron's eager RoPE above
      switch (rope_path(w)) {
        case RopePath::fused: return 1;
        case RopePath::stack_eager: return 6;
        case RopePath::megatron_eager: return 24;
      }
      return 1;
    case ElementWiseChain::activation: return w.s.framework.fuses_activation() ? 1 : 2;
    case ElementWiseChain::cross_entropy: return w.s.framework.fuses_cross_entropy() ? 1 : 3;
  }
  return 1;
}

}  // namespace fmsim::workload::detail
