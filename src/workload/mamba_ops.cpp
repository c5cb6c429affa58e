// The kernels and collectives of one hybrid-model layer on one rank (Megatron-Core HybridModel with
// Transformer Engine and mamba_ssm): a Mamba-2 mixer (M), self-attention (*), a dense MLP (-) or a MoE
// block (E), each a whole pre-norm residual block. Mamba-2 (MambaMixer, megatron/core/ssm/mamba_mixer.py):
// in_proj (column-parallel: z, x, B, C, dt of this TP rank's heads and groups), causal depthwise conv1d
// (Tri Dao's causal-conv1d), the SSD chunked scan (mamba_ssm ops/triton/ssd_combined.py: chunk_cumsum,
// chunk_state, state_passing, bmm_chunk, chunk_scan), the gated RMSNorm, out_proj (row-parallel). Context
// parallelism (MambaContextParallel) trades the sequence split for a head split with an all-to-all before
// the conv1d and one after the scan. Each SSD kernel takes the longer of the HBM bytes it moves (the five
// unfused kernels are "mostly bottlenecked by memory bandwidth and latency", PyTorch blog, "Accelerating
// Mamba2 with kernel fusion", 2025, writing and re-reading their fp32 intermediates) and its matrix
// products at the Triton kernels' own rate, which does not grow with the GPU generation (ssd_kernels.hpp).
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/ssd_scan.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

using collectives::Op;

/// The SSD scan's kernels (ssd_scan.hpp), forward or backward, one node each: the longer of its HBM
/// bytes and its matrix products at the Triton kernels' rate (compute/ssd_kernels.hpp).
int ssd_pass(TraceWriter& w, int rank, bool backward, int after) {
  const MambaShape& shape = w.s.model.hybrid.mamba;
  const double tp = w.s.parallelism.tp, t = w.tokens;
  const compute::ComputeModel gpu(w.s.cluster.gpu);
  int node = after;
  for (const SsdKernel& k : backward ? ssd_backward_kernels(shape, tp) : ssd_forward_kernels(shape, tp)) {
    TraceNode n = w.compute(rank, k.name, Kernel::memory);
    n.bytes = t * k.bytes_per_token;
    n.flops = t * k.flops_per_token;
    n.duration_s = ssd_kernel_s(gpu, k, t, backward);
    n.deps = after_of(node);
    node = w.add(std::move(n));
  }
  return node;
}

/// MambaContextParallel's all-to-all (sequence split <-> head split) of `width` elements per token.
int mamba_cp_a2a(TraceWriter& w, int rank, const Communicators& c, double width, const std::string& name, int after) {
  if (w.s.parallelism.cp == 1) return after;
  return w.collective(rank, c.cp, "cp", Category::cp_comm, Op::alltoall, w.tokens * width * w.act_bytes, name, after_of(after));
}

struct Widths {
  double h, in_proj, conv, inner;
};

Widths widths_of(const TraceWriter& w) {
  const MambaShape& s = w.s.model.hybrid.mamba;
  const double tp = w.s.parallelism.tp;
  return {static_cast<double>(w.s.model.hidden), s.in_proj_width() / tp, s.conv_dim() / tp, s.inner() / tp};
}

int mamba_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const Widths d = widths_of(w);
  const double t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes;
  const Op reduce = w.s.parallelism.sequence_parallel ? Op::reduce_scatter : Op::all_reduce;
  int node = w.memory(rank, "norm", 2 * tsp * d.h * ab, after_of(after));
  node = gemm_with_tp(w, rank, c, layer, {"mamba.in_proj", t, d.in_proj, d.h}, Op::all_gather, true, node);
  node = mamba_cp_a2a(w, rank, c, d.in_proj, "mamba.cp.a2a_in", node);
  node = w.memory(rank, "mamba.conv1d", 2 * t * d.conv * ab, {node});  // causal_conv1d_fn with SiLU: read, write
  node = ssd_pass(w, rank, false, node);
  node = mamba_cp_a2a(w, rank, c, d.inner, "mamba.cp.a2a_out", node);
  node = w.memory(rank, "mamba.gated_norm", 3 * t * d.inner * ab, {node});  // y and z in, normalized y out
  node = gemm_with_tp(w, rank, c, layer, {"mamba.out_proj", t, d.h, d.inner}, reduce, false, node);
  return w.memory(rank, "residual", 3 * tsp * d.h * ab, {node});
}

