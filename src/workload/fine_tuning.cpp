// Fine-tuning workloads (workload_kind.hpp): reading, checks against the model, packed-row attention
// work and LoRA adapter sizes.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <vector>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/hybrid_pattern.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/workload_kind.hpp"

namespace fmsim::workload {
namespace {

const std::vector<std::string> kLoraModules = {"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};

std::string list_of(const std::vector<std::string>& items) {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : ", ") + item;
  return text;
}

Packing read_packing(config::ObjectReader& p, int seq) {
  Packing k;
  k.enabled = true;
  k.mean_sequence_length = p.required_number("mean_sequence_length", 0.0);
  if (k.mean_sequence_length > seq) {
    p.fail("mean_sequence_length", "at most the packed row length seq_length = " + std::to_string(seq) +
                                       " (a longer sequence does not fit a row)");
  }
  k.sequence_length_std = p.number_or("sequence_length_std", 0.0, -1.0);
  if (k.sequence_length_std < 0) p.fail("sequence_length_std", "a standard deviation >= 0 (tokens)");
  if (p.has("packing_efficiency") && p.has("sequences_per_row")) {
    p.fail("sequences_per_row", "either packing_efficiency or sequences_per_row, not both");
  }
  if (p.has("sequences_per_row")) {
    const double n = p.required_number("sequences_per_row", 0.0);
    k.packing_efficiency = n * k.mean_sequence_length / seq;
    if (k.packing_efficiency > 1.0) {
      p.fail("sequences_per_row", "at most seq_length / mean_sequence_length = " +
                                      std::to_string(seq / k.mean_sequence_length) + " sequences (they must fit the row)");
    }
  } else if (p.has("packing_efficiency")) {
    const auto& value = p.required_value("packing_efficiency");
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= 0.0 || value.get<double>() > 1.0) {
      p.fail("packing_efficiency", "a fraction in (0, 1]: the real tokens of a packed row over seq_length");
    }
    k.packing_efficiency = value.get<double>();
  }
  k.flops_per_row = p.choice_or("flops_attention", {"per_sequence", "per_row"}, "per_sequence") == "per_row";
  p.reject_unknown_keys();
  return k;
}

Lora read_lora(config::ObjectReader& l) {
  Lora lora;
  lora.rank = static_cast<int>(l.int_or("rank", 32, 1, 1 << 20));
  lora.alpha = l.number_or("alpha", 32.0, 0.0);
  lora.dropout = l.number_or("dropout", 0.0, -1.0);
  if (lora.dropout < 0 || lora.dropout >= 1) l.fail("dropout", "a probability in [0, 1)");
  if (l.has("target_modules")) {
    const auto& list = l.required_value("target_modules");
    const std::string expected = "a non-empty list of " + list_of(kLoraModules) + " (Megatron-Bridge peft.LoRA names)";
    if (!list.is_array() || list.empty()) l.fail("target_modules", expected);
    lora.target_modules.clear();
    for (const auto& item : list) {
      const std::string name = item.is_string() ? item.get<std::string>() : "";
      if (std::find(kLoraModules.begin(), kLoraModules.end(), name) == kLoraModules.end()) {
        l.fail("target_modules", expected + " (" + config::render_value(item) + " is not one)");
      }
      if (!lora.targets(name)) lora.target_modules.push_back(name);
    }
  }
  l.reject_unknown_keys();
  return lora;
}

}  // namespace

bool Lora::targets(const std::string& module) const {
  return std::find(target_modules.begin(), target_modules.end(), module) != target_modules.end();
}

FineTuning read_fine_tuning(config::ObjectReader& r, int seq) {
  FineTuning f;
  const std::string kind = r.choice_or("workload", {"pretrain", "sft", "lora", "rl"}, "pretrain");
  if (kind == "rl") {
    r.fail("workload", "\"pretrain\", \"sft\" or \"lora\" here: an RL scenario (workload \"rl\") runs one RL iteration with "
                       "fmsim run, which simulates its rollout, forward passes and updates (docs/formats.md, \"RL post-training\")");
  }
  f.workload = kind == "sft" ? Workload::sft : kind == "lora" ? Workload::lora : Workload::pretrain;
  if (auto packing = r.optional_object("packing")) {
    if (f.workload == Workload::pretrain) r.fail("packing", "no packing section unless workload is \"sft\" or \"lora\"");
    f.packing = read_packing(*packing, seq);
  }
  if (auto lora = r.optional_object("lora")) {
    if (f.workload != Workload::lora) r.fail("lora", "no lora section unless workload is \"lora\"");
    f.lora = read_lora(*lora);
  }
  return f;
}

void validate_fine_tuning(const FineTuning& f, const ModelSpec& m, const std::string& where) {
  if (f.workload != Workload::lora) return;
  const std::string key = where + ": /training/lora/target_modules: ";
  for (const auto& module : f.lora.target_modules) {
    if (module == "linear_qkv" && m.mla) {
      throw InputError(key + "\"linear_qkv\": " + m.name + " has multi-head latent attention, which has no linear_qkv "
                       "(its linear_q_down_proj / linear_kv_down_proj adapters are not modelled)");
    }
    if ((module == "linear_fc1" || module == "linear_fc2") && m.is_moe()) {
      throw InputError(key + "\"" + module + "\": " + m.name + " is a mixture-of-experts model; LoRA on its experts "
                       "is not modelled (target linear_qkv and linear_proj)");
    }
  }
}

