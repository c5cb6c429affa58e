// PyTorch's op-level selective activation checkpointing as torchtitan applies it to each transformer block
// (torchtitan parallelize_llama.py `_apply_ac_to_transformer_block`, selective_ac_option "op", 2025-03):
// the policy saves the outputs of the ops in its save list (aten.mm, the SDPA kernels, reduce-scatter,
// max) but only every other aten.mm of a block (the op counter is per block: mm 1, 3, 5, 7 saved); every
// other op of the block runs again in the backward, before the gradients that need it. In a Llama block
// the matmuls run wq, wk, wv, wo, w1, w3, w2, so wk, wo and w3 are recomputed with the norms, the rotary
// embedding, the SwiGLU and the residual adds; attention is saved. docs/model.md "Software stacks".
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

int op_sac_recompute(TraceWriter& w, int rank, int layer, DenseHalf half, int after) {
  const auto& m = w.s.model;
  const double tp = w.s.parallelism.tp;
  const double t = w.tokens, tsp = w.tokens_sp, h = m.hidden, ab = w.act_bytes;
  const bool fp8 = w.fp8(layer);
  const double norm = 2 * tsp * h * ab + norm_extra_bytes(w, false) * tsp * h;
  int node = after;
  if (half == DenseHalf::mlp) {
    node = w.memory(rank, "sac.residual_norm2", norm + 3 * tsp * h * ab, after_of(node));
    // w3: the second half of the gated FC1 (the whole FC1 of an ungated MLP is mm 5, saved).
    if (m.gated_mlp) node = w.gemm(rank, "sac.fc1_gate", t, m.ffn / tp, h, fp8, {node});
    const double ffn = m.ffn / tp;
    return w.memory(rank, "sac.act", (m.gated_mlp ? 3 : 2) * t * ffn * ab + activation_extra_bytes(w, false) * t * ffn, {node});
  }
  const double q = m.q_dim() / tp, k = m.kv_dim() / tp;
  node = w.memory(rank, "sac.norm1", norm, after_of(node));
  node = w.gemm(rank, "sac.wk", t, k, h, fp8, {node});
  if (m.learned_positions == 0) {
    node = w.memory(rank, "sac.rope", 2 * t * (q + k) * ab + rope_extra_bytes(w, false) * t * (q + k), {node});
  }
  return w.gemm(rank, "sac.wo", t, h, q, fp8, {node});
}

}  // namespace fmsim::workload::detail