int mamba_backward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const Widths d = widths_of(w);
  const double t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes;
  const bool sp = w.s.parallelism.sequence_parallel, fp8 = w.fp8(layer);
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  int node = after;
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"mamba.out_proj.dgrad", t, d.inner, d.h}, Op::all_gather, true, node);
  else node = w.gemm(rank, "mamba.out_proj.dgrad", t, d.inner, d.h, fp8, after_of(node));
  node = w.gemm(rank, "mamba.out_proj.wgrad", d.h, d.inner, t, fp8, {node});
  // mamba_ssm's MambaSplitConv1dScanCombinedFn (Megatron's use_mem_eff_path) keeps only the in_proj
  // output and the scan output: its backward runs the conv1d forward again first.
  node = w.memory(rank, "mamba.conv1d.recompute", 2 * t * d.conv * ab, {node});
  node = w.memory(rank, "mamba.gated_norm.bwd", 5 * t * d.inner * ab, {node});
  node = mamba_cp_a2a(w, rank, c, d.inner, "mamba.cp.a2a_out.bwd", node);
  node = ssd_pass(w, rank, true, node);
  node = w.memory(rank, "mamba.conv1d.bwd", 3 * t * d.conv * ab, {node});  // x and dout in, dx out
  node = mamba_cp_a2a(w, rank, c, d.in_proj, "mamba.cp.a2a_in.bwd", node);
  node = gemm_with_tp(w, rank, c, layer, {"mamba.in_proj.dgrad", t, d.h, d.in_proj, true}, reduce, false, node);
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"mamba.in_proj.wgrad", d.in_proj, d.h, t, true}, Op::all_gather, true, node);
  else node = w.gemm(rank, "mamba.in_proj.wgrad", d.in_proj, d.h, t, fp8, {node});
  return w.memory(rank, "norm.bwd", 2 * 2 * tsp * d.h * ab, {node});
}

/// Self-attention block of a hybrid model (Nemotron-H attention has no position embedding: no RoPE).
int attention_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const auto& m = w.s.model;
  const double t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes, h = m.hidden, o_in = m.q_dim() / w.s.parallelism.tp;
  const Op reduce = w.s.parallelism.sequence_parallel ? Op::reduce_scatter : Op::all_reduce;
  int node = w.memory(rank, "norm", 2 * tsp * h * ab, after_of(after));
  node = qkv_forward(w, rank, c, layer, node);
  node = attention_with_cp(w, rank, c, layer, false, node);
  node = gemm_with_tp(w, rank, c, layer, {"proj", t, h, o_in}, reduce, false, node);
  return w.memory(rank, "residual", 3 * tsp * h * ab, {node});
}

int attention_backward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const auto& m = w.s.model;
  const double tp = w.s.parallelism.tp, t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes, h = m.hidden;
  const double q = m.q_dim() / tp, qkv = (m.q_dim() + 2.0 * m.kv_dim()) / tp;
  const bool sp = w.s.parallelism.sequence_parallel, fp8 = w.fp8(layer);
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  int node = after;
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"proj.dgrad", t, q, h}, Op::all_gather, true, node);
  else node = w.gemm(rank, "proj.dgrad", t, q, h, fp8, after_of(node));
  node = w.gemm(rank, "proj.wgrad", h, q, t, fp8, {node});
  node = attention_recompute(w, rank, layer, node);
  node = attention_with_cp(w, rank, c, layer, true, node);
  node = gemm_with_tp(w, rank, c, layer, {"qkv.dgrad", t, h, qkv, true}, reduce, false, node);
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"qkv.wgrad", qkv, h, t, true}, Op::all_gather, true, node);
  else node = w.gemm(rank, "qkv.wgrad", qkv, h, t, fp8, {node});
  return w.memory(rank, "norm.bwd", 2 * 2 * tsp * h * ab, {node});
}

