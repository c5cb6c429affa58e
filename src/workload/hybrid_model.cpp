// Hybrid Mamba/attention models: reading the layer pattern and the Mamba-2 shape from a Hugging Face
// config.json (NemotronHConfig key names), parameter counts and Megatron's training-FLOPs count.
#include <algorithm>
#include <string>

#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/parallelism.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;

const json* find(const json& config, const std::string& key) {
  auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

[[noreturn]] void fail(const std::string& file, const std::string& key, const std::string& value, const std::string& why) {
  throw InputError(file + ": /" + key + " = " + value + ": " + why);
}

/// An integer key in [minimum, 16,777,216], or `fallback` when absent (< 0: required).
int integer(const json& config, const std::string& file, const std::string& key, int fallback, int minimum = 1) {
  const json* value = find(config, key);
  if (value == nullptr) {
    if (fallback < 0) throw InputError(file + ": missing key '" + key + "' (a hybrid Mamba model's config.json needs it)");
    return fallback;
  }
  constexpr long long most = 1 << 24;
  if (!value->is_number_integer() || value->get<long long>() < minimum || value->get<long long>() > most) {
    fail(file, key, config::render_value(*value), "expected an integer >= " + std::to_string(minimum) + " and <= " + std::to_string(most));
  }
  return static_cast<int>(value->get<long long>());
}

std::string text(const json& config, const std::string& file, const std::string& key) {
  const json* value = find(config, key);
  if (value == nullptr) return "";
  if (!value->is_string()) fail(file, key, value->dump(), "expected a string");
  return value->get<std::string>();
}

/// Architectures whose sequence mixers fmsim does not cost: refused with the reason (docs/model.md,
/// "Not modelled").
void refuse_unmodelled(const json& config, const std::string& file) {
  const std::string type = text(config, file, "model_type");
  if (find(config, "index_topk") != nullptr || find(config, "index_n_heads") != nullptr || type == "deepseek_v32") {
    const std::string key = find(config, "index_topk") != nullptr ? "index_topk" : find(config, "index_n_heads") ? "index_n_heads" : "model_type";
    fail(file, key, find(config, key)->dump(),
         "sparse attention with a lightning indexer (DeepSeek-V3.2 DSA) is not modelled: its cost depends on the "
         "indexer's FP8 kernel and the top-k sparse MLA kernel, for which no published per-kernel timings exist "
         "(docs/model.md, 'Not modelled')");
  }
  const bool linear_attention = find(config, "linear_num_value_heads") != nullptr || find(config, "linear_key_head_dim") != nullptr;
  if (linear_attention || type == "qwen3_next") {
    const std::string key = find(config, "linear_num_value_heads") != nullptr ? "linear_num_value_heads"
                            : find(config, "linear_key_head_dim") != nullptr  ? "linear_key_head_dim"
                                                                               : "model_type";
    fail(file, key, find(config, key)->dump(),
         "linear / gated-delta attention hybrids (Qwen3-Next Gated DeltaNet) are not modelled: the chunked "
         "gated-delta-rule kernels (flash-linear-attention) have no published training-kernel timings fmsim "
         "could cost them from (docs/model.md, 'Not modelled')");
  }
}

std::string shown_pattern(const std::string& letters) {
  return "\"" + (letters.size() > 120 ? letters.substr(0, 120) + "..." : letters) + "\"";
}

/// The letters of a pattern value, each one of M, *, -, E (else exit 2 naming the letter and position).
std::string pattern_letters(const json& pattern, const std::string& file, const std::string& key) {
  if (!pattern.is_string()) fail(file, key, pattern.dump().substr(0, 80), "expected a string of layer letters (M, *, -, E)");
  const std::string letters = pattern.get<std::string>();
  for (std::size_t i = 0; i < letters.size(); ++i) {
    const char c = letters[i];
    if (c == 'M' || c == '*' || c == '-' || c == 'E') continue;
    std::string why = "letter '" + std::string(1, c) + "' at position " + std::to_string(i) +
                      " is not a layer type (expected M = Mamba-2, * = attention, - = MLP, E = MoE)";
    if (c == '|') why += "; pipeline stage boundaries go in pipeline_model_parallel_layout";
    if (c == '/') why += "; multi-token-prediction layers go in mtp_hybrid_override_pattern or after the main pattern (\"main/mtp/mtp\")";
    if (c == 'G') why += "; gated-delta-net layers are not modelled (docs/model.md, 'Not modelled')";
    fail(file, key, shown_pattern(letters), why);
  }
  return letters;
}

HybridLayer layer_of(char letter) {
  switch (letter) {
    case 'M': return HybridLayer::mamba;
    case '*': return HybridLayer::attention;
    case '-': return HybridLayer::mlp;
    default: return HybridLayer::moe;  // 'E' (checked by the caller)
  }
}

bool gated(const std::string& act) {
  static const std::vector<std::string> names = {"silu", "swish", "swiglu", "geglu"};
  return std::find(names.begin(), names.end(), act) != names.end();
}

}  // namespace

