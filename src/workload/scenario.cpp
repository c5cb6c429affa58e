// Scenario files: reading, --set overrides, and expansion of cluster/model references.
#include "fmsim/workload/scenario.hpp"

#include <algorithm>
#include <limits>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/recipe.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;

std::filesystem::path resolve_path(const std::string& text, const std::filesystem::path& base_dir) {
  std::filesystem::path path = text;
  if (path.is_absolute()) return path;
  std::error_code error;  // a name too long for the system is reported when the file is opened
  if (std::filesystem::exists(base_dir / path, error)) return base_dir / path;
  return path;  // relative to the working directory; load_json_file names it if missing
}

/// FP8 attention (training.fp8_dot_product_attention) where fmsim models it: cuDNN's fused FP8 kernels in
/// FP8 layers (docs/model.md); each refusal says why.
void validate_fp8_attention(const Scenario& s, const std::string& origin) {
  const auto& t = s.training;
  if (!t.fp8_dot_product_attention) return;
  const std::string key = origin + ": /training/fp8_dot_product_attention = true: ";
  if (t.precision != Precision::fp8) {
    throw InputError(key + "only with precision = \"fp8\" (FP8 attention runs in the FP8 layers; with FP4 layers, which "
                     "Megatron also passes it to, it is not modelled)");
  }
  if (s.framework.attention != AttentionKernel::fused) {
    throw InputError(key + "FP8 attention is cuDNN's fused kernel; stack " + s.framework.display_name + " runs " +
                     (s.framework.attention == AttentionKernel::unfused ? "unfused" : "FlashAttention-2") + " attention (expected false)");
  }
  if (s.model.attention_head_dim() > 128) {
    throw InputError(key + s.model.name + "'s attention heads are " + std::to_string(static_cast<int>(s.model.attention_head_dim())) +
                     " wide (mean of Q/K and V); cuDNN's FP8 attention is modelled up to 128 (its backward at MLA's 192/128 runs "
                     "0.58-0.64 of BF16's time, which fmsim's curve does not give; expected false)");
  }
  bool windowed = false;
  for (int layer = 0; layer < s.model.layers; ++layer) windowed = windowed || s.model.attention_window(layer) > 0;
  if (windowed && s.cluster.gpu.sm_version < 100) {
    throw InputError(key + s.model.name + " has sliding-window layers and the " + s.cluster.gpu.name +
                     " is not Blackwell: Transformer Engine turns fused attention off for FP8 with a window below sm 10.0 "
                     "(dot_product_attention/utils.py), and its fallback is not modelled (expected false)");
  }
  if (t.recompute == Recompute::selective && t.recompute_modules.core_attn) {
    throw InputError(key + "with core_attn in recompute_modules: Megatron recomputes core attention through "
                     "tensor_parallel.checkpoint, which does not re-enter Transformer Engine's FP8 autocast, so whether the "
                     "recomputed attention and its backward run in FP8 is not established (expected false, or drop core_attn)");
  }
}

}  // namespace

/// "cluster": "file.json" or {"base": "file.json", overrides...} or an inline cluster object.
json expand_cluster(const json& value, const std::string& origin, const std::filesystem::path& base_dir) {
  if (value.is_string()) return expand_cluster(json{{"base", value}}, origin, base_dir);
  if (!value.is_object()) {
    throw InputError(origin + ": /cluster = " + config::render_value(value) +
                     ": expected a topology file name or an object (a cluster, or {\"base\": FILE, overrides})");
  }
  if (!value.contains("base")) return value;
  if (!value["base"].is_string()) throw InputError(origin + ": /cluster/base: expected the path of a topology file");
  json merged = config::load_json_file(resolve_path(value["base"].get<std::string>(), base_dir)).root;
  json overrides = value;
  overrides.erase("base");
  merged.merge_patch(overrides);
  return merged;
}

