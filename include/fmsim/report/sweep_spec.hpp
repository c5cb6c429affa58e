#pragma once
// Sweep files (schema fmsim.sweep/1): a scenario, the command that evaluates it, and the points to
// evaluate: a grid (every combination of values per --set path) and/or a list of explicit points.
// Points are numbered in a fixed order so that shards and resumed runs agree on them.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/report/scenario_job.hpp"

namespace fmsim::report {

/// The result metric a sweep ranks its points by: a dotted path into the command's JSON result and
/// whether more is better. Default per command (sweep_best_default): run tokens_per_s_per_gpu, serve
/// output_tokens_per_s_per_gpu, checkpoint goodput, all maximised.
struct SweepBest {
  std::string metric;
  bool maximize = true;
};

/// The default ranking metric of a command ("run", "serve", "checkpoint") or a result schema
/// ("fmsim.run/1", ...).
SweepBest sweep_best_default(const std::string& command_or_schema);

struct SweepSpec {
  std::string file;
  ScenarioJob job;                      ///< its sets apply to every point first
  std::vector<nlohmann::json> points;   ///< each an object {path: value}, in index order
  SweepBest best;                       ///< "best": {"metric": PATH, "goal": "max"|"min"}, else the default
};

/// Reads a sweep file and expands its grid (keys in file order, the last varying fastest) followed by
/// its explicit points. Throws InputError naming the file and key.
SweepSpec load_sweep(const std::filesystem::path& path);

/// "--set" assignments for one point (values rendered as JSON, strings as themselves).
std::vector<std::string> point_assignments(const nlohmann::json& point);

/// The shard of point `index` among `count` shards (round robin, so shards get similar mixes).
inline bool in_shard(std::size_t index, int shard_index, int shard_count) {
  return static_cast<int>(index % static_cast<std::size_t>(shard_count)) == shard_index;
}

}  // namespace fmsim::report
