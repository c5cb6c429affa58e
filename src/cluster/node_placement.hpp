#pragma once
// Where `fmsim cluster` puts a job's nodes (cluster_sim.hpp Placement): Slurm's topology/tree and
// topology/block (best fit into one leaf switch group or NVLink domain, else the groups with the most free
// nodes first) or the Kubernetes default scheduler's least-allocated scoring (each pod of a gang to the
// emptiest group, so the gang spreads).
#include <functional>
#include <vector>

#include "fmsim/cluster/cluster_sim.hpp"

namespace fmsim::cluster::detail {

/// `count` free nodes (the caller checked that many are free): `members` are each group's nodes in node
/// order, `group_free` each group's free nodes, `is_free` whether a node is free.
std::vector<int> place_nodes(int count, Placement placement, const std::vector<std::vector<int>>& members,
                             const std::vector<int>& group_free, const std::function<bool(int)>& is_free);

}  // namespace fmsim::cluster::detail
