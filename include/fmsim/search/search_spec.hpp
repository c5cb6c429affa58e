#pragma once
// Search files (schema fmsim.search/1, docs/formats.md): a base training scenario (model, sequence,
// precision), the candidate clusters (topology files and node counts or a GPU range), the run (tokens or
// steps, global batch sizes), the limits, the layout space and what to optimise.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/config/object_reader.hpp"

namespace fmsim::search {

enum class Objective { time, cost, tokens_per_gpu, pareto };

struct ClusterChoice {
  std::string label;               ///< the topology file's stem, e.g. "p5-16node"
  nlohmann::json cluster;          ///< the scenario's "cluster" value without "nodes" ({"base": ABSOLUTE, ...})
  std::vector<int> nodes;          ///< node counts to try
};

/// The layout space: every value a knob may take (empty = the knob's defaults for the model).
struct Space {
  std::vector<int> tp, pp, vp, cp, ep, etp, micro_batch;
  std::vector<std::string> recompute, sharding, dispatcher;
  std::vector<bool> tp_comm_overlap, overlap_grad_reduce;
};

struct Limits {
  double hbm_fraction = 1.0;                ///< of each GPU's HBM the estimate may use
  std::optional<double> max_usd, max_usd_per_hour, deadline_s, max_gpus, min_gpus;
  std::optional<double> min_tokens_per_s_per_gpu;
  /// Goodput under the base scenario's checkpoint plan and failure model, known for re-simulated
  /// candidates only (fmsim run's checkpoint assessment); candidates below it rank after those above.
  std::optional<double> min_goodput;
};

struct SearchSpec {
  std::string file, name, description;
  std::filesystem::path scenario;           ///< base training scenario, resolved against the file
  std::vector<ClusterChoice> clusters;
  double total_tokens = 0;                  ///< the run; 0 = given as train_iters
  long long train_iters = 0;
  std::vector<int> global_batch;            ///< empty = the base scenario's
  Space space;
  Limits limits;
  Objective objective = Objective::time;
  int top = 20;                             ///< rows in the ranked table
  int resimulate = 20;                      ///< best candidates re-simulated with contention (0 = none)
};

/// A sorted list of distinct integers in [minimum, maximum] at `key` (empty when absent); InputError
/// naming the key otherwise.
std::vector<int> read_int_list(config::ObjectReader& reader, const std::string& key, int minimum, int maximum);

/// Reads and checks a search file. Throws InputError naming the file, key, value and what was expected
/// (contradictory limits included: min_gpus above max_gpus, a deadline or $ limit without a run length).
SearchSpec load_search(const std::filesystem::path& path);

std::string to_string(Objective objective);

}  // namespace fmsim::search
