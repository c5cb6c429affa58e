#pragma once
// What `fmsim topo` reports about a cluster.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::topology {

struct TopologySummary {
  std::string name;
  std::string instance_type;
  std::string ultraserver_type;     ///< empty unless built from UltraServers
  std::string gpu;
  int gpus = 0;
  int nodes = 0;
  int gpus_per_node = 0;
  std::vector<int> nvlink_domain_sizes;
  std::string fabric;
  int leaves = 0;
  double oversubscription = 1.0;
  double nvlink_bandwidth_per_gpu_Bps = 0;  ///< per direction
  double injection_bandwidth_per_node_Bps = 0;
  double bisection_bandwidth_Bps = 0;
  double hbm_bytes = 0;
  double hbm_bandwidth_Bps = 0;            ///< aggregate
  double bf16_dense_flops = 0;             ///< aggregate
  double host_memory_bytes = 0;
  double nvme_bytes = 0, nvme_read_Bps = 0, nvme_write_Bps = 0;  ///< aggregate over nodes
  /// FSx for Lustre: the sustained throughput is the least of the OSTs' disk throughput, the file servers'
  /// network throughput (a burst figure above the disk one) and the clients' limit (nodes x per-client).
  std::optional<double> fsx_throughput_Bps, fsx_capacity_bytes;
  double fsx_disk_Bps = 0, fsx_network_Bps = 0, fsx_clients_Bps = 0;
  std::string fsx_bound;  ///< "disk", "network" or "clients"
  std::optional<double> s3_throughput_Bps, s3_put_rate_per_s, s3_get_rate_per_s;
  std::optional<double> usd_per_hour;
  std::size_t graph_vertices = 0, graph_edges = 0;
};

TopologySummary summarize(const ClusterGraph& cluster);
nlohmann::json to_json(const TopologySummary& summary);
/// A short human-readable table.
std::string to_text(const TopologySummary& summary);

}  // namespace fmsim::topology