int mlp_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after, const std::string& suffix = "") {
  const auto& m = w.s.model;
  const double tp = w.s.parallelism.tp, t = w.tokens, ab = w.act_bytes, h = m.hidden, ffn = m.ffn / tp;
  const double cols = ffn * (m.gated_mlp ? 2 : 1);
  const Op reduce = w.s.parallelism.sequence_parallel ? Op::reduce_scatter : Op::all_reduce;
  int node = gemm_with_tp(w, rank, c, layer, {"fc1" + suffix, t, cols, h}, Op::all_gather, true, after);
  node = w.memory(rank, "act" + suffix, (m.gated_mlp ? 3 : 2) * t * ffn * ab, {node});
  return gemm_with_tp(w, rank, c, layer, {"fc2" + suffix, t, h, ffn}, reduce, false, node);
}

int mlp_backward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  const auto& m = w.s.model;
  const auto& tr = w.s.training;
  const double tp = w.s.parallelism.tp, t = w.tokens, tsp = w.tokens_sp, ab = w.act_bytes, h = m.hidden, ffn = m.ffn / tp;
  const double cols = ffn * (m.gated_mlp ? 2 : 1);
  const bool sp = w.s.parallelism.sequence_parallel, fp8 = w.fp8(layer);
  const Op reduce = sp ? Op::reduce_scatter : Op::all_reduce;
  int node = after;
  if (tr.recompute == Recompute::selective && tr.recompute_modules.mlp) node = mlp_forward(w, rank, c, layer, node, ".recompute");
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"fc2.dgrad", t, ffn, h}, Op::all_gather, true, node);
  else node = w.gemm(rank, "fc2.dgrad", t, ffn, h, fp8, after_of(node));
  node = w.gemm(rank, "fc2.wgrad", h, ffn, t, fp8, {node});
  node = w.memory(rank, "act.bwd", 2 * (m.gated_mlp ? 3 : 2) * t * ffn * ab, {node});
  node = gemm_with_tp(w, rank, c, layer, {"fc1.dgrad", t, h, cols, true}, reduce, false, node);
  if (sp) node = gemm_with_tp(w, rank, c, layer, {"fc1.wgrad", cols, h, t, true}, Op::all_gather, true, node);
  else node = w.gemm(rank, "fc1.wgrad", cols, h, t, fp8, {node});
  return w.memory(rank, "norm.bwd", 2 * 2 * tsp * h * ab, {node});
}

/// LatentMoE's projection from the hidden width to the latent width before the dispatch (down) or back
/// after the combine (up); backward: its data and weight gradients.
int latent_projection(TraceWriter& w, int rank, int layer, bool down, bool backward, int after) {
  const double latent = w.s.model.hybrid.moe_latent, h = w.s.model.hidden, t = w.tokens_sp;
  if (latent <= 0) return after;
  const bool fp8 = w.fp8(layer);
  const double out = down ? latent : h, in = down ? h : latent;
  const std::string name = down ? "moe.latent_down" : "moe.latent_up";
  if (!backward) return w.gemm(rank, name, t, out, in, fp8, after_of(after));
  const int node = w.gemm(rank, name + ".dgrad", t, in, out, fp8, after_of(after));
  return w.gemm(rank, name + ".wgrad", out, in, t, fp8, {node});
}

bool selective_norm(const TraceWriter& w) {
  return w.s.training.recompute == Recompute::selective && w.s.training.recompute_modules.layernorm;
}

}  // namespace