int HybridSpec::count(HybridLayer kind) const { return static_cast<int>(std::count(layers.begin(), layers.end(), kind)); }

HybridLayer HybridSpec::kind(int layer) const {
  const int decoder = static_cast<int>(layers.size());
  return layer < decoder ? layers[layer] : mtp_layers.at(layer - decoder);
}

void read_hybrid_config(const json& config, const std::string& file, ModelSpec& m) {
  refuse_unmodelled(config, file);
  std::string key = find(config, "hybrid_override_pattern") != nullptr ? "hybrid_override_pattern" : "hybrid_layer_pattern";
  const json* pattern = find(config, key);
  if (pattern == nullptr) {
    if (find(config, "moe_latent_size") != nullptr) {
      fail(file, "moe_latent_size", find(config, "moe_latent_size")->dump(),
           "LatentMoE is modelled for hybrid (Nemotron-H) models only: give hybrid_override_pattern");
    }
    return;
  }
  // Megatron's unified pattern "main/mtp/mtp/...": each part after '/' is one MTP depth's layers
  // (mamba_hybrid_layer_allocation.py parse_hybrid_pattern: every depth repeats the same pattern).
  std::string main_part;
  std::vector<std::string> depth_parts;
  if (pattern->is_string() && pattern->get<std::string>().find('/') != std::string::npos) {
    const std::string whole = pattern->get<std::string>();
    std::size_t start = 0, slash = whole.find('/');
    main_part = whole.substr(0, slash);
    while (slash != std::string::npos) {
      start = slash + 1;
      slash = whole.find('/', start);
      depth_parts.push_back(whole.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    }
    for (const std::string& part : depth_parts) {
      if (part.empty() || part != depth_parts.front()) {
        fail(file, key, shown_pattern(whole), "the MTP patterns after '/' must be one non-empty pattern repeated per depth "
                                              "(Megatron's main/mtp/mtp form)");
      }
    }
    if (find(config, "mtp_hybrid_override_pattern") != nullptr) {
      fail(file, key, shown_pattern(whole), "gives MTP layers after '/' and mtp_hybrid_override_pattern too: give one");
    }
    const int depths = static_cast<int>(depth_parts.size());
    if (m.mtp_layers > 0 && m.mtp_layers != depths) {
      fail(file, key, shown_pattern(whole), "has " + std::to_string(depths) + " MTP depths after '/' but num_nextn_predict_layers / "
                                            "mtp_num_layers is " + std::to_string(m.mtp_layers));
    }
    m.mtp_layers = depths;
  }
  const std::string letters = depth_parts.empty() ? pattern_letters(*pattern, file, key) : pattern_letters(json(main_part), file, key);
  const std::string shown = shown_pattern(letters);
  if (static_cast<int>(letters.size()) != m.layers) {
    fail(file, key, shown, "has " + std::to_string(letters.size()) + " layers but num_hidden_layers is " +
                               std::to_string(m.layers) + " (expected one letter per layer)");
  }
  if (m.mla) {
    fail(file, "kv_lora_rank", std::to_string(m.mla_shape.kv_lora_rank),
         "multi-head latent attention in a hybrid pattern is not modelled (Nemotron-H layers use GQA)");
  }
  HybridSpec& h = m.hybrid;
  h.pattern = letters;
  for (char c : letters) h.layers.push_back(layer_of(c));
  if (h.count(HybridLayer::moe) > 0 && !m.is_moe()) {
    fail(file, key, shown, "has MoE layers (E) but the model has no routed experts (n_routed_experts)");
  }
  // Nemotron-H's MLPs use mlp_hidden_act (squared ReLU: two matrices, not gated).
  const std::string act = text(config, file, "mlp_hidden_act");
  if (!act.empty()) m.gated_mlp = gated(act);
  if (find(config, "moe_shared_expert_intermediate_size") != nullptr) {
    m.moe.shared_ffn = integer(config, file, "moe_shared_expert_intermediate_size", 0, 0);
  }
  h.moe_latent = integer(config, file, "moe_latent_size", 0, 0);
  if (!depth_parts.empty()) {
    const std::string mtp = pattern_letters(json(depth_parts.front()), file, key);
    for (char c : mtp) h.mtp_layers.push_back(layer_of(c));
    if (std::count(mtp.begin(), mtp.end(), 'E') > 0 && !m.is_moe()) {
      fail(file, key, shown_pattern(mtp), "has MoE layers (E) after '/' but the model has no routed experts");
    }
  }
  if (const json* mtp = find(config, "mtp_hybrid_override_pattern"); mtp != nullptr) {
    const std::string letters = pattern_letters(*mtp, file, "mtp_hybrid_override_pattern");
    if (letters.empty()) fail(file, "mtp_hybrid_override_pattern", "\"\"", "expected at least one layer letter");
    for (char c : letters) h.mtp_layers.push_back(layer_of(c));
    if (std::count(letters.begin(), letters.end(), 'E') > 0 && !m.is_moe()) {
      fail(file, "mtp_hybrid_override_pattern", shown_pattern(letters), "has MoE layers (E) but the model has no routed experts");
    }
  }
  if (const json* repeated = find(config, "mtp_use_repeated_layer"); repeated != nullptr) {
    if (!repeated->is_boolean()) fail(file, "mtp_use_repeated_layer", repeated->dump(), "expected true or false");
    h.mtp_repeated = repeated->get<bool>();
  }
  const bool any_mamba = h.count(HybridLayer::mamba) > 0 || std::count(h.mtp_layers.begin(), h.mtp_layers.end(), HybridLayer::mamba) > 0;
  if (!any_mamba) return;
  MambaShape& s = h.mamba;
  s.heads = integer(config, file, "mamba_num_heads", -1);
  s.head_dim = integer(config, file, "mamba_head_dim", 64);
  s.state = integer(config, file, "ssm_state_size", 128);
  s.groups = integer(config, file, "n_groups", 8);
  s.conv_kernel = integer(config, file, "conv_kernel", 4);
  s.chunk = integer(config, file, "chunk_size", 128);
  if (const json* bias = find(config, "use_conv_bias"); bias != nullptr) {
    if (!bias->is_boolean()) fail(file, "use_conv_bias", bias->dump(), "expected true or false");
    s.conv_bias = bias->get<bool>();
  }
  // Widths stay within 16,777,216 (as every dimension does), so the int products of the kernels' shapes are exact.
  constexpr long long most = 1 << 24;
  if (static_cast<long long>(s.heads) * s.head_dim > most) {
    fail(file, "mamba_head_dim", std::to_string(s.head_dim), "mamba_num_heads x mamba_head_dim = " +
         std::to_string(static_cast<long long>(s.heads) * s.head_dim) + ": expected at most 16,777,216");
  }
  if (static_cast<long long>(s.groups) * s.state > most) {
    fail(file, "ssm_state_size", std::to_string(s.state), "n_groups x ssm_state_size = " +
         std::to_string(static_cast<long long>(s.groups) * s.state) + ": expected at most 16,777,216");
  }
  if (s.heads % s.groups != 0) {
    fail(file, "n_groups", std::to_string(s.groups), "expected a divisor of mamba_num_heads (" + std::to_string(s.heads) + ")");
  }
}

double mamba_layer_parameters(const ModelSpec& m) {
  const MambaShape& s = m.hybrid.mamba;
  const double h = m.hidden, inner = s.inner(), conv = s.conv_dim();
  // in_proj (z, x, B, C, dt), depthwise conv1d (+ bias), dt_bias, A_log, D, gated RMSNorm, out_proj.
  return h * s.in_proj_width() + conv * s.conv_kernel + (s.conv_bias ? conv : 0.0) + 3.0 * s.heads + inner + inner * h;
}

void count_hybrid_parameters(const ModelSpec& m, ParameterCounts& c) {
  const HybridSpec& hy = m.hybrid;
  const double h = m.hidden;
  if (m.is_moe() && hy.moe_latent > 0) {  // LatentMoE: experts in the latent width, plus its two projections
    const double mats = m.gated_mlp ? 3.0 : 2.0;
    c.expert_per_moe_layer = m.moe.experts * mats * hy.moe_latent * m.moe.expert_ffn;
    c.moe_mlp_per_layer = c.expert_per_moe_layer + mats * h * m.moe.shared_ffn + h * m.moe.experts + 2.0 * h * hy.moe_latent;
  }
  const bool mtp_mamba = std::count(hy.mtp_layers.begin(), hy.mtp_layers.end(), HybridLayer::mamba) > 0;
  c.mamba_per_layer = hy.count(HybridLayer::mamba) > 0 || mtp_mamba ? mamba_layer_parameters(m) : 0.0;
  c.norms = h * m.layers + h;  // one pre-norm per layer, the final norm
  c.total = c.embedding + c.output + h;
  for (int layer = 0; layer < m.layers; ++layer) c.total += hybrid_layer_parameters(m, c, layer);
  const int moe_layers = hy.count(HybridLayer::moe);
  const double inactive = m.is_moe() ? c.expert_per_moe_layer * (1.0 - static_cast<double>(m.moe.experts_per_token) / m.moe.experts) : 0.0;
  c.active = c.total - moe_layers * inactive;
  // Multi-token prediction (Megatron MultiTokenPredictionLayer with mtp_hybrid_override_pattern): each
  // depth holds enorm, hnorm, eh_proj (2h -> h), the layers of the MTP pattern (each letter with its
  // pre-norm, as in the decoder) and a final norm; the embedding and output head are shared.
  if (m.mtp_layers > 0 && !hy.mtp_layers.empty()) {
    double per_depth = 2.0 * h * h + 3.0 * h, experts = 0;
    for (std::size_t i = 0; i < hy.mtp_layers.size(); ++i) {
      per_depth += hybrid_layer_parameters(m, c, m.layers + static_cast<int>(i));
      if (hy.mtp_layers[i] == HybridLayer::moe) experts += c.expert_per_moe_layer;
    }
    const int copies = hy.mtp_repeated ? 1 : m.mtp_layers;  // mtp_use_repeated_layer: one set for every depth
    c.mtp = copies * per_depth;
    c.mtp_experts = copies * experts;
  }
}

double hybrid_layer_parameters(const ModelSpec& m, const ParameterCounts& c, int layer) {
  const double norm = m.hidden;
  switch (m.hybrid.kind(layer)) {
    case HybridLayer::mamba: return norm + c.mamba_per_layer;
    case HybridLayer::attention: return norm + c.attention_per_layer;
    case HybridLayer::mlp: return norm + c.dense_mlp_per_layer;
    case HybridLayer::moe: return norm + c.moe_mlp_per_layer;
  }
  return norm;
}

namespace {
void add_layer_flops(const ModelSpec& m, int seq, const std::vector<HybridLayer>& layers, FlopsPerToken& f);
}  // namespace

FlopsPerToken hybrid_training_flops_per_token(const ModelSpec& m, int seq, int vocab_padded) {
  // Megatron's hybrid_flops (forward per token, x3 for forward + backward), layer by layer:
  //   attention  4 h p (h + h g/n + s/2), p = kv_channels n / h   (projections; QK^T and PV at s/2)
  //   Mamba      2 h (2 d_in + 2 G N + H) + 7 d_in N + 2 d_in h, with d_in = 2 h as Megatron assumes
  //              (in_proj, scan, out_proj; the real d_inner = heads x head_dim sizes the kernels)
  //   MLP        4 h ffn (x 3/2 when gated)
  //   MoE        4 h ffn_e k + 4 h shared (x 3/2 when gated); LatentMoE: 4 l ffn_e k + 4 h l + shared
  //   logits     2 h V
  FlopsPerToken f;
  const double h = m.hidden;
  add_layer_flops(m, seq, m.hybrid.layers, f);
  f.logits = 3 * 2.0 * h * vocab_padded;
  if (m.mtp_layers > 0) {  // MTP depths: their pattern's layers and one more logits each
    const FlopsPerToken mtp = hybrid_mtp_flops_per_token(m, seq, vocab_padded, m.mtp_layers);
    f.dense_matmul += mtp.dense_matmul;
    f.attention += mtp.attention;
    f.logits += mtp.logits;
  }
  return f;
}

FlopsPerToken hybrid_mtp_flops_per_token(const ModelSpec& m, int seq, int vocab_padded, int depths) {
  // Megatron-LM megatron/training/training.py num_floating_point_operations (hybrid branch) counts the
  // layers of get_hybrid_layer_counts(hybrid_layer_pattern), whose MTP part ("main/mtp/mtp") is counted
  // once per depth, and hybrid_flops' logits term 2 s h V (1 + mtp_num_layers). Unlike the transformer
  // formula it has no term for eh_proj or the MTP norms.
  FlopsPerToken f;
  for (int d = 0; d < depths; ++d) add_layer_flops(m, seq, m.hybrid.mtp_layers, f);
  f.logits = 3 * 2.0 * m.hidden * vocab_padded * depths;
  return f;
}

namespace {
void add_layer_flops(const ModelSpec& m, int seq, const std::vector<HybridLayer>& layers, FlopsPerToken& f) {
  const HybridSpec& hy = m.hybrid;
  const double h = m.hidden, scale = m.gated_mlp ? 1.5 : 1.0;
  const double q = m.q_dim(), kv = m.kv_dim();
  const double d_in = 2.0 * h, N = hy.mamba.state, G = hy.mamba.groups, H = hy.mamba.heads;
  const double moe_routed = hy.moe_latent > 0
                                ? 4.0 * hy.moe_latent * m.moe.expert_ffn * m.moe.experts_per_token * scale + 4.0 * h * hy.moe_latent
                                : 4.0 * h * m.moe.expert_ffn * m.moe.experts_per_token * scale;
  for (HybridLayer kind : layers) {
    switch (kind) {
      case HybridLayer::attention:
        f.dense_matmul += 3 * (4.0 * q * h + 4.0 * kv * h);
        f.attention += 3 * 2.0 * q * seq;  // 4 q s/2
        break;
      case HybridLayer::mamba:
        f.dense_matmul += 3 * (2.0 * h * (2 * d_in + 2 * G * N + H) + 2.0 * d_in * h);
        f.attention += 3 * 7.0 * d_in * N;
        break;
      case HybridLayer::mlp: f.dense_matmul += 3 * 4.0 * h * m.ffn * scale; break;
      case HybridLayer::moe: f.dense_matmul += 3 * (moe_routed + 4.0 * h * m.moe.shared_ffn * scale); break;
    }
  }
}
}  // namespace

void validate_hybrid_parallelism(const Parallelism& p, const ModelSpec& m, const std::string& where) {
  const MambaShape& s = m.hybrid.mamba;
  if (m.hybrid.count(HybridLayer::mamba) == 0) return;
  const std::string tp_key = "/parallelism/tensor_model_parallel_size";
  // Megatron's MambaMixer splits heads and groups over TP (in_proj column-parallel, out_proj row-parallel).
  if (s.heads % p.tp != 0) {
    throw InputError(where + ": " + tp_key + " = " + std::to_string(p.tp) + ": does not divide the model's " +
                     std::to_string(s.heads) + " Mamba heads (mamba_num_heads)");
  }
  if (s.groups % p.tp != 0) {
    throw InputError(where + ": " + tp_key + " = " + std::to_string(p.tp) + ": does not divide the model's " +
                     std::to_string(s.groups) + " Mamba groups (n_groups)");
  }
  // Megatron's MambaContextParallel trades the sequence split for a head split around the conv1d and scan.
  if ((s.heads / p.tp) % p.cp != 0) {
    throw InputError(where + ": /parallelism/context_parallel_size = " + std::to_string(p.cp) + ": does not divide the " +
                     std::to_string(s.heads / p.tp) + " Mamba heads per tensor-parallel rank (Mamba context parallelism "
                     "splits them)");
  }
}

}  // namespace fmsim::workload
