#pragma once
// The candidates of a search: every layout the spec's space allows on every candidate cluster, pruned
// by Megatron's divisibility rules (workload::validate), by the memory estimate (workload::estimate_memory
// against the HBM limit) and by the spec's limits, the survivors timed by the analytic tier.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fmsim/hardware/catalog.hpp"
#include "fmsim/search/analytic_step.hpp"
#include "fmsim/search/search_spec.hpp"
#include "fmsim/workload/scenario.hpp"

namespace fmsim::search {

struct Candidate {
  int cluster = 0;                 ///< index into SearchSpec::clusters
  int nodes = 0, gpus = 0;
  std::string instance_type, gpu;
  workload::Parallelism parallelism;
  workload::Recompute recompute = workload::Recompute::none;
  workload::Sharding sharding = workload::Sharding::optim;
  workload::MoeDispatcher dispatcher = workload::MoeDispatcher::alltoall;
  bool tp_comm_overlap = false, overlap_grad_reduce = true;
  double memory_bytes = 0, hbm_bytes = 0;
  AnalyticStep analytic;
  double step_s = 0;               ///< the analytic step, or the simulated one once re-simulated
  bool simulated = false;
  std::vector<std::pair<std::string, double>> terms;  ///< breakdown of step_s (analytic or simulated)
  double usd_per_hour = 0;         ///< 0 = the instance has no price
  double tokens_per_s_per_gpu = 0, steps = 0, time_to_train_s = 0, usd_total = 0;
  /// Re-simulated with a checkpoint section: the goodput fmsim run assessed (time to train includes it).
  std::optional<double> goodput;
  /// "TP8 PP8 VP4 CP2 DP4 mb1 gb512 recompute none" (the layout, without the cluster)
  std::string layout() const;
  /// The label of the cluster: "128 x p5.48xlarge"
  std::string where() const;
};

/// Why candidates were dropped, in the order the pruning applies, and the closest one each time.
struct Pruning {
  long long enumerated = 0, ranked = 0;
  std::vector<std::pair<std::string, long long>> dropped;   ///< limit -> candidates dropped by it
  std::map<std::string, std::string> closest;               ///< limit -> "the nearest miss and by how much"
};

using Progress = std::function<void(const std::string& stage, long long done, long long total)>;

/// A scenario for one candidate cluster: the spec's base scenario on `nodes` nodes of cluster `index`,
/// with a neutral layout (TP1 PP1 CP1, no pipeline layout) the candidates then overwrite.
workload::Scenario base_scenario(const SearchSpec& spec, int index, int nodes, const hardware::Catalog& catalog);

/// Puts a candidate's layout and switches into `s` (the base scenario of its cluster).
void apply(const Candidate& c, workload::Scenario& s);

/// The candidate's scenario document, ready for `fmsim run` (the base scenario file with its cluster and
/// layout replaced; relative paths made absolute).
nlohmann::json scenario_document(const SearchSpec& spec, const Candidate& c);

/// Enumerates, prunes and times every candidate; returns the survivors (unsorted). Throws InputError
/// naming the limit that excluded everything and the closest candidate when none survives.
std::vector<Candidate> evaluate_candidates(const SearchSpec& spec, const hardware::Catalog& catalog, Pruning& pruning,
                                           const Progress& progress);

/// Fills the run totals (tokens/s/GPU, steps, time to train and $) from `step_s`.
void fill_totals(const SearchSpec& spec, const workload::Scenario& s, Candidate& c);

}  // namespace fmsim::search
