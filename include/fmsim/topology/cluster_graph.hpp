#pragma once
#include <algorithm>
// The cluster as a Boost.Graph: vertices are GPUs, NVSwitch domains, NICs, hosts, leaf and spine
// switches and storage endpoints; edges are full-duplex links with a bandwidth per direction.
#include <string>
#include <vector>

#include <boost/graph/adjacency_list.hpp>

#include "fmsim/topology/cluster_spec.hpp"

namespace fmsim::topology {

enum class VertexKind { gpu, nvswitch, nic, host, leaf, spine, nvme, fsx, s3 };
enum class EdgeKind { nvlink, gpu_nic, pcie, nic_leaf, leaf_spine, host_nic, nvme, storage };

std::string to_string(VertexKind kind);
std::string to_string(EdgeKind kind);

struct VertexProps {
  VertexKind kind = VertexKind::gpu;
  std::string name;
  int node = -1;    ///< instance index, for per-node vertices
  int local = -1;   ///< GPU index within the node, or rail index of a NIC or rail leaf
  int domain = -1;  ///< NVLink domain index (GPUs and NVSwitches)
  int leaf = -1;    ///< leaf switch index (leaves; NICs: the leaf they plug into)
};

/// A full-duplex link. `forward` is the direction from the edge's source to its target as built.
struct EdgeProps {
  EdgeKind kind = EdgeKind::nvlink;
  double forward_Bps = 0;
  double reverse_Bps = 0;
  double latency_s = 0;
};

using Graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::undirectedS, VertexProps, EdgeProps>;
using Vertex = boost::graph_traits<Graph>::vertex_descriptor;
using Edge = boost::graph_traits<Graph>::edge_descriptor;

/// The built graph plus indexes into it that every consumer needs.
struct ClusterGraph {
  ClusterSpec spec;
  Graph graph;
  std::vector<Vertex> gpus;        ///< by global GPU ordinal = node * gpus_per_node + local
  std::vector<Vertex> hosts;       ///< by node
  std::vector<Vertex> nics;        ///< by node * rails + rail
  std::vector<Vertex> nvswitches;  ///< by NVLink domain
  std::vector<Vertex> leaves;
  std::vector<Vertex> nvme;        ///< by node (empty when the cluster has no local NVMe tier)
  Vertex spine = 0;
  bool has_spine = false;
  bool has_fsx = false, has_s3 = false;
  Vertex fsx = 0, s3 = 0;

  int node_of_gpu(int gpu) const { return gpu / spec.gpus_per_node; }
  int domain_of_node(int node) const { return node / spec.nvlink_domain_nodes; }
  /// Leaf group of a node: nodes sharing the same leaf (fat tree) or the same rail leaves (rail-optimized).
  int leaf_group_of_node(int node) const { return node / spec.fabric.nodes_per_leaf; }
  int leaf_groups() const { return (spec.nodes + spec.fabric.nodes_per_leaf - 1) / spec.fabric.nodes_per_leaf; }
  /// Nodes under leaf group `group` (the last group may hold fewer).
  int nodes_in_leaf_group(int group) const {
    return std::min(spec.fabric.nodes_per_leaf, spec.nodes - group * spec.fabric.nodes_per_leaf);
  }
};

/// Builds the graph of a cluster (see docs/model.md for what each vertex and edge stands for).
ClusterGraph build_cluster_graph(const ClusterSpec& spec);

/// Bandwidth of an edge in the direction leaving `from`.
double bandwidth_from(const Graph& graph, Edge edge, Vertex from);

}  // namespace fmsim::topology
