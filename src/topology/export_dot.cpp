#include <map>

#include "fmsim/topology/export.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::topology {
namespace {

const char* shape_of(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu: return "box";
    case VertexKind::nvswitch: return "hexagon";
    case VertexKind::nic: return "ellipse";
    case VertexKind::host: return "component";
    case VertexKind::leaf: case VertexKind::spine: return "diamond";
    case VertexKind::nvme: case VertexKind::fsx: case VertexKind::s3: return "cylinder";
  }
  return "box";
}

}  // namespace

void write_dot(const ClusterGraph& cluster, std::ostream& out) {
  const Graph& g = cluster.graph;
  out << "graph \"" << cluster.spec.name << "\" {\n  graph [rankdir=TB, fontname=\"Helvetica\"];\n"
      << "  node [fontname=\"Helvetica\", fontsize=10];\n  edge [fontname=\"Helvetica\", fontsize=8];\n";
  std::map<int, std::vector<Vertex>> per_node;
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    if (g[*it].node >= 0) per_node[g[*it].node].push_back(*it);
  }
  for (const auto& [node, vertices] : per_node) {
    out << "  subgraph cluster_n" << node << " {\n    label=\"node " << node << "\";\n";
    for (Vertex v : vertices) {
      out << "    v" << v << " [label=\"" << g[v].name << "\", shape=" << shape_of(g[v].kind) << "];\n";
    }
    out << "  }\n";
  }
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    if (g[*it].node < 0) {
      out << "  v" << *it << " [label=\"" << g[*it].name << "\", shape=" << shape_of(g[*it].kind) << "];\n";
    }
  }
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const EdgeProps& e = g[*it];
    out << "  v" << boost::source(*it, g) << " -- v" << boost::target(*it, g) << " [label=\""
        << units::format_bandwidth(e.forward_Bps) << "\", tooltip=\"" << to_string(e.kind) << "\"];\n";
  }
  out << "}\n";
}

}  // namespace fmsim::topology