std::string to_string(Workload workload) {
  return workload == Workload::sft ? "sft" : workload == Workload::lora ? "lora" : "pretrain";
}

std::string describe_workload(const FineTuning& f, int seq) {
  std::string text = to_string(f.workload);
  if (f.workload == Workload::pretrain) return text;
  char buffer[160];
  if (f.packing.enabled) {
    std::snprintf(buffer, sizeof buffer, " (packed: %.1f sequences of %.0f tokens per row, %.1f%% full)",
                  real_tokens_per_row(f, seq) / f.packing.mean_sequence_length, f.packing.mean_sequence_length,
                  100.0 * f.packing.packing_efficiency);
    text += buffer;
  }
  if (f.workload == Workload::lora) {
    text += " (rank " + std::to_string(f.lora.rank) + " on " + list_of(f.lora.target_modules) + ")";
  }
  return text;
}

double real_tokens_per_row(const FineTuning& f, int seq) {
  return f.packing.enabled ? f.packing.packing_efficiency * seq : static_cast<double>(seq);
}

double attention_pairs_per_row(const FineTuning& f, int seq, int window) {
  if (!f.packing.enabled || f.workload == Workload::pretrain) return seq * attended_span(seq, window);
  const double mean = f.packing.mean_sequence_length, sd = f.packing.sequence_length_std;
  const double sequences = real_tokens_per_row(f, seq) / mean;
  const double w = window;
  // A window shorter than the sequence: each query sees at most w keys (its ramp over the first w).
  const double per_sequence = window > 0 && w < mean ? mean * w - w * (w - 1) / 2.0 : (mean * mean + sd * sd) / 2.0;
  return sequences * per_sequence;
}

namespace {
/// Attention-core FLOPs per query-key pair of one layer, and the layers that attend (MTP depths included).
struct AttentionLayers {
  double flops_per_pair = 0;
  std::vector<int> windows;  ///< each attending layer's window (0 = full causal)
};

AttentionLayers attention_layers(const ModelSpec& m, int seq, int vocab_padded) {
  AttentionLayers a;
  if (m.hybrid.enabled()) {
    // Hybrid models attend only in their attention layers ('*'); hybrid_training_flops_per_token prices
    // each at 12 q FLOPs per pair (4 q s/2 forward, x3). The pattern has no sliding windows.
    a.flops_per_pair = 12.0 * m.q_dim();
    const auto attending = [](const std::vector<HybridLayer>& layers) {
      return static_cast<int>(std::count(layers.begin(), layers.end(), HybridLayer::attention));
    };
    a.windows.assign(attending(m.hybrid.layers) + m.mtp_layers * attending(m.hybrid.mtp_layers), 0);
    return a;
  }
  // From a one-layer copy without a window (the same for every layer).
  ModelSpec one = m;
  one.layers = 1;
  one.sliding_window = 0;
  one.sliding_layers.clear();
  one.mtp_layers = 0;
  a.flops_per_pair = training_flops_per_token(one, seq, vocab_padded).attention / attended_span(seq, 0);
  for (int layer = 0; layer < m.layers; ++layer) a.windows.push_back(m.attention_window(layer));
  for (int d = 0; d < m.mtp_layers; ++d) a.windows.push_back(m.attention_window(m.layers - 1));
  return a;
}
}  // namespace

double model_flops_per_row(const ModelSpec& m, const FineTuning& f, int seq, int vocab_padded) {
  const FlopsPerToken whole = training_flops_per_token(m, seq, vocab_padded);
  if (f.workload == Workload::pretrain || (!f.packing.enabled && f.workload == Workload::sft)) return whole.total() * seq;
  const AttentionLayers layers = attention_layers(m, seq, vocab_padded);
  // What `whole.attention` holds beyond the attention core over a full causal row (a hybrid model's
  // Mamba scan, 7 d_in N per token) grows with the tokens, as the linear layers do.
  double full_row_core = 0;
  for (int window : layers.windows) full_row_core += layers.flops_per_pair * attended_span(seq, window);
  const double per_token_scan = std::max(0.0, whole.attention - full_row_core);
  double attention = 0;  // over one row
  if (f.packing.enabled && f.packing.flops_per_row) {
    attention = full_row_core * seq;
  } else {
    for (int window : layers.windows) attention += layers.flops_per_pair * attention_pairs_per_row(f, seq, window);
  }
  const double linear = whole.dense_matmul + whole.logits;
  if (f.workload == Workload::sft) return (linear + per_token_scan) * seq + attention;
  // LoRA: frozen weights have no weight gradient (2/3 of the linear FLOPs); the scan has no weights.
  return (2.0 / 3.0 * linear + per_token_scan) * real_tokens_per_row(f, seq) + 2.0 * attention;
}

double lora_parameters_per_layer(const FineTuning& f, const ModelSpec& m) {
  if (f.workload != Workload::lora) return 0;
  const double r = f.lora.rank, h = m.hidden;
  const double q = m.q_dim(), kv = m.kv_dim(), o_in = static_cast<double>(m.heads) * m.head_dim;
  const double fc1_out = (m.gated_mlp ? 2.0 : 1.0) * m.ffn;
  double params = 0;
  if (f.lora.targets("linear_qkv")) params += r * (h + q + 2 * kv);
  if (f.lora.targets("linear_proj")) params += r * (o_in + h);
  if (f.lora.targets("linear_fc1")) params += r * (h + fc1_out);
  if (f.lora.targets("linear_fc2")) params += r * (m.ffn + h);
  return params;
}

}  // namespace fmsim::workload
