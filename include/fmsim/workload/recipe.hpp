#pragma once
// Published training recipes as data (configs/recipes/, docs/formats.md "Recipe files"): a scenario's
// `training.recipe` ("megatron-bridge/deepseek-v3@26.02", or a file path with an optional @release) names
// a recipe file; the variant that fits the scenario's GPU, precision and layout is merged under the
// scenario's own `parallelism` and `training` (the scenario's keys win).
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace fmsim::workload {

/// What a scenario's recipe reference resolved to (kept on the Scenario, logged at info level).
struct RecipeChoice {
  std::string reference;  ///< the scenario's `training.recipe` value
  std::string file;       ///< the recipe file read
  std::string release;    ///< the release used (the reference's @release, else the file's last)
  std::string variant;    ///< the chosen variant's name
  /// The stack the release runs on ("megatron-bridge@26.02"), for `training.framework` (issue #25
  /// item 1): a scenario's own `training.framework` wins. Empty when the release names none.
  std::string framework;
  nlohmann::json not_modelled = nlohmann::json::object();  ///< recipe settings fmsim does not model (Megatron names)
};

/// configs/recipes/ of the source tree, or $FMSIM_RECIPES_DIR.
std::filesystem::path default_recipes_dir();

/// When `document` (a training scenario) has `training.recipe`: loads the recipe, picks the variant for
/// `gpu_name` (the cluster's catalog GPU) and the document's precision and parallel layout, and merges the
/// recipe's `parallelism` and `training` settings under the document's (JSON merge patch: the document's
/// keys win, null removes a recipe key). The `recipe` key itself is removed from `training`; everything
/// else is left as merged. Returns nothing when there is no recipe. Throws InputError naming the
/// scenario, the recipe, what was asked and the variants that exist when none fits, and naming the
/// recipe file and key for a malformed recipe.
std::optional<RecipeChoice> apply_recipe(nlohmann::json& document, const std::string& origin,
                                         const std::filesystem::path& base_dir, const std::string& gpu_name,
                                         const std::filesystem::path& recipes_dir = default_recipes_dir());

}  // namespace fmsim::workload