LayerPieces hybrid_forward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer) {
  const HybridLayer kind = w.s.model.hybrid.kind(layer);
  LayerPieces pieces;
  if (kind == HybridLayer::mamba) {
    pieces.push_back({PieceRole::attention, [&w, &c, rank, layer](int after) { return mamba_forward(w, rank, c, layer, after); }});
  } else if (kind == HybridLayer::attention) {
    pieces.push_back({PieceRole::attention, [&w, &c, rank, layer](int after) { return attention_forward(w, rank, c, layer, after); }});
  } else if (kind == HybridLayer::mlp) {
    pieces.push_back({PieceRole::attention, [&w, &c, rank, layer](int after) {
      const double bytes = static_cast<double>(w.tokens_sp) * w.s.model.hidden * w.act_bytes;
      const int node = mlp_forward(w, rank, c, layer, w.memory(rank, "norm", 2 * bytes, after_of(after)));
      return w.memory(rank, "residual", 3 * bytes, {node});
    }});
  } else {
    pieces.push_back({PieceRole::attention, [&w, rank, layer](int after) {
      int node = w.memory(rank, "norm", 2.0 * w.tokens_sp * w.s.model.hidden * w.act_bytes, after_of(after));
      node = latent_projection(w, rank, layer, true, false, node);
      return moe_route(w, rank, layer, false, node);
    }});
    pieces.push_back({PieceRole::dispatch, [&w, &c, rank](int after) { return moe_a2a_to_experts(w, rank, c, false, after); }});
    pieces.push_back({PieceRole::experts, [&w, rank, layer](int after) { return moe_experts(w, rank, layer, false, false, after); }});
    pieces.push_back({PieceRole::combine, [&w, &c, rank](int after) { return moe_a2a_from_experts(w, rank, c, false, after); }});
    pieces.push_back({PieceRole::post, [&w, rank, layer](int after) {
      int node = moe_unpermute(w, rank, layer, false, after);
      node = latent_projection(w, rank, layer, false, false, node);
      return w.memory(rank, "residual", 3.0 * w.tokens_sp * w.s.model.hidden * w.act_bytes, {node});
    }});
  }
  return pieces;
}

LayerPieces hybrid_backward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer) {
  const HybridLayer kind = w.s.model.hybrid.kind(layer);
  const bool delay_wgrad = kind == HybridLayer::moe && w.s.training.delay_wgrad_compute;
  // Full recompute runs the layer's forward again first; selective layernorm recompute, its norm.
  auto prologue = [&w, &c, rank, layer](int after) {
    int node = after;
    if (w.s.training.recompute == Recompute::full) node = emit_layer_forward(w, rank, c, layer, node);
    if (selective_norm(w)) node = w.memory(rank, "norm.recompute", 2.0 * w.tokens_sp * w.s.model.hidden * w.act_bytes, after_of(node));
    return node;
  };
  LayerPieces pieces;
  if (kind == HybridLayer::mamba) {
    pieces.push_back({PieceRole::attention, [&w, &c, rank, layer, prologue](int after) { return mamba_backward(w, rank, c, layer, prologue(after)); }});
  } else if (kind == HybridLayer::attention) {
    pieces.push_back({PieceRole::attention, [&w, &c, rank, layer, prologue](int after) { return attention_backward(w, rank, c, layer, prologue(after)); }});
  } else if (kind == HybridLayer::mlp) {
    pieces.push_back({PieceRole::pre, [&w, &c, rank, layer, prologue](int after) { return mlp_backward(w, rank, c, layer, prologue(after)); }});
  } else {
    pieces.push_back({PieceRole::pre, [&w, &c, rank, layer, prologue](int after) {
      int node = prologue(after);
      if (w.s.training.recompute == Recompute::selective && w.s.training.recompute_modules.moe) {
        node = latent_projection(w, rank, layer, true, false, node);  // the MoE block's forward again
        node = moe_forward_again(w, rank, c, layer, node);
        node = latent_projection(w, rank, layer, false, false, node);
      }
      node = latent_projection(w, rank, layer, false, true, node);
      return moe_unpermute(w, rank, layer, true, node);
    }});
    pieces.push_back({PieceRole::combine, [&w, &c, rank](int after) { return moe_a2a_to_experts(w, rank, c, true, after); }});
    pieces.push_back({PieceRole::experts, [&w, rank, layer, delay_wgrad](int after) { return moe_experts(w, rank, layer, true, delay_wgrad, after); }});
    pieces.push_back({PieceRole::dispatch, [&w, &c, rank](int after) { return moe_a2a_from_experts(w, rank, c, true, after); }});
    if (delay_wgrad) pieces.push_back({PieceRole::wgrad, [&w, rank, layer](int after) { return moe_expert_wgrad(w, rank, layer, after); }});
    pieces.push_back({PieceRole::attention, [&w, rank, layer](int after) {
      int node = moe_route(w, rank, layer, true, after);
      node = latent_projection(w, rank, layer, true, true, node);
      return w.memory(rank, "norm.bwd", 2.0 * 2 * w.tokens_sp * w.s.model.hidden * w.act_bytes, {node});
    }});
  }
  return pieces;
}

}  // namespace fmsim::workload::detail

