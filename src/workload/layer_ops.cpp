// The kernels and collectives of one transformer layer on one rank (Megatron-Core with Transformer
// Engine; MEGATRON-NOTES.md sections 4-6). Shapes are per rank: tensor parallelism splits the weight
// matrices, sequence parallelism the tokens between TP regions, context parallelism the sequence.
#include <algorithm>

#include "fmsim/compute/compute_model.hpp"
#include "moe_host_internal.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

std::vector<int> after_of(int node) { return node >= 0 ? std::vector<int>{node} : std::vector<int>{}; }

namespace {

using collectives::Op;

struct Shapes {
  double h, q, kv, o_in, ffn_cols, ffn, tp;
  bool gated;
};

Shapes shapes_of(const TraceWriter& w) {
  const auto& m = w.s.model;
  Shapes s{};
  s.tp = w.s.parallelism.tp;
  s.h = m.hidden;
  s.q = m.q_dim() / s.tp;
  s.kv = (m.mla ? m.heads * (m.mla_shape.qk_nope_head_dim + m.mla_shape.qk_rope_head_dim) + m.heads * m.mla_shape.v_head_dim
                : 2.0 * m.kv_dim()) / 2.0 / s.tp;
  s.o_in = (m.mla ? m.heads * m.mla_shape.v_head_dim : m.heads * m.head_dim) / s.tp;
  s.gated = m.gated_mlp;
  s.ffn = m.ffn / s.tp;
  s.ffn_cols = s.ffn * (m.gated_mlp ? 2 : 1);
  return s;
}

/// Host time of a MoE layer's attention half (moe_host.hpp), with the extra ops of an eager RoPE
/// (elementwise_fusion.cpp) where no CUDA graph covers the attention.
double moe_attention_host_s(const TraceWriter& w) {
  const auto& g = w.s.training.cuda_graphs;
  const double seconds = moe_layer_attention_host_s(g, w.s.cluster.instance.host_op_time_factor);
  return g.full_iteration || g.attn ? seconds : seconds + eager_rope_host_s(w);
}

/// Extra bytes of an unfused RoPE over `width` columns of Q and K (none with learned positions).
double rope_bytes_extra(const TraceWriter& w, double tokens, double width, bool backward) {
  if (w.s.model.learned_positions > 0) return 0.0;
  return rope_extra_bytes(w, backward) * tokens * width;
}

}  // namespace

/// Forward attention FLOPs of one rank for one micro-batch (causal; CP splits the work evenly).
double attention_forward_flops(const TraceWriter& w, int layer, bool whole_causal) {
  const auto& m = w.s.model;
  const double span = attention_row_span(w.s, layer, whole_causal);  // per sequence when packed (SFT, LoRA)
  const double width = m.mla ? (m.heads * (m.mla_shape.qk_nope_head_dim + m.mla_shape.qk_rope_head_dim) +
                                m.heads * m.mla_shape.v_head_dim) / 2.0
                             : m.q_dim();
  return 4.0 * w.tokens * span * width / w.s.parallelism.tp;
}

/// Keys one query attends to within one attention kernel: the causal (or windowed) span, split over the
/// CP steps (each step's kernel loops over one rank's share of the keys).
double attention_kernel_span(const TraceWriter& w, int layer, bool whole_causal) {
  return attention_kernel_keys(w.s, layer, whole_causal);
}

bool fp8_attention(const TraceWriter& w, int layer) { return w.s.training.fp8_dot_product_attention && w.fp8(layer); }

bool attention_window_unskipped(const TraceWriter& w, int layer, bool backward) {
  return backward && fp8_attention(w, layer) && w.s.model.attention_window(layer) > 0;
}

