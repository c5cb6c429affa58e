// Recipe files (configs/recipes/): reading, variant selection and the merge under a scenario's settings.
#include "fmsim/workload/recipe.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <map>
#include <utility>
#include <vector>

#include <spdlog/spdlog.h>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::workload {
namespace {

using nlohmann::json;
using config::ObjectReader;

constexpr const char* kSchema = "fmsim.recipe/1";
constexpr const char* kPresetsSchema = "fmsim.recipe-presets/1";
/// Parallel sizes a variant may be selected by (`when`); the scenario's value, when given, must equal it.
/// global_batch_size selects only a scenario that gives it: Megatron-Bridge's performance configs come in
/// variants by batch size (V1 GBS 512, V2 GBS 1280) whose other settings may differ, and a scenario
/// that names no batch size gets the first variant that does not ask for one.
const std::vector<std::string> kLayoutKeys = {"tensor_model_parallel_size", "pipeline_model_parallel_size",
                                              "virtual_pipeline_model_parallel_size", "context_parallel_size",
                                              "expert_model_parallel_size", "global_batch_size"};
/// The training keys a precision preset is matched on.
const std::vector<std::string> kPrecisionKeys = {"precision", "fp8_recipe", "fp4_recipe"};

struct Fragments {
  json parallelism = json::object();
  json training = json::object();
  json not_modelled = json::object();
};

struct Variant {
  std::string name;
  std::vector<std::string> releases, gpus, precisions;
  std::vector<std::pair<std::string, int>> layout;
  Fragments fragments;
};

struct Release {
  std::string name, framework;
};

/// A pipeline layout of the model recipe for one PP x VP (applied when the merged settings have that
/// PP x VP and no layout of their own).
struct Layout {
  int pp = 1, vp = 1;
  std::string layout;
};

struct Recipe {
  std::string file;
  std::vector<Layout> layouts;
  std::vector<Release> releases;
  std::vector<std::pair<std::string, json>> presets;  ///< name -> training fragment, in file order
  Fragments common;
  std::vector<Variant> variants;
};

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

std::string join(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

/// A string or a non-empty array of strings.
std::vector<std::string> string_list(ObjectReader& r, const std::string& key) {
  if (!r.has(key)) return {};
  const json& value = r.required_value(key);
  std::vector<std::string> items;
  if (value.is_string()) items.push_back(value.get<std::string>());
  if (value.is_array()) {
    for (const auto& item : value) {
      if (!item.is_string() || item.get<std::string>().empty()) r.fail(key, "a string or a non-empty list of strings");
      items.push_back(item.get<std::string>());
    }
  }
  if (items.empty()) r.fail(key, "a string or a non-empty list of strings");
  return items;
}

json object_or_empty(ObjectReader& r, const std::string& key) {
  if (!r.has(key)) return json::object();
  const json& value = r.required_value(key);
  if (!value.is_object()) r.fail(key, "an object");
  if (value.contains("recipe")) r.fail(key, "settings without a nested \"recipe\"");
  return value;
}

Fragments read_fragments(ObjectReader& r) {
  return {object_or_empty(r, "parallelism"), object_or_empty(r, "training"), object_or_empty(r, "not_modelled")};
}

void read_source(ObjectReader& release) {
  ObjectReader source = release.required_object("source");
  source.required_string("repository");
  if (!source.has("ref") && !source.has("commit")) source.fail("commit", "the commit (or \"ref\": a tag or branch) the settings were read at");
  source.optional_string("ref");
  source.optional_string("commit");
  const json& files = source.required_value("files");
  if (!files.is_array() || files.empty() || !std::all_of(files.begin(), files.end(), [](const json& f) { return f.is_string(); })) {
    source.fail("files", "a non-empty list of the source files the settings come from");
  }
  source.optional_string("notes");
  source.reject_unknown_keys();
}

std::vector<std::pair<std::string, json>> read_presets(ObjectReader& root, const std::filesystem::path& recipe_path) {
  if (!root.has("precisions")) return {};
  const json& value = root.required_value("precisions");
  config::JsonFile file{root.file(), value};
  if (value.is_string()) {
    file = config::load_json_file(recipe_path.parent_path() / value.get<std::string>());
    ObjectReader presets_file(file.root, file.path);
    if (presets_file.string_or("schema", "") != kPresetsSchema) presets_file.fail("schema", std::string("\"") + kPresetsSchema + "\"");
  } else if (!value.is_object()) {
    root.fail("precisions", "the name of a presets file beside the recipe, or an object {\"presets\": {NAME: training settings}}");
  }
  ObjectReader r(file.root, file.path, value.is_string() ? "" : "/precisions");
  r.optional_string("schema");
  r.optional_string("description");
  if (r.has("source")) r.required_value("source");
  if (r.has("aliases")) r.required_value("aliases");  // the table names the validation maps (FP8 -> FP8-CS)
  ObjectReader presets = r.required_object("presets");
  std::vector<std::pair<std::string, json>> out;
  for (const auto& name : presets.keys()) {
    const json& fragment = presets.required_value(name);
    if (!fragment.is_object() || !fragment.contains("precision")) presets.fail(name, "training settings with \"precision\"");
    out.emplace_back(name, fragment);
  }
  r.reject_unknown_keys();
  return out;
}

Recipe load_recipe(const std::filesystem::path& path) {
  config::JsonFile file = config::load_json_file(path);
  ObjectReader root(file.root, file.path);
  Recipe recipe;
  recipe.file = file.path;
  if (root.string_or("schema", "") != kSchema) root.fail("schema", std::string("\"") + kSchema + "\"");
  root.optional_string("name");
  root.optional_string("description");
  root.optional_string("model");
  if (root.has("notes")) root.required_value("notes");
  const json& releases = root.required_value("releases");
  if (!releases.is_array() || releases.empty()) root.fail("releases", "a non-empty list of {\"release\", \"source\"}");
  for (std::size_t i = 0; i < releases.size(); ++i) {
    ObjectReader release(releases[i], file.path, "/releases/" + std::to_string(i));
    Release r{release.required_string("release"), release.string_or("framework", "")};
    read_source(release);
    if (release.has("notes")) release.required_value("notes");
    release.reject_unknown_keys();
    recipe.releases.push_back(r);
  }
  recipe.presets = read_presets(root, path);
  if (auto common = root.optional_object("common")) {
    recipe.common = read_fragments(*common);
    common->reject_unknown_keys();
  }
  if (root.has("layouts")) {
    const json& layouts = root.required_value("layouts");
    if (!layouts.is_array()) root.fail("layouts", "a list of {pipeline_model_parallel_size, virtual_pipeline_model_parallel_size, pipeline_model_parallel_layout}");
    for (std::size_t i = 0; i < layouts.size(); ++i) {
      ObjectReader l(layouts[i], file.path, "/layouts/" + std::to_string(i));
      Layout layout;
      layout.pp = static_cast<int>(l.required_int("pipeline_model_parallel_size", 1, 1 << 20));
      layout.vp = static_cast<int>(l.int_or("virtual_pipeline_model_parallel_size", 1, 1, 1 << 20));
      layout.layout = l.required_string("pipeline_model_parallel_layout");
      l.optional_string("source");
      l.reject_unknown_keys();
      recipe.layouts.push_back(layout);
    }
  }
  const json& variants = root.required_value("variants");
  if (!variants.is_array() || variants.empty()) root.fail("variants", "a non-empty list of variants");
  for (std::size_t i = 0; i < variants.size(); ++i) {
    ObjectReader v(variants[i], file.path, "/variants/" + std::to_string(i));
    Variant variant;
    variant.name = v.required_string("name");
    v.optional_string("source");
    if (v.has("notes")) v.required_value("notes");
    if (auto when = v.optional_object("when")) {
      variant.releases = string_list(*when, "release");
      for (const auto& name : variant.releases) {
        if (std::none_of(recipe.releases.begin(), recipe.releases.end(), [&](const Release& r) { return r.name == name; })) {
          when->fail("release", "releases listed in /releases (" + quote_for_message(name) + " is not)");
        }
      }
      variant.gpus = string_list(*when, "gpu");
      variant.precisions = string_list(*when, "precision");
      for (const auto& name : variant.precisions) {
        if (std::none_of(recipe.presets.begin(), recipe.presets.end(), [&](const auto& p) { return p.first == name; })) {
          when->fail("precision", "names of the recipe's precision presets (" + quote_for_message(name) + " is not one)");
        }
      }
      for (const auto& key : kLayoutKeys) {
        if (when->has(key)) variant.layout.emplace_back(key, static_cast<int>(when->required_int(key, 1, 1 << 20)));
      }
      when->reject_unknown_keys();
    }
    variant.fragments = read_fragments(v);
    const bool has_vp = std::any_of(variant.layout.begin(), variant.layout.end(),
                                    [](const auto& k) { return k.first == "virtual_pipeline_model_parallel_size"; });
    const bool has_pp = std::any_of(variant.layout.begin(), variant.layout.end(),
                                    [](const auto& k) { return k.first == "pipeline_model_parallel_size"; });
    if (variant.fragments.parallelism.contains("pipeline_model_parallel_layout") && !(has_pp && has_vp)) {
      v.fail("when", "pipeline_model_parallel_size and virtual_pipeline_model_parallel_size beside a "
                     "pipeline_model_parallel_layout (a layout holds for one PP x VP only)");
    }
    v.reject_unknown_keys();
    recipe.variants.push_back(std::move(variant));
  }
  root.reject_unknown_keys({"precisions", "common", "layouts"});
  return recipe;
}

bool gpu_matches(const std::vector<std::string>& gpus, const std::string& gpu_name) {
  if (gpus.empty()) return true;
  const std::string name = lower(gpu_name);
  return std::any_of(gpus.begin(), gpus.end(), [&](const std::string& g) {
    const std::string want = lower(g);
    return name == want || name.rfind(want + "-", 0) == 0;
  });
}

int layout_value(const json& parallelism, const std::string& key) {
  const json& value = parallelism.at(key);
  if (value.is_null() && key == "virtual_pipeline_model_parallel_size") return 1;
  return value.is_number_integer() ? value.get<int>() : -1;
}

bool layout_matches(const Variant& v, const json& parallelism) {
  return std::all_of(v.layout.begin(), v.layout.end(), [&](const auto& entry) {
    if (!parallelism.contains(entry.first)) return entry.first != "global_batch_size";
    return layout_value(parallelism, entry.first) == entry.second;
  });
}

/// The first of the variant's presets that agrees with every precision key the scenario gives ("" when
/// the variant names none; nullopt when none agrees).
std::optional<std::string> preset_for(const Variant& v, const Recipe& recipe, const json& training) {
  if (v.precisions.empty()) return std::string();
  for (const auto& name : v.precisions) {
    const json& preset = std::find_if(recipe.presets.begin(), recipe.presets.end(), [&](const auto& p) { return p.first == name; })->second;
    const bool agrees = std::all_of(kPrecisionKeys.begin(), kPrecisionKeys.end(), [&](const std::string& key) {
      return !training.contains(key) || (preset.contains(key) && preset.at(key) == training.at(key));
    });
    if (agrees) return name;
  }
  return std::nullopt;
}

std::string describe_variant(const Variant& v) {
  std::vector<std::string> parts;
  if (!v.releases.empty()) parts.push_back("releases " + join(v.releases, "/"));
  parts.push_back(v.gpus.empty() ? "any GPU" : join(v.gpus, "/"));
  parts.push_back(v.precisions.empty() ? "any precision" : join(v.precisions, "/"));
  for (const auto& [key, value] : v.layout) {
    const std::string shortname = key == "tensor_model_parallel_size"              ? "TP"
                                  : key == "pipeline_model_parallel_size"          ? "PP"
                                  : key == "virtual_pipeline_model_parallel_size"  ? "VP"
                                  : key == "context_parallel_size"                 ? "CP"
                                  : key == "global_batch_size"                     ? "GBS"
                                                                                   : "EP";
    parts.push_back(shortname + std::to_string(value));
  }
  return quote_for_message(v.name) + " (" + join(parts, ", ") + ")";
}

std::string describe_request(const std::string& gpu_name, const json& training, const json& parallelism) {
  std::vector<std::string> precision, layout;
  for (const auto& key : kPrecisionKeys) {
    if (training.contains(key)) precision.push_back(key + " " + config::render_value(training.at(key)));
  }
  for (const auto& key : kLayoutKeys) {
    if (parallelism.contains(key)) layout.push_back(key + " " + config::render_value(parallelism.at(key)));
  }
  return "GPU " + gpu_name + ", " + (precision.empty() ? "no precision given" : join(precision)) + ", " +
         (layout.empty() ? "no parallel sizes given" : join(layout));
}

std::vector<std::string> recipe_names(const std::filesystem::path& dir) {
  std::vector<std::string> names;
  std::error_code error;
  for (auto it = std::filesystem::recursive_directory_iterator(dir, error);
       !error && it != std::filesystem::recursive_directory_iterator(); it.increment(error)) {
    const auto& path = it->path();
    if (path.extension() != ".json" || path.stem().extension() == ".presets") continue;
    std::string name = std::filesystem::relative(path, dir, error).replace_extension().generic_string();
    if (!error) names.push_back(name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::filesystem::path recipe_path(const std::string& name, const std::string& where,
                                  const std::filesystem::path& base_dir, const std::filesystem::path& recipes_dir) {
  std::error_code error;
  if (std::filesystem::path(name).extension() == ".json") {
    const std::filesystem::path path = std::filesystem::path(name).is_absolute() || !std::filesystem::exists(base_dir / name, error)
                                           ? std::filesystem::path(name)
                                           : base_dir / name;
    return path;  // load_json_file names a missing file
  }
  const std::filesystem::path path = recipes_dir / (name + ".json");
  if (name.empty() || name.find("..") != std::string::npos || !std::filesystem::is_regular_file(path, error)) {
    throw InputError(where + ": no such recipe " + quote_for_message(name) + " in " + recipes_dir.string() +
                     " (known recipes: " + join(recipe_names(recipes_dir)) + "; or give the path of a recipe file)");
  }
  return path;
}

}  // namespace

std::filesystem::path default_recipes_dir() {
  if (const char* dir = std::getenv("FMSIM_RECIPES_DIR")) return dir;
  return FMSIM_DEFAULT_RECIPES_DIR;
}

std::optional<RecipeChoice> apply_recipe(json& document, const std::string& origin, const std::filesystem::path& base_dir,
                                         const std::string& gpu_name, const std::filesystem::path& recipes_dir) {
  if (!document.is_object() || !document.contains("training") || !document["training"].is_object() ||
      !document["training"].contains("recipe")) {
    return std::nullopt;
  }
  json& training = document["training"];
  const std::string where = origin + ": /training/recipe";
  if (!training["recipe"].is_string() || training["recipe"].get<std::string>().empty()) {
    throw InputError(where + " = " + config::render_value(training["recipe"]) +
                     ": expected a recipe name such as \"megatron-bridge/deepseek-v3@26.02\" or a recipe file path");
  }
  RecipeChoice choice;
  choice.reference = training["recipe"].get<std::string>();
  const auto at = choice.reference.rfind('@');
  const std::string name = at == std::string::npos ? choice.reference : choice.reference.substr(0, at);
  const std::string asked_release = at == std::string::npos ? "" : choice.reference.substr(at + 1);
  const Recipe recipe = load_recipe(recipe_path(name, where + " = " + quote_for_message(choice.reference), base_dir, recipes_dir));
  choice.file = recipe.file;
  const Release* release = &recipe.releases.back();
  if (!asked_release.empty()) {
    auto found = std::find_if(recipe.releases.begin(), recipe.releases.end(), [&](const Release& r) { return r.name == asked_release; });
    if (found == recipe.releases.end()) {
      std::vector<std::string> known;
      for (const auto& r : recipe.releases) known.push_back(r.name);
      throw InputError(where + " = " + quote_for_message(choice.reference) + ": " + recipe.file + " has no release " +
                       quote_for_message(asked_release) + " (releases: " + join(known) + ")");
    }
    release = &*found;
  }
  choice.release = release->name;
  choice.framework = release->framework;

  json scenario_training = training;
  scenario_training.erase("recipe");
  if (!document.contains("parallelism") || document["parallelism"].is_null()) document["parallelism"] = json::object();
  const json scenario_parallelism = document["parallelism"];
  if (!scenario_parallelism.is_object()) {  // read_parallelism names the malformed section
    training.erase("recipe");
    return choice;
  }

  const Variant* chosen = nullptr;
  std::string preset;
  for (const auto& v : recipe.variants) {
    if (!v.releases.empty() && std::find(v.releases.begin(), v.releases.end(), release->name) == v.releases.end()) continue;
    if (!gpu_matches(v.gpus, gpu_name) || !layout_matches(v, scenario_parallelism)) continue;
    if (auto name_of_preset = preset_for(v, recipe, scenario_training)) {
      chosen = &v;
      preset = *name_of_preset;
      break;
    }
  }
  if (chosen == nullptr) {
    std::vector<std::string> known;
    for (const auto& v : recipe.variants) {
      if (v.releases.empty() || std::find(v.releases.begin(), v.releases.end(), release->name) != v.releases.end()) {
        known.push_back(describe_variant(v));
      }
    }
    throw InputError(where + " = " + quote_for_message(choice.reference) + ": no variant of " + recipe.file + " at release " +
                     release->name + " fits " + describe_request(gpu_name, scenario_training, scenario_parallelism) +
                     " (variants: " + (known.empty() ? "none at this release" : join(known, "; ")) + ")");
  }
  choice.variant = chosen->name;

  // Recipe layers, later ones over earlier ones: the precision preset, the common settings, the variant
  // (with the parallel sizes it is selected by); then the scenario's own keys over all of them.
  json merged_training = json::object();
  if (!preset.empty()) {
    merged_training.merge_patch(std::find_if(recipe.presets.begin(), recipe.presets.end(), [&](const auto& p) { return p.first == preset; })->second);
  }
  merged_training.merge_patch(recipe.common.training);
  merged_training.merge_patch(chosen->fragments.training);
  merged_training.merge_patch(scenario_training);
  json merged_parallelism = recipe.common.parallelism;
  merged_parallelism.merge_patch(chosen->fragments.parallelism);
  for (const auto& [key, value] : chosen->layout) merged_parallelism[key] = value;
  merged_parallelism.merge_patch(scenario_parallelism);
  // The model recipe's layout for this PP x VP, unless the settings name one (or use the other layout
  // options, which Megatron rejects beside a layout).
  const auto size_of = [&](const char* key) {
    return merged_parallelism.contains(key) && merged_parallelism[key].is_number_integer() ? merged_parallelism[key].get<int>() : 1;
  };
  const bool other_options = merged_parallelism.contains("pipeline_model_parallel_layout") ||
                             merged_parallelism.contains("num_layers_in_first_pipeline_stage") ||
                             merged_parallelism.contains("num_layers_in_last_pipeline_stage") ||
                             merged_parallelism.contains("account_for_embedding_in_pipeline_split") ||
                             merged_parallelism.contains("account_for_loss_in_pipeline_split");
  const int pp = size_of("pipeline_model_parallel_size"), vp = size_of("virtual_pipeline_model_parallel_size");
  for (const auto& layout : recipe.layouts) {
    if (other_options || layout.pp != pp || layout.vp != vp) continue;
    merged_parallelism["pipeline_model_parallel_layout"] = layout.layout;
    break;
  }
  training = merged_training;
  document["parallelism"] = merged_parallelism;
  choice.not_modelled = recipe.common.not_modelled;
  choice.not_modelled.merge_patch(chosen->fragments.not_modelled);
  spdlog::info("recipe {} (release {}, variant '{}'{}){}", choice.reference, choice.release, choice.variant,
               choice.framework.empty() ? "" : ", framework " + choice.framework,
               choice.not_modelled.empty() ? "" : "; not modelled: " + choice.not_modelled.dump());
  return choice;
}

}  // namespace fmsim::workload