ModelSpec expand_model(const json& value, const std::string& origin, const std::filesystem::path& base_dir) {
  if (value.is_string()) return expand_model(json{{"base", value}}, origin, base_dir);
  if (!value.is_object()) {
    throw InputError(origin + ": /model = " + config::render_value(value) +
                     ": expected a preset name, a config.json path, or an object");
  }
  if (!value.contains("base")) return model_from_hf_config(value, origin + ": /model");
  if (!value["base"].is_string()) throw InputError(origin + ": /model/base: expected a preset name or a config.json path");
  const std::string base = value["base"].get<std::string>();
  const bool is_path = is_model_path(base);
  config::JsonFile file =
      config::load_json_file(is_path ? resolve_path(base, base_dir) : model_config_path(base, default_presets_dir()));
  json overrides = value;
  overrides.erase("base");
  file.root.merge_patch(overrides);
  ModelSpec model = model_from_hf_config(file.root, overrides.empty() ? file.path : origin + ": /model");
  if (!is_path) model.name = base;
  return model;
}

void apply_set(json& root, const std::string& assignment) {
  if (!config::is_valid_utf8(assignment)) throw InputError("--set: the assignment is not valid UTF-8");
  const auto equals = assignment.find('=');
  if (equals == std::string::npos || equals == 0) {
    throw InputError("--set " + quote_for_message(assignment) +
                     ": expected PATH=VALUE, e.g. parallelism.tensor_model_parallel_size=4 (PATH=null removes a key)");
  }
  const std::string path = assignment.substr(0, equals), text = assignment.substr(equals + 1);
  if (std::count_if(text.begin(), text.end(), [](char c) { return c == '[' || c == '{'; }) > 256) {
    throw InputError("--set " + quote_for_message(assignment) + ": a value nested deeper than any scenario needs");
  }
  json value = json::parse(text, nullptr, false);
  if (value.is_discarded()) value = text;
  // null removes the key (JSON merge-patch semantics). Under an object that names a "base" file, the
  // null stays: merging it into the base removes the key from what the base file says.
  const bool remove = value.is_null();
  // Under a scenario that names a recipe (training.recipe), a null in `training` or `parallelism` stays
  // too: merged over the recipe it removes the recipe's setting (recipe_loader.cpp).
  const bool recipe_section = (path.rfind("training.", 0) == 0 || path.rfind("parallelism.", 0) == 0) &&
                              path != "training.recipe" && root.is_object() && root.contains("training") &&
                              root["training"].is_object() && root["training"].contains("recipe") &&
                              root["training"]["recipe"].is_string();
  bool under_base = recipe_section;
  json* node = &root;
  std::size_t start = 0;
  while (true) {
    const auto dot = path.find('.', start);
    const std::string key = path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (key.empty()) throw InputError("--set " + quote_for_message(assignment) + ": empty key in the path");
    if (!node->is_object()) {
      throw InputError("--set " + quote_for_message(assignment) + ": '" + path.substr(0, start ? start - 1 : 0) +
                       "' is not an object");
    }
    under_base = under_base || node->contains("base");
    if (dot == std::string::npos) {
      if (!remove || under_base) {
        (*node)[key] = value;
      } else if (!node->erase(key)) {
        throw InputError("--set " + quote_for_message(assignment) + ": there is no key '" + path + "' to remove");
      }
      return;
    }
    if (remove && !under_base && !node->contains(key)) {
      throw InputError("--set " + quote_for_message(assignment) + ": there is no key '" + path + "' to remove");
    }
    node = &(*node)[key];
    if (node->is_null()) *node = json::object();
    start = dot + 1;
  }
}

config::JsonFile load_scenario_document(const std::filesystem::path& path, const std::vector<std::string>& sets,
                                        const std::string& kind) {
  config::JsonFile file = config::load_json_file(path);
  if (!file.root.is_object()) throw InputError(file.path + ": expected a JSON object (a " + kind + ")");
  // References become objects first, so "--set cluster.nodes=32" or "--set model.num_hidden_layers=4" work.
  for (const char* key : {"cluster", "model"}) {
    if (file.root.contains(key) && file.root[key].is_string()) file.root[key] = json{{"base", file.root[key]}};
  }
  for (const auto& assignment : sets) apply_set(file.root, assignment);
  return file;
}

Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& sets,
                       const hardware::Catalog& catalog) {
  config::JsonFile file = load_scenario_document(path, sets, "training scenario");
  return scenario_from_json(file.root, file.path, path.parent_path(), catalog);
}

