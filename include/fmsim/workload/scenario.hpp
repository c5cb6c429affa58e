#pragma once
// A training scenario file (configs/training/*.json): cluster, model, parallel strategy, training
// options, with `--set path=value` overrides applied first. The resolved document (after overrides,
// with cluster and model references expanded into {"base": ..., overrides}) is kept to echo in results.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/config/json_file.hpp"
#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/workload/framework.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/parallelism.hpp"
#include "fmsim/workload/recipe.hpp"

namespace fmsim::workload {

enum class Fidelity { fast, full };

struct Scenario {
  std::string file;
  std::filesystem::path base_dir;  ///< where relative cluster and model paths of `resolved` resolve
  std::string name;
  nlohmann::json resolved;
  topology::ClusterSpec cluster;
  ModelSpec model;
  Parallelism parallelism;
  TrainingOptions training;
  Framework framework;  ///< training.framework (framework.hpp); default: current Megatron-Core
  topology::PlacementPolicy placement = topology::PlacementPolicy::packed;
  std::uint64_t seed = 0;
  Fidelity fidelity = Fidelity::fast;
  /// The published recipe merged under the scenario (`training.recipe`), if any. Its `framework`
  /// ("megatron-bridge@26.02") is the stack for `training.framework` when the scenario names none.
  std::optional<RecipeChoice> recipe;
};

/// Applies one "a.b.c=value" override to a JSON document. The value is JSON when it parses as JSON
/// (numbers, true/false, objects), else a string. Intermediate objects are created as needed.
/// "a.b.c=null" (what --unset a.b.c passes) removes the key; under an object with a "base" file the
/// null is kept, so that merging it removes the key from the base too (JSON merge patch); the same under
/// `training` and `parallelism` of a scenario that names a recipe (training.recipe).
/// Throws InputError for a malformed assignment, a path through a non-object, or nothing to remove.
void apply_set(nlohmann::json& root, const std::string& assignment);

/// A scenario's "cluster" value (a topology file name, {"base": FILE, overrides...} or an inline
/// cluster) as one cluster document; relative paths resolve against `base_dir`.
nlohmann::json expand_cluster(const nlohmann::json& value, const std::string& origin, const std::filesystem::path& base_dir);
/// A scenario's "model" value (a preset name, a config.json path, {"base": ..., overrides} or inline).
ModelSpec expand_model(const nlohmann::json& value, const std::string& origin, const std::filesystem::path& base_dir);

/// A scenario file (training or serving) as JSON with `sets` applied, cluster and model references
/// turned into {"base": ...} objects first so that overrides can reach inside them. `kind` names the
/// document in the error for a file that is not a JSON object.
config::JsonFile load_scenario_document(const std::filesystem::path& path, const std::vector<std::string>& sets,
                                        const std::string& kind);

/// Loads a scenario file, applies the overrides in order and resolves everything against the catalog.
Scenario load_scenario(const std::filesystem::path& path, const std::vector<std::string>& sets,
                       const hardware::Catalog& catalog);

/// The same from a document in memory (e.g. embedded in a trace); `base_dir` resolves relative paths.
Scenario scenario_from_json(nlohmann::json document, const std::string& origin, const std::filesystem::path& base_dir,
                            const hardware::Catalog& catalog);

}  // namespace fmsim::workload
