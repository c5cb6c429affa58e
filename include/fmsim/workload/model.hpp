#pragma once
// A transformer language model as fmsim sees it: the shapes that decide parameters, FLOPs and activation
// sizes. Read from a Hugging Face config.json as is (dense, GQA, MoE, MLA, sliding-window attention),
// or from a preset in configs/models/ (which are such files).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/workload/hybrid_pattern.hpp"

namespace fmsim::workload {

struct MlaShape {
  int q_lora_rank = 0;        ///< 0 = no query compression
  int kv_lora_rank = 0;
  int qk_nope_head_dim = 0;
  int qk_rope_head_dim = 0;
  int v_head_dim = 0;
};

struct MoeShape {
  int experts = 0;                ///< routed experts (0 = dense model)
  int experts_per_token = 0;      ///< top-k
  int expert_ffn = 0;             ///< intermediate size of one routed expert
  int shared_ffn = 0;             ///< total intermediate size of the shared experts (0 = none)
  int first_dense_layers = 0;     ///< leading layers with a dense MLP (DeepSeek first_k_dense_replace)
  int layer_frequency = 1;        ///< every n-th layer (after the dense ones) is MoE
  int router_groups = 1;          ///< group-limited routing: experts form this many groups (HF n_group)...
  int router_group_topk = 1;      ///< ...and a token's top-k experts come from this many groups (topk_group)
  /// The routed experts' linear layers have biases (GPT-OSS: HF GptOssExperts gate_up_proj_bias and
  /// down_proj_bias; or add_bias_linear / mlp_bias). Megatron adds FC2's bias, weighted by the routing
  /// probabilities, in eager PyTorch per local expert (moe_ops.cpp).
  bool expert_bias = false;
};

struct ModelSpec {
  std::string name;
  std::string source;             ///< file it came from
  std::string model_type;         ///< HF model_type
  int hidden = 0;
  int layers = 0;
  int heads = 0;
  int kv_heads = 0;
  int head_dim = 0;
  int ffn = 0;                    ///< dense MLP intermediate size
  int vocab = 0;
  bool gated_mlp = true;          ///< SwiGLU-style: three matrices instead of two
  bool tied_embeddings = false;
  bool attention_bias = false;
  bool mlp_bias = false;
  int learned_positions = 0;      ///< rows of a learned position embedding (GPT-3); 0 = rotary
  int sliding_window = 0;         ///< tokens; 0 = full attention everywhere
  std::vector<bool> sliding_layers;  ///< per layer: uses the sliding window
  bool attention_sinks = false;   ///< a learned sink logit per head and layer (GPT-OSS)
  /// YaRN's attention factor, which scales RoPE's cosines and sines (HF rope_scaling of type "yarn":
  /// attention_factor, or 0.1 ln(factor) + 1, divided by the same with mscale_all_dim where DeepSeek's
  /// mscale / mscale_all_dim are given; Megatron-Core _yarn_get_concentration_factor). 1 = none.
  double rope_attention_factor = 1.0;
  /// The gated activation's inputs are clamped (HF swiglu_limit, GPT-OSS 7; Megatron
  /// activation_func_clamp_value): 0 = no clamp.
  double activation_clamp = 0.0;
  int mtp_layers = 0;             ///< multi-token-prediction depths (HF num_nextn_predict_layers, Megatron mtp_num_layers)
  bool mla = false;
  MlaShape mla_shape;
  MoeShape moe;
  HybridSpec hybrid;              ///< Mamba/attention layer pattern (hybrid_pattern.hpp); empty = transformer

  bool is_moe() const { return moe.experts > 0; }
  bool layer_is_moe(int layer) const;
  /// Attention window of a layer in tokens; 0 = full (causal) attention.
  int attention_window(int layer) const;
  int moe_layers() const;
  int q_dim() const;   ///< query projection width (heads x query head dim)
  int kv_dim() const;  ///< width of K (and of V) for GQA/MHA
  /// Head dimension a fused attention kernel runs at: head_dim, or MLA's mean of its Q/K and V head dims
  /// (the widths of its two matrix products per query-key pair; compute::attention_head_dim_factor).
  double attention_head_dim() const;
};

/// Reads a Hugging Face config.json (or a preset of that form). Keys it does not use are ignored, as
/// HF configs carry many; keys it needs and that are missing or wrong are errors naming the file.
ModelSpec model_from_hf_config(const nlohmann::json& config, const std::string& file);

/// Whether `name_or_path` names a file (it has a '/' or ends in .json) rather than a preset.
bool is_model_path(const std::string& name_or_path);
/// The config.json a preset name or path stands for. Throws InputError listing the presets for an unknown name.
std::filesystem::path model_config_path(const std::string& name_or_path, const std::filesystem::path& presets_dir);
/// `name_or_path`: a preset name (configs/models/NAME.json) or a path to a config.json.
ModelSpec load_model(const std::string& name_or_path, const std::filesystem::path& presets_dir);
std::vector<std::string> preset_names(const std::filesystem::path& presets_dir);
/// configs/models of the source tree ($FMSIM_MODELS_DIR overrides).
std::filesystem::path default_presets_dir();

// ---- counts (model_math.cpp) ----

struct ParameterCounts {
  double embedding = 0;        ///< input embedding (+ learned positions)
  double output = 0;           ///< LM head (0 when tied)
  double attention_per_layer = 0;
  double dense_mlp_per_layer = 0;
  double moe_mlp_per_layer = 0;   ///< all experts + shared + router
  double expert_per_moe_layer = 0;  ///< routed experts only (sharded by EP)
  double mamba_per_layer = 0;     ///< hybrid models: one Mamba-2 mixer layer
  double norms = 0;
  double total = 0;
  double active = 0;           ///< per token: with top-k experts only
  /// The multi-token-prediction module (mtp_layers depths of: the last decoder layer's kind, eh_proj
  /// 2h x h, enorm, hnorm, final norm; embedding and output head shared). Not in total / active,
  /// which are the decoder's published counts (DeepSeek-V3: 671B + 14B MTP).
  double mtp = 0;
  double mtp_experts = 0;      ///< of which routed experts (sharded by EP)
};
ParameterCounts count_parameters(const ModelSpec& model);

/// Parameters of one layer (attention + its MLP + norms), from the per-layer figures of `counts`.
double layer_parameters(const ModelSpec& model, const ParameterCounts& counts, int layer);

/// Average number of keys a query attends to at sequence length `seq`, causal, with an optional
/// window (0 = none): seq / 2 without one, as Megatron counts it; w - w (w - 1) / (2 seq) with a window
/// w < seq (query i sees min(i + 1, w) keys; Megatron-Bridge flop_utils calculate_swa_context).
double attended_span(int seq, int window);

/// Megatron-Core accounting (MEGATRON-NOTES.md section 1): training FLOPs (forward + backward, 3 x 2
/// per multiply-add) per token at sequence length `seq`, causal. `vocab_padded` is the LM-head width.
struct FlopsPerToken {
  double dense_matmul = 0;   ///< projections, MLP/experts, per token over all layers
  double attention = 0;      ///< QK^T and PV, causal
  double logits = 0;
  double total() const { return dense_matmul + attention + logits; }
};
FlopsPerToken training_flops_per_token(const ModelSpec& model, int seq, int vocab_padded);

/// Megatron pads the vocabulary to a multiple of 128 x TP.
int padded_vocab(int vocab, int tensor_parallel);

}  // namespace fmsim::workload
