// Hugging Face config.json -> ModelSpec. The key names are the ones HF model classes use (LlamaConfig,
// MixtralConfig, Qwen3MoeConfig, DeepseekV3Config, GptOssConfig, NemotronConfig, GPT2Config); keys that
// fmsim does not need are ignored, as HF configs carry many.
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/model.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;

constexpr long long kMaxDimension = 1 << 24, kMaxLayers = 1 << 14;

class HfReader {
 public:
  HfReader(const json& config, std::string file) : config_(config), file_(std::move(file)) {
    if (!config_.is_object()) throw InputError(file_ + ": expected a JSON object (a Hugging Face config.json)");
  }
  /// The first of `keys` present and not null, as a positive integer; `fallback` if none (< 0: required).
  /// Every dimension, count and length is at most 16,777,216 (layers at most 16,384): far beyond any
  /// model, and small enough that products of two of them stay exact in the int64 and double math.
  int integer(const std::vector<std::string>& keys, int fallback, int minimum = 1) const {
    for (const auto& key : keys) {
      auto it = config_.find(key);
      if (it == config_.end() || it->is_null()) continue;
      const long long most = key == "num_hidden_layers" || key == "n_layer" || key == "num_layers" ? kMaxLayers : kMaxDimension;
      const bool in_range = it->is_number_unsigned() ? it->get<unsigned long long>() <= static_cast<unsigned long long>(most) &&
                                                           it->get<long long>() >= minimum
                                                     : it->is_number_integer() && it->get<long long>() >= minimum &&
                                                           it->get<long long>() <= most;
      if (!in_range) {
        throw InputError(file_ + ": /" + key + " = " + config::render_value(*it) + ": expected an integer >= " +
                         std::to_string(minimum) + " and <= " + std::to_string(most));
      }
      return static_cast<int>(it->get<long long>());
    }
    if (fallback < 0) {
      throw InputError(file_ + ": missing key '" + keys.front() + "' (a Hugging Face config.json needs it)");
    }
    return fallback;
  }
  std::string text(const std::string& key, const std::string& fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_string()) throw InputError(file_ + ": /" + key + " = " + it->dump() + ": expected a string");
    return it->get<std::string>();
  }
  bool flag(const std::string& key, bool fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) throw InputError(file_ + ": /" + key + " = " + it->dump() + ": expected true or false");
    return it->get<bool>();
  }
  /// A non-negative finite number; `fallback` when absent.
  double number(const std::string& key, double fallback) const {
    auto it = config_.find(key);
    if (it == config_.end() || it->is_null()) return fallback;
    if (!it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      throw InputError(file_ + ": /" + key + " = " + config::render_value(*it) + ": expected a number >= 0");
    }
    return it->get<double>();
  }
  const json* find(const std::string& key) const {
    auto it = config_.find(key);
    return it == config_.end() || it->is_null() ? nullptr : &*it;
  }
  [[noreturn]] void fail(const std::string& key, const std::string& value, const std::string& expected) const {
    throw InputError(file_ + ": /" + key + " = " + value + ": " + expected);
  }

 private:
  const json& config_;
  std::string file_;
};

