#pragma once
// Replays a training-step trace on the engine: compute nodes become delays from the compute model,
// collectives become closed-form latency/NVLink time plus flows on the GPUs' rails, pipeline sends
// become flows between stages; every flow shares links with the others in flight. A symmetric trace
// (one rank per pipeline stage) is simulated with each representative's collectives sending through its
// own rail to a stand-in for its symmetric peers; a full trace simulates every rank and joins the
// members of each collective.
#include <map>
#include <string>
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::training {

struct LinkLoad {
  std::string name;
  double bytes = 0;
  double utilization = 0;  ///< bytes / (bandwidth x step time)
};

/// Inter-node traffic of one GPU over a step, and the part of it that crosses leaf switches (the leaf
/// uplinks other jobs may share). Per simulated GPU, mean over the simulated ranks of a symmetric
/// (fast-fidelity) trace; zero for full traces. A transfer "crosses" in the share of its bytes that goes
/// between leaves (a ring's hops between islands under different leaves, all-pairs traffic's peers under
/// other leaves, a pipeline send between leaves).
struct CrossLeafTraffic {
  double net_bytes = 0;       ///< bytes the GPU's rail carried (collectives' network part, pipeline sends)
  double cross_bytes = 0;     ///< of which between leaf switches
  double net_busy_s = 0;      ///< the GPU's network transfers' durations, summed
  double cross_busy_s = 0;    ///< the same, each weighted by its crossing share
  double cross_active_s = 0;  ///< time at least one crossing transfer of the GPU was in flight (union)
  /// Per leaf group: the transfers' durations, each weighted by the share of that leaf's nodes' rail
  /// traffic that crosses (cluster leaf index -> seconds); over cross_active_s, a leaf's crossing share.
  std::map<int, double> leaf_cross_busy_s;
};

/// Knobs of one replay.
struct ReplayOptions {
  /// Scales every simulated GPU's rail bandwidth and its symmetric stand-ins' links (the share of it this
  /// job gets beside others' traffic, cluster/uplink_sharing.hpp); 1 = alone. Meant for symmetric traces:
  /// a full trace's leaf uplinks are not scaled with it.
  double rail_bandwidth_scale = 1.0;
};

struct StepResult {
  double step_time_s = 0;
  std::map<std::string, double> breakdown_s;  ///< compute, tp_comm, cp_comm, ep_comm, pp_comm, dp_comm, optimizer, bubble
  int critical_rank = 0;                      ///< the busiest rank (least bubble), whose time line breakdown_s describes
  std::map<int, std::map<std::string, double>> rank_breakdown_s;  ///< the same breakdown for every simulated rank
  std::vector<double> node_start_s, node_end_s;  ///< per trace node
  LinkLoad busiest_link;
  std::vector<LinkLoad> links;                ///< every simulated link that carried bytes (e.g. "gpu3-rail-up", "leaf0-rail3-up")
  long long tasks = 0, flows = 0;
  int simulated_ranks = 0;
  CrossLeafTraffic cross_leaf;
};

/// Throws InputError when the trace does not fit the cluster (ranks beyond its GPUs, unmatched
/// collectives), InternalError on engine failures.
StepResult simulate_step(const workload::Trace& trace, const topology::ClusterGraph& cluster, const ReplayOptions& options = {});

/// Time of one compute node from the compute model (or its given duration).
double compute_node_s(const workload::TraceNode& node, const hardware::GpuSpec& gpu);

}  // namespace fmsim::training