/// Tensor-parallel collective before a GEMM (all-gather) or after it (reduce-scatter / all-reduce),
/// optionally overlapped with the GEMM (tp_comm_overlap: TE userbuffers). Returns the node ending both.
/// `bulk`: TE's bulk overlap (the backward's second input all-gather and the dgrad reduce-scatter run
/// whole beside a GEMM, MEGATRON-NOTES.md section 4).
int gemm_with_tp(TraceWriter& w, int rank, const Communicators& c, int layer, const TpGemm& g, Op op, bool comm_first,
                 int after) {
  const auto& p = w.s.parallelism;
  const bool fp8 = w.fp8(layer);
  const double bytes = static_cast<double>(w.tokens) * w.s.model.hidden * w.act_bytes;
  if (w.skips_gemm(g.name)) return after;  // LoRA: a frozen weight's gradient GEMM (and its input gather) does not run
  if (p.tp == 1) return w.gemm(rank, g.name, g.m, g.n, g.k, fp8, after_of(after));
  const std::string comm_name = g.name + (op == Op::all_gather ? ".ag" : op == Op::reduce_scatter ? ".rs" : ".ar");
  if (!w.s.training.tp_comm_overlap) {
    if (comm_first) {
      int comm = w.collective(rank, c.tp, "tp", Category::tp_comm, op, bytes, comm_name, after_of(after));
      return w.gemm(rank, g.name, g.m, g.n, g.k, fp8, {comm});
    }
    int gemm = w.gemm(rank, g.name, g.m, g.n, g.k, fp8, after_of(after));
    return w.collective(rank, c.tp, "tp", Category::tp_comm, op, bytes, comm_name, {gemm});
  }
  // Overlapped: the GEMM runs with kOverlapCommSms SMs fewer while the collective proceeds beside it.
  // Ring-exchange overlaps (AG->GEMM always, GEMM->RS in FP8) run the GEMM as tp chunks of m/tp rows,
  // one per arriving or departing shard; the BF16 GEMM->RS pipeline runs 4 chunks and leaves one
  // reduce-scatter chunk exposed, ring-exchange GEMM->RS the last of its tp sends (section 4).
  int chunks = 1;
  double exposed = 0.0;
  if (!g.bulk) {
    chunks = comm_first || fp8 ? p.tp : 4;
    if (!comm_first) exposed = 1.0 / chunks;
  }
  int gemm = w.gemm(rank, g.name, g.m / chunks, g.n, g.k, fp8, after_of(after), chunks, compute::kOverlapCommSms, 1);
  int comm = w.collective(rank, c.tp, "tp", Category::tp_comm, op, bytes * (1 - exposed), comm_name, after_of(after));
  std::vector<int> both{gemm};
  if (comm != after) both.push_back(comm);
  if (exposed > 0) return w.collective(rank, c.tp, "tp", Category::tp_comm, op, bytes * exposed, comm_name + ".tail", both);
  return w.memory(rank, g.name + ".join", 0, both);
}

/// A fused attention kernel of `layer` (deps to be set): its executed FLOPs (not model FLOPs: the
/// backward's 2.5x), key span, precision, kernel and head dim.
TraceNode fused_attention_node(TraceWriter& w, int rank, int layer, const std::string& name, bool backward) {
  TraceNode node = w.compute(rank, name, backward ? Kernel::attention_bwd : Kernel::attention_fwd);
  const bool whole_causal = attention_window_unskipped(w, layer, backward);
  const double forward_flops = attention_forward_flops(w, layer, whole_causal);
  node.flops = backward ? compute::kAttentionBackwardFlopsRatio * forward_flops : forward_flops;
  node.attention_span = attention_kernel_span(w, layer, whole_causal);
  node.fp8 = fp8_attention(w, layer);
  node.attention_steps = w.s.parallelism.cp;
  node.attention_flash2 = w.s.framework.attention == AttentionKernel::flash2;
  node.attention_head_dim = w.s.model.attention_head_dim();
  return node;
}

/// Attention core with its context-parallel exchange. Returns the node ending both.
int attention_with_cp(TraceWriter& w, int rank, const Communicators& c, int layer, bool backward, int after) {
  const auto& p = w.s.parallelism;
  // The stack's unfused attention (attention_kernel.cpp; context parallelism is refused with it).
  if (w.s.framework.attention == AttentionKernel::unfused) return unfused_attention(w, rank, backward, backward ? "attn.bwd" : "attn", after);
  const Shapes s = shapes_of(w);
  TraceNode node = fused_attention_node(w, rank, layer, backward ? "attn.bwd" : "attn.fwd", backward);
  node.deps = after_of(after);
  if (p.cp == 1) return w.add(node);
  const double kv_message = 2.0 * w.tokens * s.kv * w.act_bytes;  // K and V of this rank's chunk
  if (p.cp_comm == CpCommType::p2p) {
    // Ring exchange overlapped with the attention steps: cp - 1 KV messages forward, 2 (cp - 1) backward
    // (KV and dKV), i.e. a ring all-gather of cp (or 2 cp) messages.
    int attn = w.add(node);
    int comm = w.collective(rank, c.cp, "cp", Category::cp_comm, Op::all_gather, (backward ? 2 : 1) * p.cp * kv_message,
                            backward ? "cp.kv_dkv" : "cp.kv", after_of(after));
    return w.memory(rank, "cp.join", 0, {attn, comm});
  }
  if (p.cp_comm == CpCommType::all_gather) {
    if (!backward) {
      int gather = w.collective(rank, c.cp, "cp", Category::cp_comm, Op::all_gather, p.cp * kv_message, "cp.kv_ag", after_of(after));
      node.deps = {gather};
      return w.add(node);
    }
    int attn = w.add(node);
    return w.collective(rank, c.cp, "cp", Category::cp_comm, Op::reduce_scatter, p.cp * kv_message, "cp.dkv_rs", {attn});
  }
  // a2a (Ulysses): heads <-> sequence before and after attention, not overlapped.
  const double qkv_bytes = w.tokens * (s.q + 2 * s.kv) * w.act_bytes;
  const double out_bytes = w.tokens * s.o_in * w.act_bytes;
  int before = w.collective(rank, c.cp, "cp", Category::cp_comm, Op::alltoall, backward ? out_bytes : qkv_bytes, "cp.a2a_in", after_of(after));
  node.deps = {before};
  int attn = w.add(node);
  return w.collective(rank, c.cp, "cp", Category::cp_comm, Op::alltoall, backward ? qkv_bytes : out_bytes, "cp.a2a_out", {attn});
}