/// YaRN's attention factor (Megatron-Core yarn_rotary_pos_embedding.py _yarn_get_concentration_factor, HF
/// _compute_yarn_parameters): rope_scaling.attention_factor when given; else with DeepSeek's mscale and
/// mscale_all_dim both given, get_mscale(factor, mscale) / get_mscale(factor, mscale_all_dim); else
/// get_mscale(factor) = 0.1 ln(factor) + 1 (1 for factor <= 1). Other rope types: 1.
double yarn_attention_factor(const HfReader& hf) {
  const json* scaling = hf.find("rope_scaling");
  if (!scaling) return 1.0;
  if (!scaling->is_object()) hf.fail("rope_scaling", config::render_value(*scaling), "expected an object");
  // factor and attention_factor must be positive; HF and Megatron treat an mscale or mscale_all_dim of 0
  // as not given (`if mscale and mscale_all_dim`; Megatron's yarn_mscale_all_dim defaults to 0).
  auto field = [&](const char* key, bool zero_is_absent = false) -> const json* {
    auto it = scaling->find(key);
    if (it == scaling->end() || it->is_null()) return nullptr;
    const bool number = it->is_number() && std::isfinite(it->get<double>());
    if (!number || it->get<double>() < 0 || (!zero_is_absent && it->get<double>() == 0)) {
      hf.fail(std::string("rope_scaling/") + key, config::render_value(*it), zero_is_absent ? "expected a number >= 0" : "expected a positive number");
    }
    return it->get<double>() == 0 ? nullptr : &*it;
  };
  auto type_of = [&]() -> std::string {
    for (const char* key : {"rope_type", "type"}) {
      auto it = scaling->find(key);
      if (it != scaling->end() && it->is_string()) return it->get<std::string>();
    }
    return "";
  };
  if (type_of() != "yarn") return 1.0;
  if (const json* given = field("attention_factor")) return given->get<double>();
  const json* factor = field("factor");
  const double f = factor ? factor->get<double>() : 1.0;
  auto get_mscale = [f](double mscale) { return f <= 1.0 ? 1.0 : 0.1 * mscale * std::log(f) + 1.0; };
  const json* mscale = field("mscale", true);
  const json* mscale_all_dim = field("mscale_all_dim", true);
  if (mscale && mscale_all_dim) return get_mscale(mscale->get<double>()) / get_mscale(mscale_all_dim->get<double>());
  return get_mscale(1.0);
}

bool gated_activation(const std::string& act, const std::string& model_type) {
  static const std::vector<std::string> gated = {"silu", "swish", "swiglu", "geglu"};
  if (std::find(gated.begin(), gated.end(), act) != gated.end()) return true;
  return model_type.rfind("gemma", 0) == 0;  // Gemma: GeGLU with gelu_pytorch_tanh
}

/// Which layers use the window, as the HF model classes decide it: an explicit `layer_types` list;
/// Gemma 3's `sliding_window_pattern` n (every n-th layer full); Gemma 2 (even layers sliding); Qwen2's
/// `max_window_layers` (layers from that index on slide); otherwise every layer (Mistral).
void read_sliding_window(const HfReader& hf, ModelSpec& model) {
  if (!hf.flag("use_sliding_window", true)) return;
  int window = hf.integer({"sliding_window"}, 0);
  if (window <= 0) return;
  model.sliding_window = window;
  model.sliding_layers.assign(model.layers, true);
  if (const json* types = hf.find("layer_types")) {
    if (!types->is_array() || static_cast<int>(types->size()) != model.layers) {
      hf.fail("layer_types", types->dump().substr(0, 60), "expected one entry per layer (num_hidden_layers)");
    }
    for (int i = 0; i < model.layers; ++i) {
      const json& type = (*types)[i];
      const std::string name = type.is_string() ? type.get<std::string>() : "";
      if (name != "sliding_attention" && name != "full_attention") {
        hf.fail("layer_types", type.dump().substr(0, 40), "expected \"sliding_attention\" or \"full_attention\" for layer " +
                                                              std::to_string(i));
      }
      model.sliding_layers[i] = name == "sliding_attention";
    }
  } else if (hf.find("sliding_window_pattern")) {
    const int pattern = hf.integer({"sliding_window_pattern"}, 1);
    for (int i = 0; i < model.layers; ++i) model.sliding_layers[i] = (i + 1) % pattern != 0;
  } else if (model.model_type == "gemma2") {
    for (int i = 0; i < model.layers; ++i) model.sliding_layers[i] = i % 2 == 0;
  } else if (hf.find("max_window_layers") && model.model_type.rfind("qwen", 0) == 0) {
    const int first = hf.integer({"max_window_layers"}, 0, 0);
    for (int i = 0; i < model.layers; ++i) model.sliding_layers[i] = i >= first;
  }
}

}  // namespace