namespace fmsim::workload {

double hybrid_activation_bytes(const Scenario& s, int layer) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  const double tokens = static_cast<double>(p.micro_batch) * t.seq / p.cp, tp = p.tp, h = m.hidden;
  const double sp_share = p.sequence_parallel ? 1.0 / tp : 1.0;
  const double linear_in = t.layer_in_fp8(layer, m.layers) ? 1.0 : 2.0;
  const bool selective = t.recompute == Recompute::selective;
  const RecomputeModules& again = t.recompute_modules;
  const double norm_out = selective && again.layernorm ? 0.0 : linear_in;
  // Every block keeps its input (for the norm's backward) and the norm's output (the first GEMM's input).
  double bytes = tokens * h * sp_share * (2 + norm_out);
  switch (m.hybrid.kind(layer)) {
    case HybridLayer::mamba: {
      // MambaSplitConv1dScanCombinedFn (mamba_ssm, Megatron's use_mem_eff_path) saves the in_proj output
      // (z, x, B, C, dt) and the scan output y (the conv1d output and the scan's fp32 intermediates are
      // recomputed in backward); out_proj keeps its input, the normalized y.
      const MambaShape& ms = m.hybrid.mamba;
      bytes += tokens * (2.0 * ms.in_proj_width() + 2.0 * ms.inner() + linear_in * ms.inner()) / tp;
      break;
    }
    case HybridLayer::attention:  // Q, K, V for the attention backward, the attention output (proj input)
      bytes += tokens * (2.0 * (m.q_dim() + 2.0 * m.kv_dim()) + linear_in * m.q_dim()) / tp;
      break;
    case HybridLayer::mlp:
      if (!(selective && again.mlp)) bytes += tokens * m.ffn / tp * ((m.gated_mlp ? 2 : 1) * 2.0 + linear_in);
      break;
    case HybridLayer::moe: {
      if (selective && again.moe) break;  // recompute "moe": only the block's input and norm output are kept
      const double width = m.hybrid.moe_latent > 0 ? m.hybrid.moe_latent : h;
      const double rows = tokens * sp_share * m.moe.experts_per_token * p.etp;
      const double ffn = m.moe.expert_ffn / static_cast<double>(p.etp);
      const double act_out = selective && again.moe_act ? 0.0 : linear_in;
      bytes += rows * width * 2.0 + rows * ffn * (m.gated_mlp ? 2 : 1) * 2.0 + rows * ffn * act_out;
      bytes += tokens * sp_share * m.moe.shared_ffn * ((m.gated_mlp ? 2 : 1) * 2.0 + linear_in);
      if (m.hybrid.moe_latent > 0) bytes += 2.0 * tokens * sp_share * 2.0 * width;  // latent down output, latent up input
      break;
    }
  }
  return bytes;
}

}  // namespace fmsim::workload