int attention_recompute(TraceWriter& w, int rank, int layer, int after) {
  const auto& tr = w.s.training;
  if (tr.recompute != Recompute::selective || !tr.recompute_modules.core_attn) return after;
  if (w.s.framework.attention == AttentionKernel::unfused) return unfused_attention(w, rank, false, "attn.recompute", after);
  TraceNode attention = fused_attention_node(w, rank, layer, "attn.recompute", false);
  attention.deps = {after};
  return w.add(attention);
}

namespace {

/// MLA's KV up-projection GEMM: the KV latent to every local head's no-RoPE key and value.
int mla_kv_up(TraceWriter& w, int rank, int layer, const std::string& name, int after) {
  const auto& m = w.s.model;
  const auto& a = m.mla_shape;
  return w.gemm(rank, name, w.tokens, m.heads * (a.qk_nope_head_dim + a.v_head_dim) / shapes_of(w).tp, a.kv_lora_rank,
                w.fp8(layer), {after});
}

/// MLA's Q up-projection GEMM (models with a Q latent, q_lora_rank > 0).
int mla_q_up(TraceWriter& w, int rank, int layer, const std::string& name, int after) {
  return w.gemm(rank, name, w.tokens, shapes_of(w).q, w.s.model.mla_shape.q_lora_rank, w.fp8(layer), {after});
}

}  // namespace

namespace {

/// MLA's projections backward, in reverse of qkv_forward: each low-rank GEMM's data and weight gradient
/// (Q up and down, or the full-rank Q; KV up; KV down, whose data gradient is the layer input's and takes
/// the TP reduction). Before, the backward used a dense QKV of width Q + K + V from the hidden size,
/// 6.8x MLA's backward FLOPs for DeepSeek-V3 (7168 x 65536 against its 139 MFLOP per token forward).
int mla_backward(TraceWriter& w, int rank, const Communicators& c, int layer, Op reduce, int after) {
  const auto& m = w.s.model;
  const auto& a = m.mla_shape;
  const Shapes s = shapes_of(w);
  const double t = w.tokens;
  const bool fp8 = w.fp8(layer), sp = w.s.parallelism.sequence_parallel;
  const double kv_up_n = m.heads * (a.qk_nope_head_dim + a.v_head_dim) / s.tp;
  const double kv_down_n = a.kv_lora_rank + a.qk_rope_head_dim;
  int node = after;
  if (a.q_lora_rank > 0) {
    node = w.gemm(rank, "mla.q_up.dgrad", t, a.q_lora_rank, s.q, fp8, {node});
    node = w.gemm(rank, "mla.q_up.wgrad", s.q, a.q_lora_rank, t, fp8, {node});
    node = w.gemm(rank, "mla.q_down.dgrad", t, s.h, a.q_lora_rank, fp8, {node});
    node = w.gemm(rank, "mla.q_down.wgrad", a.q_lora_rank, s.h, t, fp8, {node});
  } else {
    node = w.gemm(rank, "mla.q.dgrad", t, s.h, s.q, fp8, {node});
    node = w.gemm(rank, "mla.q.wgrad", s.q, s.h, t, fp8, {node});
  }
  node = w.gemm(rank, "mla.kv_up.dgrad", t, a.kv_lora_rank, kv_up_n, fp8, {node});
  node = w.gemm(rank, "mla.kv_up.wgrad", kv_up_n, a.kv_lora_rank, t, fp8, {node});
  node = gemm_with_tp(w, rank, c, layer, {"mla.kv_down.dgrad", t, s.h, kv_down_n, true}, reduce, false, node);
  if (sp) return gemm_with_tp(w, rank, c, layer, {"mla.kv_down.wgrad", kv_down_n, s.h, t, true}, Op::all_gather, true, node);
  return w.gemm(rank, "mla.kv_down.wgrad", kv_down_n, s.h, t, fp8, {node});
}

}  // namespace

