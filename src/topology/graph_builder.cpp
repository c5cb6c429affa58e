// Builds the cluster graph from a ClusterSpec. Layout, per node: GPUs attach to their NVLink domain's
// NVSwitch (one vertex per domain) and to their own NIC group (one rail per GPU); a host vertex carries
// PCIe to the GPUs, the local NVMe and the NICs. NICs plug into leaves (one leaf per group of
// nodes_per_leaf nodes in a fat tree, one leaf per rail per group when rail-optimized); leaves reach an
// aggregated spine layer through uplinks of downlink bandwidth / oversubscription. FSx and S3 hang off
// the spine.
#include <string>

#include "fmsim/common/error.hpp"
#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {
namespace {

Vertex add_vertex(Graph& graph, VertexKind kind, std::string name, int node = -1, int local = -1) {
  VertexProps props;
  props.kind = kind;
  props.name = std::move(name);
  props.node = node;
  props.local = local;
  return boost::add_vertex(props, graph);
}

void add_link(Graph& graph, Vertex from, Vertex to, EdgeKind kind, double forward_Bps, double reverse_Bps,
              double latency_s) {
  EdgeProps props;
  props.kind = kind;
  props.forward_Bps = forward_Bps;
  props.reverse_Bps = reverse_Bps;
  props.latency_s = latency_s;
  boost::add_edge(from, to, props, graph);
}

}  // namespace

ClusterGraph build_cluster_graph(const ClusterSpec& spec) {
  if (spec.nodes <= 0 || spec.gpus_per_node <= 0) throw InternalError("cluster spec with no GPUs");
  ClusterGraph cg;
  cg.spec = spec;
  Graph& g = cg.graph;
  const int rails = spec.rails();
  const double rail_Bps = spec.rail_bandwidth_Bps();
  const double nvlink_Bps = spec.gpu.nvlink_bandwidth_per_direction_Bps;
  const bool rail_optimized = spec.fabric.topology == FabricTopology::rail_optimized;

  for (int domain = 0; domain < spec.nvlink_domains(); ++domain) {
    Vertex v = add_vertex(g, VertexKind::nvswitch, "nvswitch" + std::to_string(domain));
    g[v].domain = domain;
    cg.nvswitches.push_back(v);
  }

  const int groups = cg.leaf_groups();
  const int leaves_per_group = rail_optimized ? rails : 1;
  for (int group = 0; group < groups; ++group) {
    for (int rail = 0; rail < leaves_per_group; ++rail) {
      std::string name = "leaf" + std::to_string(group) + (rail_optimized ? "-rail" + std::to_string(rail) : "");
      Vertex v = add_vertex(g, VertexKind::leaf, name, -1, rail_optimized ? rail : -1);
      g[v].leaf = static_cast<int>(cg.leaves.size());
      cg.leaves.push_back(v);
    }
  }

  for (int node = 0; node < spec.nodes; ++node) {
    const std::string prefix = "n" + std::to_string(node);
    Vertex host = add_vertex(g, VertexKind::host, prefix + "-host", node);
    cg.hosts.push_back(host);
    if (spec.storage.nvme) {
      Vertex disk = add_vertex(g, VertexKind::nvme, prefix + "-nvme", node);
      add_link(g, host, disk, EdgeKind::nvme, spec.instance.nvme_write_Bps, spec.instance.nvme_read_Bps, 0.0);
      cg.nvme.push_back(disk);
    }
    const int domain = cg.domain_of_node(node);
    const int group = cg.leaf_group_of_node(node);
    for (int rail = 0; rail < rails; ++rail) {
      Vertex nic = add_vertex(g, VertexKind::nic, prefix + "-nic" + std::to_string(rail), node, rail);
      int leaf_index = group * leaves_per_group + (rail_optimized ? rail : 0);
      g[nic].leaf = leaf_index;
      cg.nics.push_back(nic);
      // Half the message latency on each end: a node-to-node path then carries one message latency.
      add_link(g, nic, cg.leaves[leaf_index], EdgeKind::nic_leaf, rail_Bps, rail_Bps,
               spec.fabric.message_latency_s / 2.0);
      add_link(g, host, nic, EdgeKind::host_nic, rail_Bps, rail_Bps, 0.0);
    }
    for (int local = 0; local < spec.gpus_per_node; ++local) {
      Vertex gpu = add_vertex(g, VertexKind::gpu, prefix + "-gpu" + std::to_string(local), node, local);
      g[gpu].domain = domain;
      cg.gpus.push_back(gpu);
      // Half the NVLink message latency per hop: GPU -> NVSwitch -> GPU carries one.
      add_link(g, gpu, cg.nvswitches[domain], EdgeKind::nvlink, nvlink_Bps, nvlink_Bps,
               spec.nvlink.message_latency_s / 2.0);
      add_link(g, gpu, cg.nics[node * rails + local], EdgeKind::gpu_nic, rail_Bps, rail_Bps, 0.0);
      add_link(g, host, gpu, EdgeKind::pcie, spec.instance.host_gpu_bandwidth_Bps,
               spec.instance.host_gpu_bandwidth_Bps, 0.0);
    }
  }

  // The spine exists whenever traffic can leave a leaf: several leaves, or storage services.
  const bool needs_spine = cg.leaves.size() > 1 || spec.storage.fsx || spec.storage.s3;
  if (needs_spine) {
    cg.spine = add_vertex(g, VertexKind::spine, "spine");
    cg.has_spine = true;
    for (int group = 0; group < groups; ++group) {
      int nodes_in_group = cg.nodes_in_leaf_group(group);
      double downlink_Bps = nodes_in_group * (rail_optimized ? rail_Bps : rail_Bps * rails);
      double uplink_Bps = downlink_Bps / spec.fabric.oversubscription;
      for (int rail = 0; rail < leaves_per_group; ++rail) {
        add_link(g, cg.leaves[group * leaves_per_group + rail], cg.spine, EdgeKind::leaf_spine, uplink_Bps,
                 uplink_Bps, spec.fabric.switch_latency_s);
      }
    }
  }
  if (spec.storage.fsx) {
    cg.fsx = add_vertex(g, VertexKind::fsx, "fsx-lustre");
    cg.has_fsx = true;
    // Clients write into FSx at its aggregate throughput (forward = spine -> fsx).
    add_link(g, cg.spine, cg.fsx, EdgeKind::storage, spec.storage.fsx->throughput_Bps,
             spec.storage.fsx->throughput_Bps, spec.storage.fsx->metadata_latency_s);
  }
  if (spec.storage.s3) {
    // S3 scales out: its front end is bounded by the per-instance limit summed over clients.
    cg.s3 = add_vertex(g, VertexKind::s3, "s3");
    cg.has_s3 = true;
    double aggregate_Bps = spec.nodes * spec.storage.s3->per_instance_bandwidth_Bps;
    add_link(g, cg.spine, cg.s3, EdgeKind::storage, aggregate_Bps, aggregate_Bps,
             spec.storage.s3->first_byte_latency_s);
  }
  return cg;
}

}  // namespace fmsim::topology
