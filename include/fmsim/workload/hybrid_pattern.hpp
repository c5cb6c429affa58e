#pragma once
// Hybrid Mamba/attention models (Nemotron-H, Nemotron 3 Nano/Super/Ultra; Megatron-Core's
// HybridModel / MambaModel). The layer stack is a pattern string, one letter per layer, as in Hugging
// Face's `hybrid_override_pattern` and Megatron's --hybrid-override-pattern:
//   M = Mamba-2 (SSD) mixer, * = self-attention, - = dense MLP, E = mixture of experts.
// Each letter is a whole residual block (pre-norm, mixer or MLP, residual add), so a hybrid layer holds
// either a sequence mixer or a channel mixer, never both as a transformer layer does.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fmsim::workload {

struct ModelSpec;
struct ParameterCounts;
struct FlopsPerToken;
struct Scenario;
struct Parallelism;

enum class HybridLayer { mamba, attention, mlp, moe };

/// Mamba-2 mixer shape (HF NemotronHConfig names; Megatron's --mamba-* arguments).
struct MambaShape {
  int heads = 0;        ///< mamba_num_heads (Megatron mamba_num_heads)
  int head_dim = 64;    ///< mamba_head_dim (P)
  int state = 128;      ///< ssm_state_size (N; Megatron mamba_state_dim)
  int groups = 8;       ///< n_groups (G: B and C are shared by heads/G heads; Megatron mamba_num_groups)
  int conv_kernel = 4;  ///< conv_kernel (causal depthwise conv1d width)
  int chunk = 128;      ///< chunk_size (Q) of the SSD chunked scan
  bool conv_bias = true;
  int inner() const { return heads * head_dim; }                   ///< d_inner = heads x head_dim
  int conv_dim() const { return inner() + 2 * groups * state; }    ///< x, B, C go through the conv1d
  int in_proj_width() const { return 2 * inner() + 2 * groups * state + heads; }  ///< z, x, B, C, dt
};

struct HybridSpec {
  std::vector<HybridLayer> layers;  ///< empty: an ordinary transformer (attention + MLP in every layer)
  std::string pattern;
  MambaShape mamba;
  int moe_latent = 0;  ///< LatentMoE: routed experts work in this width (moe_latent_size; 0 = hidden)
  /// One multi-token-prediction depth's layers (HF/Megatron mtp_hybrid_override_pattern, e.g. "*E" in
  /// Nemotron 3 Super and Ultra). They are numbered after the decoder's: layer index layers.size() + i
  /// is MTP layer i, so the MTP module can emit them with emit_layer_forward (the depth count is the
  /// model's MTP setting, num_nextn_predict_layers / mtp_num_layers).
  std::vector<HybridLayer> mtp_layers;
  /// Megatron mtp_use_repeated_layer (config key mtp_use_repeated_layer): every depth runs the same MTP
  /// layers, so their parameters are held once (the FLOPs are still per depth).
  bool mtp_repeated = false;
  bool enabled() const { return !layers.empty(); }
  int count(HybridLayer kind) const;  ///< decoder layers of a kind (MTP layers not included)
  /// Kind of decoder layer `layer`, or of MTP layer layer - layers.size().
  HybridLayer kind(int layer) const;
};

/// Reads hybrid_override_pattern and the Mamba and LatentMoE keys into `model` (whose num_hidden_layers,
/// heads and MoE fields are already read). A config without hybrid_override_pattern is left alone; one
/// naming an architecture fmsim does not model (sparse attention with an indexer, gated-delta / linear
/// attention hybrids) is refused with the reason. Errors name the file, key and value.
void read_hybrid_config(const nlohmann::json& config, const std::string& file, ModelSpec& model);

/// Parameters of one Mamba-2 mixer layer (in/out projections, conv1d, dt bias, A, D, gated norm, pre-norm).
double mamba_layer_parameters(const ModelSpec& model);
/// count_parameters for a hybrid model.
void count_hybrid_parameters(const ModelSpec& model, ParameterCounts& counts);
/// Parameters of hybrid layer `layer` (its mixer or MLP and its pre-norm).
double hybrid_layer_parameters(const ModelSpec& model, const ParameterCounts& counts, int layer);
/// Training FLOPs per token as Megatron counts them for hybrid models (hybrid_flops in
/// Megatron-LM megatron/training/training.py and Megatron-Bridge training/utils/flop_utils.py).
FlopsPerToken hybrid_training_flops_per_token(const ModelSpec& model, int seq, int vocab_padded);
/// Megatron's training FLOPs per token of `depths` MTP depths of a hybrid model: the MTP pattern's layers
/// (counted as hybrid_flops counts a unified pattern's MTP letters) and one more logits each.
FlopsPerToken hybrid_mtp_flops_per_token(const ModelSpec& model, int seq, int vocab_padded, int depths);
/// Activation bytes one GPU keeps for hybrid layer `layer` of one micro-batch.
double hybrid_activation_bytes(const Scenario& s, int layer);
/// Parallel layout checks of a hybrid model (Megatron's MambaMixer: TP and CP shard the Mamba heads
/// and groups). `where` names the scenario file.
void validate_hybrid_parallelism(const Parallelism& p, const ModelSpec& model, const std::string& where);

}  // namespace fmsim::workload