/// QKV (or MLA's down and up projections) forward GEMMs after the input all-gather.
int qkv_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const auto& m = w.s.model;
  const Shapes s = shapes_of(w);
  const double t = w.tokens;
  if (!m.mla) return gemm_with_tp(w, rank, c, layer, {"qkv", t, s.q + 2 * s.kv, s.h}, Op::all_gather, true, after);
  const auto& a = m.mla_shape;
  int node = gemm_with_tp(w, rank, c, layer, {"mla.kv_down", t, static_cast<double>(a.kv_lora_rank + a.qk_rope_head_dim), s.h}, Op::all_gather, true, after);
  node = mla_kv_up(w, rank, layer, "mla.kv_up", node);
  if (a.q_lora_rank > 0) {
    node = w.gemm(rank, "mla.q_down", t, a.q_lora_rank, s.h, w.fp8(layer), {node});
    return mla_q_up(w, rank, layer, "mla.q_up", node);
  }
  return w.gemm(rank, "mla.q", t, s.q, s.h, w.fp8(layer), {node});
}

namespace {

/// mla_up_proj recompute: MLA's Q and KV up-projections and RoPE run again before the attention backward.
int mla_up_recompute(TraceWriter& w, int rank, int layer, int after) {
  const Shapes s = shapes_of(w);
  int node = mla_kv_up(w, rank, layer, "mla.kv_up.recompute", after);
  if (w.s.model.mla_shape.q_lora_rank > 0) node = mla_q_up(w, rank, layer, "mla.q_up.recompute", node);
  return w.memory(rank, "rope.recompute", 2 * w.tokens * (s.q + s.kv) * w.act_bytes, {node});
}

}  // namespace

LayerPieces layer_forward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer) {
  if (w.s.model.hybrid.enabled()) return hybrid_forward_pieces(w, rank, c, layer);  // mamba_ops.cpp
  const bool moe = w.s.model.layer_is_moe(layer);
  const Shapes s = shapes_of(w);
  const double t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes;
  const Op reduce = w.s.parallelism.sequence_parallel ? Op::reduce_scatter : Op::all_reduce;
  LayerPieces pieces;
  pieces.push_back({PieceRole::attention, [&w, &c, rank, layer, moe, s, t, tsp, ab, reduce](int after) {
    // A MoE layer's attention is issued by the host like its MoE block (moe_host.hpp): after the
    // dispatcher's sync the host is not ahead of the GPU. Dense layers' host time stays hidden.
    // Dense layers pay their host time only where no CUDA graph covers them (host_launch.cpp).
    const int host = moe ? host_issue_node(w, rank, "host.attention", moe_attention_host_s(w))
                         : dense_host_node(w, rank, DenseHalf::attention, false);
    const int mlp_host = moe ? -1 : dense_host_node(w, rank, DenseHalf::mlp, false);
    const double norm_extra = norm_extra_bytes(w, false) * tsp * s.h;  // unfused norms (elementwise_fusion.cpp)
    int node = w.memory(rank, "norm1", 2 * tsp * s.h * ab + norm_extra, after_of(after));
    node = qkv_forward(w, rank, c, layer, node);
    node = lora_forward(w, rank, c, "linear_qkv", node);
    node = w.memory(rank, "rope", 2 * t * (s.q + s.kv) * ab + rope_bytes_extra(w, t, s.q + s.kv, false), {node});
    node = attention_with_cp(w, rank, c, layer, false, node);
    node = gemm_with_tp(w, rank, c, layer, {"proj", t, s.h, s.o_in}, reduce, false, node);
    node = lora_forward(w, rank, c, "linear_proj", node);
    node = w.memory(rank, "residual_norm2", 5 * tsp * s.h * ab + norm_extra, {node});
    if (moe) return moe_route(w, rank, layer, false, gate_on_host(w, node, host));
    node = gate_on_dense_host(w, node, host);
    node = gemm_with_tp(w, rank, c, layer, {"fc1", t, s.ffn_cols, s.h}, Op::all_gather, true, node);
    node = lora_forward(w, rank, c, "linear_fc1", node);
    node = w.memory(rank, "act", (s.gated ? 3 : 2) * t * s.ffn * ab + activation_extra_bytes(w, false) * t * s.ffn, {node});
    node = gemm_with_tp(w, rank, c, layer, {"fc2", t, s.h, s.ffn}, reduce, false, node);
    node = lora_forward(w, rank, c, "linear_fc2", node);
    return gate_on_dense_host(w, w.memory(rank, "residual", 3 * tsp * s.h * ab, {node}), mlp_host);
  }});
  if (!moe) return pieces;
  pieces.push_back({PieceRole::dispatch, [&w, &c, rank](int after) { return moe_a2a_to_experts(w, rank, c, false, after); }});
  pieces.push_back({PieceRole::experts, [&w, rank, layer](int after) { return moe_experts(w, rank, layer, false, false, after); }});
  pieces.push_back({PieceRole::combine, [&w, &c, rank](int after) { return moe_a2a_from_experts(w, rank, c, false, after); }});
  pieces.push_back({PieceRole::post, [&w, rank, layer, s, tsp, ab](int after) {
    const int node = moe_unpermute(w, rank, layer, false, after);
    return w.memory(rank, "residual", 3 * tsp * s.h * ab, {node});
  }});
  return pieces;
}

