// Fine-tuning kernels: LoRA adapter GEMMs beside the frozen base GEMMs (Megatron-Bridge peft.LoRA,
// ParallelLinearAdapter), and the attention work of packed variable-length sequences.
#include "fmsim/workload/workload_kind.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

bool TraceWriter::skips_gemm(const std::string& name) const {
  if (!frozen_base()) return false;
  const std::string suffix = ".wgrad";
  const bool wgrad = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
  return wgrad && name.rfind("lora.", 0) != 0;
}

namespace {

/// The window a layer's attention kernel honours (0: the whole causal span).
int kernel_window(const Scenario& s, int layer, bool whole_causal) { return whole_causal ? 0 : s.model.attention_window(layer); }

}  // namespace

double attention_row_span(const Scenario& s, int layer, bool whole_causal) {
  const int seq = s.training.seq;
  return attention_pairs_per_row(s.training.fine_tuning, seq, kernel_window(s, layer, whole_causal)) / seq;
}

double attention_kernel_keys(const Scenario& s, int layer, bool whole_causal) {
  const auto& f = s.training.fine_tuning;
  const int seq = s.training.seq;
  const double pairs = attention_pairs_per_row(f, seq, kernel_window(s, layer, whole_causal));
  return pairs / real_tokens_per_row(f, seq) / s.parallelism.cp;
}

namespace {

struct AdapterShape {
  double in = 0, out = 0;
};

/// The base module's input and output widths (whole, before tensor parallelism).
AdapterShape adapter_shape(const ModelSpec& m, const std::string& module) {
  const double h = m.hidden;
  if (module == "linear_qkv") return {h, static_cast<double>(m.q_dim()) + 2.0 * m.kv_dim()};
  if (module == "linear_proj") return {static_cast<double>(m.heads) * m.head_dim, h};
  if (module == "linear_fc1") return {h, (m.gated_mlp ? 2.0 : 1.0) * m.ffn};
  return {static_cast<double>(m.ffn), h};  // linear_fc2
}

std::string short_name(const std::string& module) { return module.substr(module.find('_') + 1); }

// The elementwise work around the adapter GEMMs, in tensor reads and writes per element (each element
// act_bytes): Megatron-Bridge's ParallelLinearAdapter.forward scales its output, `x * (alpha / dim)` (read,
// write), and LoRALinear.forward adds it to the base module's output, `linear_output + adapter_output` (two
// reads, a write); peft/utils.py and peft/lora_layers.py at v0.2.0-v0.6.0, as NeMo's adapters before
// them. Backward: the scale's gradient (read, write) over the output, and the adapter's input gradient
// added to the base module's (autograd's accumulation, or Transformer Engine's LayerNormLinear adding the
// returned norm output's gradient to its data gradient: two reads, a write) over the input.
constexpr double kAdapterScaleAddForwardTraffic = 5.0;
constexpr double kAdapterScaleBackwardTraffic = 2.0;
constexpr double kAdapterInputGradAccumulateTraffic = 3.0;

bool column_parallel(const std::string& module) { return module == "linear_qkv" || module == "linear_fc1"; }

/// Elements of the adapter output that the scale and the add to the base output run over on one rank:
/// a column-parallel module's 1/tp of the columns on every row; a row-parallel one's whole width, after the
/// adapter's all-reduce, on the rank's rows (scattered back to the sequence-parallel part under SP,
/// ParallelLinearAdapter.forward).
double adapter_output_elements(const TraceWriter& w, const std::string& module, const AdapterShape& a) {
  return column_parallel(module) ? w.tokens * a.out / w.s.parallelism.tp : w.tokens_sp * a.out;
}

}  // namespace

// Each TP rank holds 1/tp of A (r x in) and B (out x r) along the base module's split dimension, so its
// GEMMs are 1/tp of the adapter's; the rank-r intermediate (t x r) is summed (or gathered) over the TP
// group once each way (ParallelLinearAdapter's linear_in / linear_out). Adapters run in BF16.
int lora_forward(TraceWriter& w, int rank, const Communicators& c, const std::string& module, int after) {
  const auto& f = w.s.training.fine_tuning;
  if (f.workload != Workload::lora || !f.lora.targets(module)) return after;
  const AdapterShape a = adapter_shape(w.s.model, module);
  const double t = w.tokens, r = f.lora.rank, tp = w.s.parallelism.tp;
  const std::string name = "lora." + short_name(module);
  int node = after;
  if (f.lora.dropout > 0) node = w.memory(rank, name + ".dropout", 2.0 * t * a.in / tp * w.act_bytes, after_of(node));
  node = w.gemm(rank, name + ".a", t, r, a.in / tp, false, after_of(node));
  node = w.collective(rank, c.tp, "tp", Category::tp_comm, collectives::Op::all_reduce, t * r * w.act_bytes, name + ".ar", after_of(node));
  node = w.gemm(rank, name + ".b", t, a.out / tp, r, false, after_of(node));
  return w.memory(rank, name + ".scale_add", kAdapterScaleAddForwardTraffic * adapter_output_elements(w, module, a) * w.act_bytes, {node});
}

int lora_backward(TraceWriter& w, int rank, const Communicators& c, const std::string& module, int after) {
  const auto& f = w.s.training.fine_tuning;
  if (f.workload != Workload::lora || !f.lora.targets(module)) return after;
  const AdapterShape a = adapter_shape(w.s.model, module);
  const double t = w.tokens, r = f.lora.rank, tp = w.s.parallelism.tp;
  const std::string name = "lora." + short_name(module);
  int node = w.gemm(rank, name + ".b.dgrad", t, r, a.out / tp, false, after_of(after));
  node = w.gemm(rank, name + ".b.wgrad", a.out / tp, r, t, false, {node});
  node = w.collective(rank, c.tp, "tp", Category::tp_comm, collectives::Op::all_reduce, t * r * w.act_bytes, name + ".dgrad.ar", {node});
  node = w.gemm(rank, name + ".a.dgrad", t, a.in / tp, r, false, after_of(node));
  node = w.gemm(rank, name + ".a.wgrad", r, a.in / tp, t, false, {node});
  // The scale's gradient over the adapter's output, then the adapter's input gradient added to the base
  // module's: a column-parallel module's (QKV, FC1) on the rank's rows of the norm output (its local
  // sequence-parallel part), a row-parallel one's (proj, FC2) on every row of its 1/tp of the columns.
  const double input = column_parallel(module) ? w.tokens_sp * a.in : t * a.in / tp;
  const double bytes = (kAdapterScaleBackwardTraffic * adapter_output_elements(w, module, a) + kAdapterInputGradAccumulateTraffic * input) * w.act_bytes;
  return w.memory(rank, name + ".scale_grad_add", bytes, {node});
}

}  // namespace fmsim::workload::detail
