#pragma once
// Turning a communicator on the cluster graph into engine platforms, at two granularities:
// - node level (default fidelity): one host per instance whose link is its NICs together, leaf-group
//   uplinks together; carries the rail-symmetric traffic between NVLink domains.
// - GPU level (full fidelity, the referee): one host per rank, its NVLink port, per-rail NICs and
//   leaf uplinks, PXN routing (a send to another node leaves through the NIC of the receiver's rail).
// Links carry bandwidth x the achieved-efficiency constants of tuning.hpp and no latency: latency is
// added in closed form by the cost model, in both modes.
#include <vector>

#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/engine/network_sim.hpp"

namespace fmsim::collectives {

struct NodePlatform {
  engine::SimPlatform platform;
  std::vector<std::vector<int>> island_hosts;  ///< host index of island_nodes[i][k]
  /// All-pairs traffic is uniform, so every node link of a leaf group carries the same load: it is
  /// simulated between leaf groups, each a source and a sink host whose link is its nodes' together.
  std::vector<int> group_source_host, group_sink_host;  ///< by leaf group, -1 where unused
  std::vector<int> node_group;                          ///< leaf group of island_nodes[i][k], by host
};

/// Node-level platform with routes for every pair of nodes the pattern uses.
NodePlatform build_node_platform(const CommLayout& layout, const std::vector<NetPattern>& patterns);

/// Flows of `pattern` carrying `bytes_per_island` out of every island, split over its nodes.
std::vector<engine::SimFlow> pattern_flows(const NodePlatform& platform, const CommLayout& layout,
                                           NetPattern pattern, double bytes_per_island);

/// Above this many flows a node-level traffic shape is timed by its bottleneck instead of by SimGrid:
/// the engine re-solves the max-min sharing at every flow completion, so its cost grows with the square
/// of the flows (all-pairs between 512 leaf groups: 262,144 flows, minutes), while for the uniform
/// traffic these shapes carry every flow through the busiest link finishes when it drains.
inline constexpr std::size_t kMaxSimulatedShapeFlows = 16384;

/// Time for `flows` started together to drain: the most loaded link's bytes over its bandwidth. Equals
/// the max-min simulation when the traffic is uniform over the bottleneck (unit-tested against it).
double bottleneck_time_s(const engine::SimPlatform& platform, const std::vector<engine::SimFlow>& flows);

/// GPU-level platform (host = rank) with routes for every pair the programs use.
engine::SimPlatform build_gpu_platform(const CommLayout& layout, const std::vector<engine::SimProgram>& programs);

}  // namespace fmsim::collectives
