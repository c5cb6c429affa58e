#pragma once
// Run times of scenario jobs in `fmsim cluster` (a trace line with "scenario" and "steps"): the job's
// training step simulated on the nodes it was given, on the whole cluster's fabric, times its steps.
#include <array>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "fmsim/cluster/job_trace.hpp"
#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::cluster {

/// The training scenario `scenario` (a file) moved onto `nodes` (node indices) of the cluster `cluster_file`
/// (loaded as `spec`): its data-parallel size from the nodes' GPUs, its ranks in the order of the nodes (TP
/// and the other inner groups inside a node, as Megatron orders them), traced for every rank when
/// `all_ranks` (full fidelity) or symmetric (unset: the scenario's own fidelity). `origin` names it in
/// messages. InputError when TP x PP x CP
/// does not divide the GPUs or the scenario does not fit in memory.
workload::Trace trace_on_nodes(const std::filesystem::path& cluster_file, const topology::ClusterSpec& spec, const std::string& scenario,
                               const std::vector<int>& nodes, const hardware::Catalog& catalog, const std::string& origin, std::optional<bool> all_ranks);

/// How `fmsim cluster --contention` prices jobs that share leaf uplinks: `fast` replays each job's own
/// step (fast fidelity) with its cross-leaf traffic at the expected uplink share the others leave it
/// (random phases, uplink_sharing.hpp); `aligned` the same with every other job's transfers coinciding
/// with its own (an upper bound: jobs started together with identical steps); `full` replays the jobs
/// together at full fidelity from a common start (training/shared_fabric.hpp).
enum class ContentionModel { fast, aligned, full };

class ScenarioTiming {
 public:
  /// `cluster_file`, loaded as `spec`: the topology `fmsim cluster` runs on (every scenario is moved onto
  /// it). Its graph is built on the first scenario job, so traces without one pay nothing for it.
  ScenarioTiming(const std::filesystem::path& cluster_file, topology::ClusterSpec spec, const hardware::Catalog& catalog);

  /// Seconds `job` runs on `nodes` without failures. Memoized per scenario and placement shape (how many
  /// of its nodes sit under each leaf switch or NVLink domain). InputError when the scenario does not fit
  /// the job's GPUs (TP x PP x CP must divide them) or does not fit in memory.
  double duration(const JobSpec& job, const std::vector<int>& nodes);

  /// One step of the job's scenario at that placement (memoized), in seconds.
  double step_s(const JobSpec& job, const std::vector<int>& nodes);
  int simulations() const { return simulations_; }

  /// For scenario jobs running together (each on its nodes): each one's step alone over its step beside
  /// the others, by the contention model (full: both at full fidelity on the engine,
  /// training/shared_fabric.hpp; fast: fast_contention_factors). Memoized per
  /// neighbourhood shape: each job's scenario and how many of its nodes sit under each leaf switch, the
  /// switches numbered in order of first use (the rails are alike, so the same shape shares the same links
  /// the same way). A neighbourhood too large to simulate at full fidelity in the memory available runs
  /// without contention (factors 1), with a warning.
  std::vector<double> contention_factors(const std::vector<const JobSpec*>& jobs, const std::vector<std::vector<int>>& nodes);
  int contention_simulations() const { return contention_simulations_; }
  void set_contention_model(ContentionModel model) { contention_model_ = model; }
  ContentionModel contention_model() const { return contention_model_; }
  /// Step replays the fast model ran (each job of a neighbourhood alone, then at its shares; memoized).
  int fast_replays() const { return fast_replays_; }
  /// Neighbourhoods whose full-fidelity simulation would not fit in memory: they run without contention.
  int contention_skipped() const { return contention_skipped_; }

 private:
  /// The fast model (fast_contention.cpp): each job alone at fast fidelity gives its step, its rail bytes,
  /// the share crossing leaves and the duty of those transfers; then, to a fixed point, each job's uplink
  /// stretch beside the others' duties (the slowest of its leaves), its rail share, and its step replayed
  /// at that share. Returns each job's step alone over its shared step, in the order given.
  std::vector<double> fast_contention_factors(const std::vector<const JobSpec*>& jobs, const std::vector<std::vector<int>>& nodes);
  struct FastReplay {
    double step_s = 0;
    double time_share = 0;    ///< of its network transfers' time, the share that crosses leaves
    double demand_share = 0;  ///< while a crossing transfer is in flight, the share of its rail that crosses
    double duty = 0;          ///< time with a crossing transfer in flight over the step
    /// demand_share per leaf the job spans (leaves numbered in order of first use over its nodes)
    std::map<int, double> leaf_demand_share;
  };
  FastReplay fast_replay(const JobSpec& job, const std::vector<int>& nodes, double rail_scale);
  /// The job's leaf groups numbered in order of first use over its nodes (the memo's numbering).
  std::map<int, int> leaf_order(const std::vector<int>& nodes) const;

  std::filesystem::path cluster_file_;
  const hardware::Catalog& catalog_;
  topology::ClusterSpec spec_;
  std::optional<topology::ClusterGraph> graph_;
  std::map<std::pair<std::string, std::vector<int>>, double> memo_;
  int simulations_ = 0;
  /// per job (scenario, per leaf: renumbered leaf, its nodes there, nodes under the leaf) -> factors
  std::map<std::vector<std::pair<std::string, std::vector<std::array<int, 3>>>>, std::vector<double>> contention_memo_;
  int contention_simulations_ = 0;
  int contention_skipped_ = 0;
  ContentionModel contention_model_ = ContentionModel::fast;
  /// (scenario, each node's leaf and NVLink domain in order, renumbered; share grid point) -> replay
  std::map<std::tuple<std::string, std::vector<std::pair<int, int>>, long long>, FastReplay> fast_memo_;
  int fast_replays_ = 0;
};

}  // namespace fmsim::cluster