ModelSpec model_from_hf_config(const json& config, const std::string& file) {
  HfReader hf(config, file);
  ModelSpec m;
  m.source = file;
  m.model_type = hf.text("model_type", "");
  m.name = hf.text("_name_or_path", hf.text("name", std::filesystem::path(file).stem().string()));
  m.hidden = hf.integer({"hidden_size", "n_embd", "d_model"}, -1);
  m.layers = hf.integer({"num_hidden_layers", "n_layer", "num_layers"}, -1);
  m.heads = hf.integer({"num_attention_heads", "n_head"}, -1);
  m.kv_heads = hf.integer({"num_key_value_heads", "num_query_groups"}, m.heads);
  m.head_dim = hf.integer({"head_dim", "kv_channels"}, 0);
  if (m.head_dim == 0) {
    if (m.hidden % m.heads != 0) hf.fail("num_attention_heads", std::to_string(m.heads), "does not divide hidden_size and no head_dim is given");
    m.head_dim = m.hidden / m.heads;
  }
  if (m.heads % m.kv_heads != 0) {
    hf.fail("num_key_value_heads", std::to_string(m.kv_heads), "expected a divisor of num_attention_heads (" + std::to_string(m.heads) + ")");
  }
  m.ffn = hf.integer({"intermediate_size", "n_inner", "ffn_hidden_size"}, 4 * m.hidden);
  m.vocab = hf.integer({"vocab_size", "padded_vocab_size"}, -1);
  const std::string act = hf.text("hidden_act", hf.text("activation_function", "silu"));
  m.gated_mlp = hf.flag("gated_linear_unit", gated_activation(act, m.model_type));
  m.tied_embeddings = hf.flag("tie_word_embeddings", false);
  const bool qwen2_family = m.model_type.rfind("qwen2", 0) == 0;
  m.attention_bias = hf.flag("attention_bias", hf.flag("add_bias_linear", qwen2_family));
  m.mlp_bias = hf.flag("mlp_bias", hf.flag("add_bias_linear", false));
  if (hf.text("position_embedding_type", "rope").find("learned") != std::string::npos) {
    m.learned_positions = hf.integer({"max_position_embeddings", "n_positions"}, -1);
  }
  read_sliding_window(hf, m);
  m.attention_sinks = hf.flag("attention_sinks", m.model_type == "gpt_oss");
  m.rope_attention_factor = yarn_attention_factor(hf);
  m.activation_clamp = hf.number("swiglu_limit", 0.0);
  m.mtp_layers = hf.integer({"num_nextn_predict_layers", "mtp_num_layers"}, 0, 0);

  if (hf.find("kv_lora_rank")) {
    m.mla = true;
    m.mla_shape.kv_lora_rank = hf.integer({"kv_lora_rank"}, -1);
    m.mla_shape.q_lora_rank = hf.integer({"q_lora_rank"}, 0, 0);
    m.mla_shape.qk_nope_head_dim = hf.integer({"qk_nope_head_dim"}, -1);
    m.mla_shape.qk_rope_head_dim = hf.integer({"qk_rope_head_dim"}, -1);
    m.mla_shape.v_head_dim = hf.integer({"v_head_dim"}, -1);
  }

  m.moe.experts = hf.integer({"num_local_experts", "n_routed_experts", "num_experts"}, 0, 0);
  if (m.moe.experts > 0) {
    m.moe.experts_per_token = hf.integer({"num_experts_per_tok", "experts_per_token", "moe_router_topk"}, -1);
    m.moe.expert_bias = m.model_type == "gpt_oss" || m.mlp_bias;
    if (m.moe.experts_per_token > m.moe.experts) {
      hf.fail("num_experts_per_tok", std::to_string(m.moe.experts_per_token), "expected at most the number of experts (" + std::to_string(m.moe.experts) + ")");
    }
    m.moe.expert_ffn = hf.integer({"moe_intermediate_size", "moe_ffn_hidden_size"}, m.ffn);
    int shared_count = hf.integer({"n_shared_experts", "num_shared_experts"}, 0, 0);
    const long long shared_ffn = static_cast<long long>(shared_count) * m.moe.expert_ffn;
    if (shared_ffn > kMaxDimension && !hf.find("shared_expert_intermediate_size")) {
      hf.fail("n_shared_experts", std::to_string(shared_count), "expected fewer shared experts (their combined width is over 16,777,216)");
    }
    m.moe.shared_ffn = hf.integer({"shared_expert_intermediate_size"}, static_cast<int>(std::min(shared_ffn, kMaxDimension)), 0);
    m.moe.first_dense_layers = hf.integer({"first_k_dense_replace"}, 0, 0);
    m.moe.layer_frequency = hf.integer({"moe_layer_freq", "decoder_sparse_step"}, 1);
    // Group-limited routing (DeepSeek-V3: 8 groups, top-4; Megatron-Core moe_router_num_groups and
    // moe_router_group_topk): the token's experts come from its best topk_group groups.
    m.moe.router_groups = hf.integer({"n_group", "moe_router_num_groups"}, 1);
    m.moe.router_group_topk = hf.integer({"topk_group", "moe_router_group_topk"}, m.moe.router_groups);
    if (m.moe.experts % m.moe.router_groups != 0) {
      hf.fail("n_group", std::to_string(m.moe.router_groups), "expected a divisor of the routed experts (" + std::to_string(m.moe.experts) + ")");
    }
    if (m.moe.router_group_topk > m.moe.router_groups ||
        m.moe.router_group_topk * (m.moe.experts / m.moe.router_groups) < m.moe.experts_per_token) {
      hf.fail("topk_group", std::to_string(m.moe.router_group_topk),
              "expected at most n_group (" + std::to_string(m.moe.router_groups) + ") groups holding at least the top-k (" +
                  std::to_string(m.moe.experts_per_token) + ") experts");
    }
  }
  if (m.layers <= 0 || m.hidden <= 0) hf.fail("num_hidden_layers", std::to_string(m.layers), "expected a positive integer");
  read_hybrid_config(config, file, m);  // hybrid_pattern.hpp: Mamba/attention patterns (Nemotron-H)
  return m;
}

