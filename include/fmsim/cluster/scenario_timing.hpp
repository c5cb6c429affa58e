#pragma once
// Run times of scenario jobs in `fmsim cluster` (a trace line with "scenario" and "steps"): the job's
// training step simulated on the nodes it was given, on the whole cluster's fabric, times its steps.
#include <filesystem>
#include <map>
#include <optional>
#include <string>
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
  /// the others, both at full fidelity on the engine (training/shared_fabric.hpp). Memoized per
  /// neighbourhood shape: each job's scenario and how many of its nodes sit under each leaf switch, the
  /// switches numbered in order of first use (the rails are alike, so the same shape shares the same links
  /// the same way). A neighbourhood too large to simulate at full fidelity in the memory available runs
  /// without contention (factors 1), with a warning.
  std::vector<double> contention_factors(const std::vector<const JobSpec*>& jobs, const std::vector<std::vector<int>>& nodes);
  int contention_simulations() const { return contention_simulations_; }
  /// Neighbourhoods whose full-fidelity simulation would not fit in memory: they run without contention.
  int contention_skipped() const { return contention_skipped_; }

 private:
  std::filesystem::path cluster_file_;
  const hardware::Catalog& catalog_;
  topology::ClusterSpec spec_;
  std::optional<topology::ClusterGraph> graph_;
  std::map<std::pair<std::string, std::vector<int>>, double> memo_;
  int simulations_ = 0;
  std::map<std::vector<std::pair<std::string, std::vector<std::pair<int, int>>>>, std::vector<double>> contention_memo_;
  int contention_simulations_ = 0;
  int contention_skipped_ = 0;
};

}  // namespace fmsim::cluster
