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

/// A job larger than one NVLink domain of several instances (a GB200/GB300 NVL72) gets an equal share of
/// whole instances in each of the fewest domains that can hold it, as a block-topology scheduler
/// allocates (Slurm topology/block segments): 256 GPUs on NVL72 racks run as 4 x 64, not 72+72+72+40.
/// NCCL needs the same rank count in every NVLink domain; the remaining instances of each rack stay idle.
std::vector<int> domain_balanced_nodes(const ClusterGraph& cluster, int ranks) {
  const ClusterSpec& spec = cluster.spec;
  const int per_node = spec.gpus_per_node;
  const int domain_nodes = spec.nvlink_domain_nodes;
  const int domain_gpus = per_node * domain_nodes;
  const int domains = spec.nvlink_domains();
  for (int used = (ranks + domain_gpus - 1) / domain_gpus; used <= domains; ++used) {
    if (ranks % used != 0 || (ranks / used) % per_node != 0) continue;
    const int nodes_each = ranks / used / per_node;
    std::vector<int> nodes;
    for (int domain = 0; domain < used; ++domain) {
      for (int k = 0; k < nodes_each; ++k) nodes.push_back(domain * domain_nodes + k);
    }
    return nodes;
  }
  // The nearest GPU counts that can be placed, to name in the error.
  int below = 0, above = 0;
  for (int used = 1; used <= domains; ++used) {
    for (int k = 1; k <= domain_nodes; ++k) {
      const int count = used * k * per_node;
      if (count < ranks) below = std::max(below, count);
      if (count > ranks && (above == 0 || count < above)) above = count;
    }
  }
  std::string nearest = std::to_string(below);
  if (above > 0) nearest += " or " + std::to_string(above);
  throw InputError("cannot place " + std::to_string(ranks) + " ranks on " + spec.name + " (" + spec.source_file +
                   "): a job larger than one NVLink domain needs the same number of whole " + spec.instance.name +
                   " instances (" + std::to_string(per_node) + " GPUs each) in each domain it uses; the cluster has " +
                   std::to_string(domains) + " domains of " + std::to_string(domain_gpus) + " GPUs (expected at most " +
                   std::to_string(domain_gpus) + " ranks, or a count that splits evenly: nearest " + nearest + ")");
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
    throw InputError("cannot place " + std::to_string(ranks) + " ranks on " + cluster.spec.name + " (" +
                     cluster.spec.source_file + "), a cluster of " + std::to_string(total) +
                     " GPUs (expected 1 to " + std::to_string(total) + " ranks)");
  }
  const int per_node = cluster.spec.gpus_per_node;
  const int domain_gpus = per_node * cluster.spec.nvlink_domain_nodes;
  if (cluster.spec.nvlink_domain_nodes > 1 && policy != PlacementPolicy::scattered) {
    // UltraServer clusters: NVLink domains, not leaf groups, decide (a job that fits one stays in it).
    if (ranks > domain_gpus) return fill_nodes(cluster, domain_balanced_nodes(cluster, ranks), ranks);
    policy = PlacementPolicy::packed;
  }
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