Scenario scenario_from_json(json document, const std::string& origin, const std::filesystem::path& base_dir,
                            const hardware::Catalog& catalog) {
  Scenario s;
  s.file = origin;
  s.base_dir = base_dir;
  s.resolved = document;
  config::ObjectReader root(document, origin);
  root.optional_string("schema");
  root.optional_string("description");
  s.name = root.string_or("name", std::filesystem::path(origin).stem().string());
  const json& cluster_value = root.required_value("cluster");
  s.cluster = topology::cluster_from_json(expand_cluster(cluster_value, origin, base_dir), origin + ": /cluster",
                                          "cluster", catalog);
  s.model = expand_model(root.required_value("model"), origin, base_dir);
  // A published recipe (training.recipe) under the scenario's own settings: its variant is picked by the
  // cluster's GPU and the scenario's precision and layout (recipe_loader.cpp).
  s.recipe = apply_recipe(document, origin, base_dir, s.cluster.gpu.name);
  // Then the stack: its defaults fill only the keys that neither the scenario nor its recipe set (the
  // scenario wins over the recipe, the recipe over the stack). The scenario's own training.framework wins;
  // without one, the recipe's release names the stack.
  if (document.is_object() && document.contains("training") && document["training"].is_object() &&
      document["training"].contains("framework")) {
    const json& value = document["training"]["framework"];
    if (!value.is_string()) {
      throw InputError(origin + ": at /training/framework: found " + config::render_value(value) +
                       ", expected a stack name such as \"torchtitan\" or \"torchtitan@2025-03\" (configs/stacks)");
    }
    s.framework = load_framework(value.get<std::string>(), origin, default_stacks_dir());
    apply_framework_defaults(s.framework, document);
  } else if (s.recipe && !s.recipe->framework.empty()) {
    s.framework = load_framework(s.recipe->framework, origin + " (training.recipe " + s.recipe->reference + ")",
                                 default_stacks_dir());
    apply_framework_defaults(s.framework, document);
  }
  if (s.recipe) {
    s.resolved = document;
    s.resolved["training"]["recipe"] = s.recipe->reference;
  }
  config::ObjectReader training = root.required_object("training");
  training.optional_string("framework");  // read above
  // torch.compile is an option of a run on a PyTorch-native stack; the stack's release gives the default.
  s.framework.torch_compile = training.bool_or("torch_compile", s.framework.torch_compile);
  s.training = read_training(training);
  if (s.framework.selective_recompute == SelectiveRecompute::torch_op_sac && s.training.recompute == Recompute::selective) {
    // The stack's selective recompute is PyTorch's op-level policy (op_recompute.cpp), not Megatron's modules.
    if (document["training"].contains("recompute_modules")) {
      throw InputError(origin + ": /training/recompute_modules: stack " + s.framework.display_name +
                       " recomputes by its op-level policy under recompute_granularity \"selective\"; expected no recompute_modules");
    }
    s.training.recompute_modules = RecomputeModules{false, false, false, false, false, false};
  }
  if (s.training.mtp_num_layers >= 0) s.model.mtp_layers = s.training.mtp_num_layers;
  config::ObjectReader parallelism = root.required_object("parallelism");
  s.placement = topology::parse_placement_policy(parallelism.string_or("placement", "packed"));
  s.seed = static_cast<std::uint64_t>(parallelism.int_or("placement_seed", 0, 0, std::numeric_limits<std::int64_t>::max()));
  s.parallelism = read_parallelism(parallelism, s.cluster.total_gpus());
  if (auto simulation = root.optional_object("simulation")) {
    s.fidelity = simulation->choice_or("fidelity", {"fast", "full"}, "fast") == "full" ? Fidelity::full : Fidelity::fast;
    simulation->reject_unknown_keys();
  }
  // Sections read by other parts (storage: checkpoint plan and failure model) from `resolved`.
  root.reject_unknown_keys({"checkpoint", "failures"});
  validate(s.parallelism, s.training, s.model, s.cluster.gpu, origin);
  validate_fp8_attention(s, origin);
  if (s.framework.attention == AttentionKernel::unfused && s.parallelism.cp > 1) {
    throw InputError(origin + ": /parallelism/context_parallel_size = " + std::to_string(s.parallelism.cp) + ": stack " +
                     s.framework.display_name + " runs unfused attention, which has no context parallelism (expected 1)");
  }
  return s;
}

}  // namespace fmsim::workload
