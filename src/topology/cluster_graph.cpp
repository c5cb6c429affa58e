#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {

std::string to_string(VertexKind kind) {
  switch (kind) {
    case VertexKind::gpu: return "gpu";
    case VertexKind::nvswitch: return "nvswitch";
    case VertexKind::nic: return "nic";
    case VertexKind::host: return "host";
    case VertexKind::leaf: return "leaf";
    case VertexKind::spine: return "spine";
    case VertexKind::nvme: return "nvme";
    case VertexKind::fsx: return "fsx_lustre";
    case VertexKind::s3: return "s3";
  }
  return "unknown";
}

std::string to_string(EdgeKind kind) {
  switch (kind) {
    case EdgeKind::nvlink: return "nvlink";
    case EdgeKind::gpu_nic: return "gpu_nic";
    case EdgeKind::pcie: return "pcie";
    case EdgeKind::nic_leaf: return "nic_leaf";
    case EdgeKind::leaf_spine: return "leaf_spine";
    case EdgeKind::host_nic: return "host_nic";
    case EdgeKind::nvme: return "nvme";
    case EdgeKind::storage: return "storage";
  }
  return "unknown";
}

double bandwidth_from(const Graph& graph, Edge edge, Vertex from) {
  const EdgeProps& props = graph[edge];
  return boost::source(edge, graph) == from ? props.forward_Bps : props.reverse_Bps;
}

}  // namespace fmsim::topology
