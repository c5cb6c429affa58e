#include "fmsim/collectives/layout.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fmsim/common/error.hpp"

namespace fmsim::collectives {

int CommLayout::island_of_rank(int rank) const {
  return cluster->domain_of_node(cluster->node_of_gpu(rank_gpu[rank]));
}

namespace {

/// The ranks and the nodes of each NVLink domain the ranks touch, in order of first appearance.
void fill_islands(const topology::ClusterGraph& cluster, const std::vector<int>& rank_gpu, std::vector<std::vector<int>>& island_ranks,
                  std::vector<std::vector<int>>& island_nodes) {
  std::map<int, int> island_index;  // domain -> position in island_ranks
  for (int rank = 0; rank < static_cast<int>(rank_gpu.size()); ++rank) {
    int node = cluster.node_of_gpu(rank_gpu[rank]);
    int domain = cluster.domain_of_node(node);
    auto [it, inserted] = island_index.emplace(domain, static_cast<int>(island_ranks.size()));
    if (inserted) {
      island_ranks.emplace_back();
      island_nodes.emplace_back();
    }
    island_ranks[it->second].push_back(rank);
    auto& nodes = island_nodes[it->second];
    if (std::find(nodes.begin(), nodes.end(), node) == nodes.end()) nodes.push_back(node);
  }
}

/// The first island whose rank or node count differs from the first island's; -1: none.
int uneven_island(const std::vector<std::vector<int>>& island_ranks, const std::vector<std::vector<int>>& island_nodes) {
  for (std::size_t island = 0; island < island_ranks.size(); ++island) {
    if (island_ranks[island].size() != island_ranks.front().size() || island_nodes[island].size() != island_nodes.front().size()) {
      return static_cast<int>(island);
    }
  }
  return -1;
}

}  // namespace

bool spans_domains_evenly(const topology::ClusterGraph& cluster, const std::vector<int>& rank_gpu) {
  if (rank_gpu.empty()) return false;
  std::vector<std::vector<int>> ranks, nodes;
  fill_islands(cluster, rank_gpu, ranks, nodes);
  return uneven_island(ranks, nodes) < 0;
}

CommLayout make_layout(const topology::ClusterGraph& cluster, std::vector<int> rank_gpu) {
  CommLayout layout;
  layout.cluster = &cluster;
  layout.rank_gpu = std::move(rank_gpu);
  layout.ranks = static_cast<int>(layout.rank_gpu.size());
  if (layout.ranks < 1) throw InputError("a communicator needs at least one rank");
  std::set<int> distinct(layout.rank_gpu.begin(), layout.rank_gpu.end());
  if (static_cast<int>(distinct.size()) != layout.ranks) throw InternalError("placement repeated a GPU");

  fill_islands(cluster, layout.rank_gpu, layout.island_ranks, layout.island_nodes);
  layout.islands = static_cast<int>(layout.island_ranks.size());
  layout.ranks_per_island = static_cast<int>(layout.island_ranks.front().size());
  layout.nodes_per_island = static_cast<int>(layout.island_nodes.front().size());
  if (const int island = uneven_island(layout.island_ranks, layout.island_nodes); island >= 0) {
    throw InputError("the ranks are spread unevenly over NVLink domains (" + std::to_string(layout.island_ranks[island].size()) + " vs " +
                     std::to_string(layout.ranks_per_island) + " ranks); use a GPU count that fills whole domains or fits in one");
  }
  const auto& spec = cluster.spec;
  layout.nvlink_Bps = spec.gpu.nvlink_bandwidth_per_direction_Bps;
  layout.nvlink_copy_efficiency = spec.nvlink.copy_efficiency;
  layout.nvls_efficiency = spec.nvlink.nvls_efficiency;
  layout.rail_Bps = spec.rail_bandwidth_Bps();
  layout.net_message_latency_s = spec.fabric.message_latency_s;
  layout.net_switch_latency_s = spec.fabric.switch_latency_s;
  layout.nvlink_sharp = spec.gpu.nvlink_sharp;
  layout.sm_version = spec.gpu.sm_version;
  layout.amd_host = spec.instance.host_cpu == "amd";
  layout.nics_per_gpu = std::max(1, spec.instance.nics / std::max(1, spec.gpus_per_node));
  layout.striped_rails = spec.network.kind == "efa";
  return layout;
}

}  // namespace fmsim::collectives
