#pragma once
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {

/// Maximum flow, in bytes/s, from the GPUs in `sources` to the GPUs in `sinks` over the network part of
/// the graph (GPUs, NVSwitches, NICs, leaves, spine), each link limited to its per-direction bandwidth.
double max_flow_Bps(const ClusterGraph& cluster, const std::vector<int>& sources, const std::vector<int>& sinks);

/// Bisection bandwidth (one direction): max flow from the first half of the GPUs, in ordinal order, to
/// the second half. Nodes fill leaves and NVLink domains in order, so this is the leaf-aligned cut,
/// the worst balanced cut of these fabrics. 0 for a single GPU.
double bisection_bandwidth_Bps(const ClusterGraph& cluster);

}  // namespace fmsim::topology