LayerPieces layer_backward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer) {
  if (w.s.model.hybrid.enabled()) return hybrid_backward_pieces(w, rank, c, layer);  // mamba_ops.cpp
  const auto& tr = w.s.training;
  const bool moe = w.s.model.layer_is_moe(layer);
  const bool delay_wgrad = moe && tr.delay_wgrad_compute;
  LayerPieces pieces;
  // Recompute, then the dense MLP backward (grad all-gather -> FC2 dgrad/wgrad -> act' -> FC1
  // dgrad/wgrad -> reduce) or the MoE unpermutation's gradient.
  const bool fp8 = w.fp8(layer);
  const Shapes s = shapes_of(w);
  const double t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes;
  const bool sp = w.s.parallelism.sequence_parallel;
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  pieces.push_back({PieceRole::pre, [&w, &c, rank, layer, moe, fp8, s, t, tsp, ab, sp, reduce](int after) {
    const auto& tr = w.s.training;
    const bool selective = tr.recompute == Recompute::selective;
    const RecomputeModules& again = tr.recompute_modules;
    int node = after;
    const int host = moe ? -1 : dense_host_node(w, rank, DenseHalf::mlp, true);
    if (tr.recompute == Recompute::full) node = emit_layer_forward(w, rank, c, layer, node);
    const bool op_sac = selective && w.s.framework.selective_recompute == SelectiveRecompute::torch_op_sac;
    if (op_sac && !moe) node = op_sac_recompute(w, rank, layer, DenseHalf::mlp, node);
    // Selective recompute: the norms run again (their outputs were dropped), and a recomputed dense MLP
    // runs its whole forward again before its backward (Megatron checkpoints the MLP module: FC1 with
    // the SP all-gather of its input, the activation, FC2 with its reduce-scatter or all-reduce).
    if (selective && again.layernorm) {
      node = w.memory(rank, "norms.recompute", 2 * (2 * tsp * s.h * ab + norm_extra_bytes(w, false) * tsp * s.h), after_of(node));
    }
    if (moe) {
      if (selective && again.moe) node = moe_forward_again(w, rank, c, layer, node);
      return moe_unpermute(w, rank, layer, true, node);
    }
    if (selective && again.mlp) {
      node = gemm_with_tp(w, rank, c, layer, {"fc1.recompute", t, s.ffn_cols, s.h}, Op::all_gather, true, node);
      node = w.memory(rank, "act.recompute", (s.gated ? 3 : 2) * t * s.ffn * ab + activation_extra_bytes(w, false) * t * s.ffn, {node});
      node = gemm_with_tp(w, rank, c, layer, {"fc2.recompute", t, s.h, s.ffn}, reduce, false, node);
    }
    node = lora_backward(w, rank, c, "linear_fc2", node);
    if (sp) node = gemm_with_tp(w, rank, c, layer, {"fc2.dgrad", t, s.ffn, s.h}, Op::all_gather, true, node);
    else node = w.gemm(rank, "fc2.dgrad", t, s.ffn, s.h, fp8, after_of(node));
    node = w.gemm(rank, "fc2.wgrad", s.h, s.ffn, t, fp8, {node});
    node = w.memory(rank, "act.bwd", 2 * (s.gated ? 3 : 2) * t * s.ffn * ab + activation_extra_bytes(w, true) * t * s.ffn, {node});
    node = lora_backward(w, rank, c, "linear_fc1", node);
    node = gemm_with_tp(w, rank, c, layer, {"fc1.dgrad", t, s.h, s.ffn_cols, true}, reduce, false, node);
    if (sp) node = gemm_with_tp(w, rank, c, layer, {"fc1.wgrad", s.ffn_cols, s.h, t, true}, Op::all_gather, true, node);  // LN output again
    else node = w.gemm(rank, "fc1.wgrad", s.ffn_cols, s.h, t, fp8, {node});
    return gate_on_dense_host(w, node, host);
  }});
  if (moe) {
    pieces.push_back({PieceRole::combine, [&w, &c, rank](int after) { return moe_a2a_to_experts(w, rank, c, true, after); }});
    pieces.push_back({PieceRole::experts, [&w, rank, layer, delay_wgrad](int after) { return moe_experts(w, rank, layer, true, delay_wgrad, after); }});
    pieces.push_back({PieceRole::dispatch, [&w, &c, rank](int after) { return moe_a2a_from_experts(w, rank, c, true, after); }});
    if (delay_wgrad) pieces.push_back({PieceRole::wgrad, [&w, rank, layer](int after) { return moe_expert_wgrad(w, rank, layer, after); }});
  }
  // Attention backward.
  pieces.push_back({PieceRole::attention, [&w, &c, rank, layer, moe, fp8, s, t, tsp, ab, sp, reduce](int after) {
    const auto& tr = w.s.training;
    int node = moe ? moe_route(w, rank, layer, true, after) : after;
    const int host = moe ? host_issue_node(w, rank, "host.attention.bwd", moe_attention_host_s(w))
                         : dense_host_node(w, rank, DenseHalf::attention, true);
    const double norm_extra = norm_extra_bytes(w, true) * tsp * s.h;  // unfused norms (elementwise_fusion.cpp)
    node = w.memory(rank, "norm2.bwd", 2 * 5 * tsp * s.h * ab + norm_extra, after_of(node));
    node = lora_backward(w, rank, c, "linear_proj", node);
    if (sp) node = gemm_with_tp(w, rank, c, layer, {"proj.dgrad", t, s.o_in, s.h}, Op::all_gather, true, node);
    else node = w.gemm(rank, "proj.dgrad", t, s.o_in, s.h, fp8, {node});
    node = w.gemm(rank, "proj.wgrad", s.h, s.o_in, t, fp8, {node});
    if (tr.recompute == Recompute::selective && w.s.framework.selective_recompute == SelectiveRecompute::torch_op_sac && !moe) {
      node = op_sac_recompute(w, rank, layer, DenseHalf::attention, node);
    }
    node = attention_recompute(w, rank, layer, node);
    if (tr.recompute == Recompute::selective && tr.recompute_modules.mla_up_proj) node = mla_up_recompute(w, rank, layer, node);
    node = attention_with_cp(w, rank, c, layer, true, node);
    node = w.memory(rank, "rope.bwd", 2 * t * (s.q + s.kv) * ab + rope_bytes_extra(w, t, s.q + s.kv, true), {node});
    node = lora_backward(w, rank, c, "linear_qkv", node);
    if (w.s.model.mla) {
      node = mla_backward(w, rank, c, layer, reduce, node);
    } else {
      node = gemm_with_tp(w, rank, c, layer, {"qkv.dgrad", t, s.h, s.q + 2 * s.kv, true}, reduce, false, node);
      if (sp) node = gemm_with_tp(w, rank, c, layer, {"qkv.wgrad", s.q + 2 * s.kv, s.h, t, true}, Op::all_gather, true, node);
      else node = w.gemm(rank, "qkv.wgrad", s.q + 2 * s.kv, s.h, t, fp8, {node});
    }
    node = w.memory(rank, "norm1.bwd", 2 * 2 * tsp * s.h * ab + norm_extra, {node});
    return moe ? gate_on_host(w, node, host) : gate_on_dense_host(w, node, host);
  }});
  return pieces;
}

}  // namespace fmsim::workload::detail
