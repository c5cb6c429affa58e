#pragma once
// Pieces of the replay shared by replay.cpp, network_model.cpp and attribution.cpp.
#include <map>
#include <set>
#include <string>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/engine/task_graph.hpp"
#include "fmsim/training/step_simulation.hpp"

namespace fmsim::training {

/// The network side of the replay: one host per simulated rank (its GPU) with its rail links, stand-ins
/// for symmetric peers, leaf uplinks when the fabric is oversubscribed; collective and p2p costs.
class NetworkModel {
 public:
  NetworkModel(const workload::Trace& trace, const topology::ClusterGraph& cluster, double rail_bandwidth_scale = 1.0);

  /// What a task puts on its GPU's rail: bytes per GPU, and the share of them that crosses leaf switches.
  struct RailTraffic {
    double bytes = 0;
    double cross_share = 0;
    int rank = 0;  ///< the simulated rank whose rail sends them
    /// Per leaf group the transfer spans: the share of its nodes' rail traffic there that crosses to or
    /// from other leaves (a ring: the islands whose next lies under another leaf; all-pairs: their peers
    /// under other leaves; a pipeline send between leaves: 1 at both ends).
    std::vector<std::pair<int, double>> leaf_shares;
  };

  bool all_members_simulated(const workload::Communicator& comm) const;
  /// Fills a task for a collective: `joint` (every member simulated) or symmetric (only `node.rank`).
  RailTraffic fill_collective(engine::SimTask& task, const workload::Communicator& comm, const workload::TraceNode& node, bool joint);
  RailTraffic fill_p2p(engine::SimTask& task, int src_rank, int dst_rank, double bytes);
  engine::SimPlatform platform() const { return platform_; }

 private:
  int add_link(const std::string& name, double bandwidth_Bps);
  int host_of_rank(int rank) const;
  /// Adds a route between two hosts unless they have one.
  void route(int src_host, int dst_host, const std::vector<int>& links);
  /// Links from the rail of `src_rank`'s GPU to the rail of `dst_gpu` (leaf uplinks when needed).
  std::vector<int> rail_path(int src_rank, int dst_rank);
  const collectives::CommLayout& layout(const workload::Communicator& comm);
  /// Share of a collective's network bytes that crosses leaf switches (mean over islands), and the same per
  /// leaf group the islands sit under: for a ring, the hops between islands under different leaves; for
  /// all-pairs traffic, the peers under other leaves.
  struct CrossingShares {
    double mean = 0;
    std::vector<std::pair<int, double>> by_leaf;
  };
  CrossingShares crossing_shares(const collectives::CommLayout& l, collectives::NetPattern pattern) const;
  /// Island i's crossing: for a ring its hop to the next island (0 or 1), for all-pairs traffic the share
  /// of its peers under other leaves.
  double island_crossing(const collectives::CommLayout& l, collectives::NetPattern pattern, int i) const;
  /// Share of island `island`'s peers (the other islands) under other leaf switches.
  double far_peer_share(const collectives::CommLayout& l, int island) const;
  const collectives::CollectiveCost& cost(const workload::Communicator& comm, collectives::Op op, double bytes);

  const workload::Trace& trace_;
  const topology::ClusterGraph& cluster_;
  engine::SimPlatform platform_;
  std::map<int, int> rank_host_;           ///< simulated rank -> host
  std::map<int, int> rail_up_, rail_down_; ///< simulated rank -> link
  std::map<int, int> peer_host_, far_peer_host_, spine_up_, spine_down_;  ///< symmetric stand-ins
  std::map<std::pair<int, int>, std::pair<int, int>> uplinks_;            ///< (leaf group, rail) -> (up, down)
  std::set<std::pair<int, int>> routed_;
  std::set<int> simulated_;
  std::map<int, collectives::CommLayout> layouts_;
  std::map<std::tuple<int, int, double>, collectives::CollectiveCost> costs_;
  bool oversubscribed_ = false;
  std::map<std::pair<int, int>, CrossingShares> crossing_;  ///< (communicator, pattern) -> its crossing shares
};

/// The task graph after merging pure-delay chains and fork-joins (graph_reduction.cpp), with where
/// each original task sits inside the merged one.
struct ReducedGraph {
  struct Member {
    int task = 0;
    double start_s = 0;   ///< offset from the merged task's start
    double end_s = -1;    ///< offset, or -1: the merged task's end
  };
  engine::SimTaskGraph graph;
  std::vector<int> task_of;              ///< original task -> merged task
  std::vector<double> member_start_s, member_end_s;
};
ReducedGraph reduce_pure_delays(const engine::SimTaskGraph& graph);

/// Splits each simulated rank's time line into compute, exposed communication by kind, optimizer and
/// pipeline bubble (idle), filling result.rank_breakdown_s, result.critical_rank (the busiest rank) and
/// result.breakdown_s (its breakdown).
void attribute_time(const workload::Trace& trace, StepResult& result);

}  // namespace fmsim::training
