// Multi-token prediction (DeepSeek-V3; MLM megatron/core/transformer/multi_token_prediction.py): each
// depth embeds the tokens shifted by one more position (the shared embedding), normalises them and the
// previous depth's hidden states (enorm, hnorm), projects their concatenation 2h -> h (eh_proj, a
// column-parallel linear whose output is gathered over TP), runs one transformer layer built like the
// last decoder layer (a hybrid model: the layers of its MTP pattern, mtp_hybrid_override_pattern, e.g.
// "*E" = attention then MoE, numbered after the decoder's), a final norm, the shared output head and
// its own cross-entropy loss.
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {
namespace {

using collectives::Op;

int last_layer(const TraceWriter& w) { return w.s.model.layers - 1; }

/// The layers one depth runs: a hybrid model's MTP pattern (indices after the decoder's), else a copy of
/// the last decoder layer.
std::vector<int> depth_layers(const TraceWriter& w) {
  const auto& hybrid = w.s.model.hybrid;
  if (!hybrid.enabled() || hybrid.mtp_layers.empty()) return {last_layer(w)};
  std::vector<int> layers;
  for (std::size_t i = 0; i < hybrid.mtp_layers.size(); ++i) layers.push_back(w.s.model.layers + static_cast<int>(i));
  return layers;
}

double vocab_local(const TraceWriter& w) { return w.vocab_padded / static_cast<double>(w.s.parallelism.tp); }

}  // namespace

int mtp_forward(TraceWriter& w, int rank, const Communicators& c, int depths, int after) {
  const double t = w.tokens, tsp = w.tokens_sp, h = w.s.model.hidden, ab = w.act_bytes, tp = w.s.parallelism.tp;
  const bool fp8 = w.fp8(w.s.model.layers);  // eh_proj: as the last decoder layer, or BF16 (keep_mtp_spec_in_bf16)
  int node = after;
  for (int d = 0; d < depths; ++d) {
    const std::string name = "mtp" + std::to_string(d);
    node = w.memory(rank, name + ".embedding", 2.0 * tsp * h * ab, after_of(node));
    node = w.memory(rank, name + ".norms", 2.0 * 2.0 * tsp * h * ab, {node});  // enorm and hnorm
    node = w.collective(rank, c.tp, "tp", Category::tp_comm, Op::all_gather, 2.0 * t * h * ab, name + ".eh_proj.ag", {node});
    node = w.gemm(rank, name + ".eh_proj", t, h / tp, 2.0 * h, fp8, after_of(node));
    node = w.collective(rank, c.tp, "tp", Category::tp_comm, Op::all_gather, t * h * ab, name + ".eh_proj.gather", {node});
    for (int layer : depth_layers(w)) node = emit_layer_forward(w, rank, c, layer, node);
    node = w.memory(rank, name + ".final_norm", 2.0 * tsp * h * ab, {node});
    node = w.gemm(rank, name + ".logits", t, vocab_local(w), h, false, {node});
    node = w.memory(rank, name + ".loss", 2.0 * t * vocab_local(w) * 4.0, {node});  // FP32 softmax cross-entropy
  }
  return node;
}

int mtp_backward(TraceWriter& w, int rank, const Communicators& c, int depths, int after) {
  const double t = w.tokens, tsp = w.tokens_sp, h = w.s.model.hidden, ab = w.act_bytes, tp = w.s.parallelism.tp;
  const bool fp8 = w.fp8(w.s.model.layers);  // eh_proj: as the last decoder layer, or BF16 (keep_mtp_spec_in_bf16)
  int node = after;
  for (int d = depths - 1; d >= 0; --d) {
    const std::string name = "mtp" + std::to_string(d);
    node = w.memory(rank, name + ".loss.bwd", 2.0 * t * vocab_local(w) * 4.0, after_of(node));
    node = w.gemm(rank, name + ".logits.dgrad", t, h, vocab_local(w), false, {node});
    node = w.gemm(rank, name + ".logits.wgrad", h, vocab_local(w), t, false, {node});
    node = w.memory(rank, name + ".final_norm.bwd", 2.0 * 2.0 * tsp * h * ab, after_of(node));
    const std::vector<int> layers = depth_layers(w);
    for (auto it = layers.rbegin(); it != layers.rend(); ++it) node = emit_layer_backward(w, rank, c, *it, node);
    node = w.gemm(rank, name + ".eh_proj.dgrad", t, 2.0 * h, h / tp, fp8, after_of(node));
    node = w.gemm(rank, name + ".eh_proj.wgrad", h / tp, 2.0 * h, t, fp8, after_of(node));
    node = w.collective(rank, c.tp, "tp", Category::tp_comm, tp > 1 && w.s.parallelism.sequence_parallel ? Op::reduce_scatter : Op::all_reduce,
                        2.0 * t * h * ab, name + ".eh_proj.dgrad.rs", after_of(node));
    node = w.memory(rank, name + ".norms.bwd", 2.0 * 2.0 * 2.0 * tsp * h * ab, after_of(node));
  }
  return node;
}

}  // namespace fmsim::workload::detail
