#include "fmsim/topology/bisection.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <boost/graph/push_relabel_max_flow.hpp>

namespace fmsim::topology {
namespace {

// Capacities are whole kB/s (1000 bytes/s) in 64-bit integers. With doubles, push-relabel's flow conservation holds
// only up to rounding (a leaf uplink of 3.2e12 / 1.5 Bps is not a whole number), and Boost's debug check
// of the result (BOOST_ASSERT(algo.is_flow()), exact comparisons) aborted Debug builds on clusters with an
// oversubscription of 1.5, 1.8 or 3. Integers make every push exact; a kB/s is far below any difference
// that matters (links carry GB/s).
using Capacity = std::int64_t;
using FlowTraits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using FlowGraph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS, boost::no_property,
    boost::property<boost::edge_capacity_t, Capacity,
                    boost::property<boost::edge_residual_capacity_t, Capacity,
                                    boost::property<boost::edge_reverse_t, FlowTraits::edge_descriptor>>>>;
using FlowVertex = FlowTraits::vertex_descriptor;

bool is_network_vertex(VertexKind kind) {
  return kind == VertexKind::gpu || kind == VertexKind::nvswitch || kind == VertexKind::nic ||
         kind == VertexKind::leaf || kind == VertexKind::spine;
}

/// Adds u->v with capacity `capacity` and its zero-capacity residual twin.
void add_arc(FlowGraph& flow, FlowVertex u, FlowVertex v, Capacity capacity) {
  auto capacity_map = boost::get(boost::edge_capacity, flow);
  auto reverse_map = boost::get(boost::edge_reverse, flow);
  auto forward = boost::add_edge(u, v, flow).first;
  auto backward = boost::add_edge(v, u, flow).first;
  capacity_map[forward] = capacity;
  capacity_map[backward] = 0;
  reverse_map[forward] = backward;
  reverse_map[backward] = forward;
}

constexpr double kBpsPerUnit = 1000.0;
/// A link bandwidth in whole kB/s, at most 1e11 kB/s (100 TB/s, far above any link): a cluster has at
/// most a few tens of millions of arcs, so the sum of all capacities stays below 2^63 (9.2e18).
Capacity whole_Bps(double Bps) {
  if (!(Bps > 0)) return 0;
  return static_cast<Capacity>(std::llround(std::min(Bps / kBpsPerUnit, 1e11)));
}

}  // namespace

double max_flow_Bps(const ClusterGraph& cluster, const std::vector<int>& sources, const std::vector<int>& sinks) {
  if (sources.empty() || sinks.empty()) return 0.0;
  const Graph& g = cluster.graph;
  const auto n = boost::num_vertices(g);
  FlowGraph flow(n + 2);
  const FlowVertex source = n, sink = n + 1;
  Capacity total_capacity = 1;
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    Vertex u = boost::source(*it, g), v = boost::target(*it, g);
    if (!is_network_vertex(g[u].kind) || !is_network_vertex(g[v].kind)) continue;
    const Capacity forward = whole_Bps(g[*it].forward_Bps), reverse = whole_Bps(g[*it].reverse_Bps);
    add_arc(flow, u, v, forward);
    add_arc(flow, v, u, reverse);
    total_capacity += forward + reverse;
  }
  // "Unbounded" terminal arcs: larger than every cut, yet finite so the algorithm stays exact.
  for (int gpu : sources) add_arc(flow, source, cluster.gpus.at(gpu), total_capacity);
  for (int gpu : sinks) add_arc(flow, cluster.gpus.at(gpu), sink, total_capacity);
  return static_cast<double>(boost::push_relabel_max_flow(flow, source, sink)) * kBpsPerUnit;
}

double bisection_bandwidth_Bps(const ClusterGraph& cluster) {
  const int total = static_cast<int>(cluster.gpus.size());
  if (total < 2) return 0.0;
  std::vector<int> first, second;
  for (int gpu = 0; gpu < total; ++gpu) (gpu < total / 2 ? first : second).push_back(gpu);
  return max_flow_Bps(cluster, first, second);
}

}  // namespace fmsim::topology