std::filesystem::path default_presets_dir() {
  if (const char* dir = std::getenv("FMSIM_MODELS_DIR")) return dir;
  return FMSIM_DEFAULT_MODELS_DIR;
}

std::vector<std::string> preset_names(const std::filesystem::path& presets_dir) {
  std::vector<std::string> names;
  std::error_code ignored;
  for (const auto& entry : std::filesystem::directory_iterator(presets_dir, ignored)) {
    if (entry.path().extension() == ".json") names.push_back(entry.path().stem().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

bool is_model_path(const std::string& name_or_path) {
  return name_or_path.find('/') != std::string::npos || std::filesystem::path(name_or_path).extension() == ".json";
}

std::filesystem::path model_config_path(const std::string& name_or_path, const std::filesystem::path& presets_dir) {
  if (is_model_path(name_or_path)) return name_or_path;
  std::filesystem::path path = presets_dir / (name_or_path + ".json");
  std::error_code error;
  if (!std::filesystem::exists(path, error)) {
    std::string known;
    for (const auto& name : preset_names(presets_dir)) known += (known.empty() ? "" : ", ") + name;
    throw InputError("model '" + name_or_path + "': no such preset (known presets: " + known +
                     "; or give the path of a Hugging Face config.json)");
  }
  return path;
}

ModelSpec load_model(const std::string& name_or_path, const std::filesystem::path& presets_dir) {
  config::JsonFile file = config::load_json_file(model_config_path(name_or_path, presets_dir));
  ModelSpec model = model_from_hf_config(file.root, file.path);
  if (!is_model_path(name_or_path)) model.name = name_or_path;
  return model;
}

bool ModelSpec::layer_is_moe(int layer) const {
  if (hybrid.enabled()) return hybrid.kind(layer) == HybridLayer::moe;
  if (!is_moe() || layer < moe.first_dense_layers) return false;
  return (layer - moe.first_dense_layers) % moe.layer_frequency == 0;
}

int ModelSpec::attention_window(int layer) const {
  const bool windowed = sliding_window > 0 && layer < static_cast<int>(sliding_layers.size()) && sliding_layers[layer];
  return windowed ? sliding_window : 0;
}

int ModelSpec::moe_layers() const {
  int count = 0;
  for (int i = 0; i < layers; ++i) count += layer_is_moe(i) ? 1 : 0;
  return count;
}

int ModelSpec::q_dim() const {
  return mla ? heads * (mla_shape.qk_nope_head_dim + mla_shape.qk_rope_head_dim) : heads * head_dim;
}
int ModelSpec::kv_dim() const { return kv_heads * head_dim; }

double ModelSpec::attention_head_dim() const {
  return mla ? (mla_shape.qk_nope_head_dim + mla_shape.qk_rope_head_dim + mla_shape.v_head_dim) / 2.0 : head_dim;
}

}  // namespace fmsim::workload
