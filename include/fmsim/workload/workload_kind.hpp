#pragma once
// What a training job trains: pretraining, supervised fine-tuning (SFT) on packed variable-length
// sequences, or LoRA (frozen base weights plus low-rank adapters), with the Megatron-Bridge / NeMo
// names (peft.LoRA: dim, alpha, dropout, target_modules; offline packed sequences). The model FLOPs
// these jobs report follow Megatron-Bridge's flop_utils.py (docs/model.md, "Fine-tuning").
#include <string>
#include <vector>

#include "fmsim/config/object_reader.hpp"

namespace fmsim::workload {

struct ModelSpec;

enum class Workload { pretrain, sft, lora };

/// Packed sequences (THD): several sequences share one row of seq_length tokens; attention runs per
/// sequence (cu_seqlens), the GEMMs over the whole row (rows are padded to seq_length).
struct Packing {
  bool enabled = false;
  double mean_sequence_length = 0;   ///< tokens of one sequence
  double sequence_length_std = 0;    ///< their standard deviation (E[s^2] = mean^2 + std^2)
  double packing_efficiency = 1.0;   ///< real tokens / seq_length per row, in (0, 1]
  /// How the reported model FLOPs count attention: per sequence (sum of s_i^2, Megatron-Core and
  /// Megatron-Bridge since 2026-06-30) or over whole rows as if each were one sequence (the
  /// Megatron-Bridge 26.06 SFT table, published before that change).
  bool flops_per_row = false;
};

/// LoRA (PEFT / Megatron-Bridge peft.LoRA): y = W x + (alpha / r) B A x on each target module.
struct Lora {
  int rank = 32;          ///< peft.LoRA dim (Megatron-Bridge default 32)
  double alpha = 32;      ///< scaling numerator (no cost)
  double dropout = 0.0;   ///< on the adapter input (no cost modelled beyond an elementwise pass)
  std::vector<std::string> target_modules{"linear_qkv", "linear_proj", "linear_fc1", "linear_fc2"};
  bool targets(const std::string& module) const;
};

struct FineTuning {
  Workload workload = Workload::pretrain;
  Packing packing;
  Lora lora;
  bool frozen_base() const { return workload == Workload::lora; }
};

/// Reads "workload", "packing" and "lora" of the training section (the caller rejects unknown keys).
FineTuning read_fine_tuning(config::ObjectReader& training, int seq_length);

/// Exit-2 checks that need the model: LoRA modules it lacks or that fmsim does not model.
void validate_fine_tuning(const FineTuning& f, const ModelSpec& model, const std::string& where);

std::string to_string(Workload workload);
/// "pretrain", "sft (packed: 16.0 sequences of 250 tokens per row, 97.7% full)", "lora (rank 16 on linear_qkv)".
std::string describe_workload(const FineTuning& f, int seq_length);

/// Causal query-key pairs of one packed row (the attention work per row, Megatron's S2 / 2 counting),
/// `window` > 0 for sliding-window layers; seq^2 / 2 for a row holding one sequence.
double attention_pairs_per_row(const FineTuning& f, int seq_length, int window);
/// Real (non-padding) tokens per row.
double real_tokens_per_row(const FineTuning& f, int seq_length);

/// Model FLOPs of one packed row (global batch x this = the step's), as the published tables count
/// them: pretraining and SFT by Megatron-Core's formula over the whole row with per-sequence attention
/// (or per row, flops_per_row); LoRA by Megatron-Bridge's PEFT formula, 2/3 of the frozen GEMMs' FLOPs
/// over the real tokens (forward and data gradient, no weight gradient) plus 12 h sum(s_i^2) per layer for
/// attention (flop_utils.py transformer_flops, model_flops_frozen / model_flops_unfrozen). Adapter GEMMs
/// are not counted.
double model_flops_per_row(const ModelSpec& model, const FineTuning& f, int seq, int vocab_padded);

/// Parameters of the LoRA adapters of one decoder layer (A: in x r, B: r x out per target module).
double lora_parameters_per_layer(const FineTuning& f, const ModelSpec& model);

}  // namespace fmsim::workload
