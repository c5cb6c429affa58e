// The attention core as a stack runs it (framework.hpp AttentionKernel). The fused kernels are one node
// (layer_ops.cpp attention_with_cp; FlashAttention-2 is the same node priced on FA2's curve). The unfused
// path is Megatron-LM's CoreAttention before flash attention (megatron/model/transformer.py, 2021:
// baddbmm for Q K^T, FusedScaleMaskSoftmax, dropout, bmm with V): the s x s scores of every head are
// materialised in HBM. Its GEMMs run over the whole square (the causal mask is applied to the scores, not
// skipped), and its memory-bound kernels move the scores: the softmax reads them and writes the
// probabilities, the dropout reads those and writes its output and a one-byte mask. Backward: the two
// GEMMs' data and weight gradients (dP = dO V^T, dV = P^T dO, dQ = dS K, dK = dS^T Q), the dropout's
// backward (gradient and mask in, gradient out) and the softmax backward (probabilities and gradient in,
// gradient out). docs/model.md "Software stacks".
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

struct ScoreShape {
  double seq;    ///< queries and keys per sequence on this rank (CP is refused with unfused attention)
  double batch;  ///< score matrices: local heads x micro-batch
  double d_qk, d_v;
};

ScoreShape score_shape(const TraceWriter& w) {
  const auto& m = w.s.model;
  const auto& p = w.s.parallelism;
  ScoreShape s{};
  s.seq = w.s.training.seq;
  s.batch = static_cast<double>(m.heads) / p.tp * p.micro_batch;
  s.d_qk = static_cast<double>(m.q_dim()) / m.heads;
  s.d_v = m.mla ? m.mla_shape.v_head_dim : m.head_dim;
  return s;
}

}  // namespace

double unfused_score_bytes(const TraceWriter& w) {
  const ScoreShape s = score_shape(w);
  return s.batch * s.seq * s.seq * w.act_bytes;
}

int unfused_attention(TraceWriter& w, int rank, bool backward, const std::string& prefix, int after) {
  const ScoreShape s = score_shape(w);
  const double scores = unfused_score_bytes(w);     // one pass over the scores in BF16/FP16
  const double mask = scores / w.act_bytes;          // the dropout mask, one byte per score
  const bool dropout = w.s.framework.attention_dropout;
  const int repeat = static_cast<int>(s.batch);
  int node = after;
  if (!backward) {
    node = w.gemm(rank, prefix + ".qk", s.seq, s.seq, s.d_qk, false, after_of(node), repeat);
    node = w.memory(rank, prefix + ".softmax", 2 * scores, {node});
    if (dropout) node = w.memory(rank, prefix + ".dropout", 2 * scores + mask, {node});
    return w.gemm(rank, prefix + ".pv", s.seq, s.d_v, s.seq, false, {node}, repeat);
  }
  node = w.gemm(rank, prefix + ".dp", s.seq, s.seq, s.d_v, false, after_of(node), repeat);
  node = w.gemm(rank, prefix + ".dv", s.seq, s.d_v, s.seq, false, {node}, repeat);
  if (dropout) node = w.memory(rank, prefix + ".dropout_bwd", 2 * scores + mask, {node});
  node = w.memory(rank, prefix + ".softmax_bwd", 3 * scores, {node});
  node = w.gemm(rank, prefix + ".dq", s.seq, s.d_qk, s.seq, false, {node}, repeat);
  return w.gemm(rank, prefix + ".dk", s.seq, s.d_qk, s.seq, false, {node}, repeat);
}

}  // namespace fmsim::workload::detail
