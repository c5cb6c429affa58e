#pragma once
// Placement: which GPU each job rank runs on.
#include <cstdint>
#include <string>
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {

enum class PlacementPolicy {
  packed,          ///< ranks fill GPUs in ordinal order (node 0 first)
  topology_aware,  ///< the fewest leaf groups and whole NVLink domains: best fit, then largest groups first
  scattered,       ///< nodes in a seeded random order, ranks filling each chosen node
};

PlacementPolicy parse_placement_policy(const std::string& name);  ///< throws InputError listing choices
std::string to_string(PlacementPolicy policy);

/// rank -> global GPU ordinal, a one-to-one map. Throws InputError when ranks < 1 or ranks exceed GPUs.
std::vector<int> place_ranks(const ClusterGraph& cluster, int ranks, PlacementPolicy policy,
                             std::uint64_t seed = 0);

}  // namespace fmsim::topology
