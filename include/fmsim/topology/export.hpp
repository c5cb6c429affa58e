#pragma once
// The cluster graph as Graphviz DOT and as JSON (vertices and edges).
#include <ostream>

#include <nlohmann/json.hpp>

#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {

/// DOT with one subgraph per node; edge labels give the per-direction bandwidth.
void write_dot(const ClusterGraph& cluster, std::ostream& out);

/// {"vertices": [{"id", "kind", "name", ...}], "edges": [{"source", "target", "kind", "forward_Bps", ...}]}
nlohmann::json graph_to_json(const ClusterGraph& cluster);

}  // namespace fmsim::topology
