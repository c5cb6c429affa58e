#include "fmsim/topology/export.hpp"

namespace fmsim::topology {

nlohmann::json graph_to_json(const ClusterGraph& cluster) {
  const Graph& g = cluster.graph;
  nlohmann::json vertices = nlohmann::json::array();
  for (auto [it, end] = boost::vertices(g); it != end; ++it) {
    const VertexProps& v = g[*it];
    nlohmann::json entry = {{"id", *it}, {"kind", to_string(v.kind)}, {"name", v.name}};
    if (v.node >= 0) entry["node"] = v.node;
    if (v.local >= 0) entry["local"] = v.local;
    if (v.domain >= 0) entry["nvlink_domain"] = v.domain;
    if (v.leaf >= 0) entry["leaf"] = v.leaf;
    vertices.push_back(std::move(entry));
  }
  nlohmann::json edges = nlohmann::json::array();
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    const EdgeProps& e = g[*it];
    edges.push_back({{"source", boost::source(*it, g)},
                     {"target", boost::target(*it, g)},
                     {"kind", to_string(e.kind)},
                     {"forward_Bps", e.forward_Bps},
                     {"reverse_Bps", e.reverse_Bps},
                     {"latency_s", e.latency_s}});
  }
  return {{"vertices", vertices}, {"edges", edges}};
}

}  // namespace fmsim::topology
