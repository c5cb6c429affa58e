#include "fmsim/topology/placement.hpp"

#include <algorithm>
#include <numeric>
#include <random>

#include "fmsim/common/error.hpp"

namespace fmsim::topology {
namespace {

/// Ranks fill the given nodes in order, every GPU of a node before the next node.
std::vector<int> fill_nodes(const ClusterGraph& cluster, const std::vector<int>& nodes, int ranks) {
  std::vector<int> gpus;
  gpus.reserve(ranks);
  for (int node : nodes) {
    for (int local = 0; local < cluster.spec.gpus_per_node && static_cast<int>(gpus.size()) < ranks; ++local) {
      gpus.push_back(node * cluster.spec.gpus_per_node + local);
    }
  }
  return gpus;
}

std::vector<int> topology_aware_nodes(const ClusterGraph& cluster, int nodes_needed) {
  const int groups = cluster.leaf_groups();
  std::vector<std::vector<int>> members(groups);
  for (int node = 0; node < cluster.spec.nodes; ++node) members[cluster.leaf_group_of_node(node)].push_back(node);
  std::vector<int> order(groups);
  std::iota(order.begin(), order.end(), 0);
  // Best fit: the smallest leaf group that holds the whole job keeps it under one leaf.
  int best = -1;
  for (int group : order) {
    int size = static_cast<int>(members[group].size());
    if (size >= nodes_needed && (best < 0 || size < static_cast<int>(members[best].size()))) best = group;
  }
  if (best >= 0) return {members[best].begin(), members[best].begin() + nodes_needed};
  // Otherwise the largest groups first, so the job spans as few leaves as possible.
  std::stable_sort(order.begin(), order.end(),
                   [&](int a, int b) { return members[a].size() > members[b].size(); });
  std::vector<int> chosen;
  for (int group : order) {
    for (int node : members[group]) {
      if (static_cast<int>(chosen.size()) < nodes_needed) chosen.push_back(node);
    }
  }
  return chosen;
}

}  // namespace

PlacementPolicy parse_placement_policy(const std::string& name) {
  if (name == "packed") return PlacementPolicy::packed;
  if (name == "topology-aware") return PlacementPolicy::topology_aware;
  if (name == "scattered") return PlacementPolicy::scattered;
  throw InputError("unknown placement policy '" + name + "' (known: packed, topology-aware, scattered)");
}

std::string to_string(PlacementPolicy policy) {
  switch (policy) {
    case PlacementPolicy::packed: return "packed";
    case PlacementPolicy::topology_aware: return "topology-aware";
    case PlacementPolicy::scattered: return "scattered";
  }
  return "unknown";
}

std::vector<int> place_ranks(const ClusterGraph& cluster, int ranks, PlacementPolicy policy, std::uint64_t seed) {
  const int total = cluster.spec.total_gpus();
  if (ranks < 1 || ranks > total) {
    throw InputError("cannot place " + std::to_string(ranks) + " ranks on a cluster of " + std::to_string(total) +
                     " GPUs (expected 1 to " + std::to_string(total) + ")");
  }
  const int per_node = cluster.spec.gpus_per_node;
  const int nodes_needed = (ranks + per_node - 1) / per_node;
  std::vector<int> nodes(cluster.spec.nodes);
  std::iota(nodes.begin(), nodes.end(), 0);
  switch (policy) {
    case PlacementPolicy::packed:
      break;
    case PlacementPolicy::topology_aware:
      nodes = topology_aware_nodes(cluster, nodes_needed);
      break;
    case PlacementPolicy::scattered: {
      // Fisher-Yates with an explicit generator, so a seed gives the same placement on every platform.
      std::mt19937_64 generator(seed);
      for (int i = static_cast<int>(nodes.size()) - 1; i > 0; --i) {
        int j = static_cast<int>(generator() % static_cast<std::uint64_t>(i + 1));
        std::swap(nodes[i], nodes[j]);
      }
      break;
    }
  }
  return fill_nodes(cluster, nodes, ranks);
}

}  // namespace fmsim::topology
