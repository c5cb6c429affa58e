#include "fmsim/topology/summary.hpp"

#include <map>
#include <sstream>

#include "fmsim/topology/bisection.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::topology {

TopologySummary summarize(const ClusterGraph& cluster) {
  const ClusterSpec& spec = cluster.spec;
  TopologySummary s;
  s.name = spec.name;
  s.instance_type = spec.instance.name;
  s.ultraserver_type = spec.ultraserver ? spec.ultraserver->name : "";
  s.gpu = spec.gpu.name;
  s.gpus = spec.total_gpus();
  s.nodes = spec.nodes;
  s.gpus_per_node = spec.gpus_per_node;
  std::map<int, int> per_domain;
  for (Vertex gpu : cluster.gpus) ++per_domain[cluster.graph[gpu].domain];
  for (const auto& [domain, size] : per_domain) s.nvlink_domain_sizes.push_back(size);
  s.fabric = to_string(spec.fabric.topology);
  s.leaves = static_cast<int>(cluster.leaves.size());
  s.oversubscription = spec.fabric.oversubscription;
  s.nvlink_bandwidth_per_gpu_Bps = spec.gpu.nvlink_bandwidth_per_direction_Bps;
  s.injection_bandwidth_per_node_Bps = spec.instance.network_bandwidth_Bps;
  s.bisection_bandwidth_Bps = bisection_bandwidth_Bps(cluster);
  s.hbm_bytes = s.gpus * spec.gpu.hbm_bytes;
  s.hbm_bandwidth_Bps = s.gpus * spec.gpu.hbm_bandwidth_Bps;
  s.bf16_dense_flops = s.gpus * spec.gpu.bf16_dense_flops;
  s.host_memory_bytes = s.nodes * spec.instance.host_memory_bytes;
  if (spec.storage.nvme) {
    s.nvme_bytes = s.nodes * spec.instance.nvme_bytes;
    s.nvme_read_Bps = s.nodes * spec.instance.nvme_read_Bps;
    s.nvme_write_Bps = s.nodes * spec.instance.nvme_write_Bps;
  }
  if (spec.storage.fsx) {
    const auto& fsx = *spec.storage.fsx;
    s.fsx_capacity_bytes = fsx.capacity_bytes;
    s.fsx_disk_Bps = fsx.disk_throughput_Bps;
    s.fsx_network_Bps = fsx.throughput_Bps;
    s.fsx_clients_Bps = s.nodes * fsx.client_Bps;
    s.fsx_throughput_Bps = s.fsx_disk_Bps;
    s.fsx_bound = "disk";
    if (s.fsx_network_Bps < *s.fsx_throughput_Bps) {
      s.fsx_throughput_Bps = s.fsx_network_Bps;
      s.fsx_bound = "network";
    }
    if (s.fsx_clients_Bps > 0 && s.fsx_clients_Bps < *s.fsx_throughput_Bps) {
      s.fsx_throughput_Bps = s.fsx_clients_Bps;
      s.fsx_bound = "clients";
    }
  }
  if (spec.storage.s3) {
    s.s3_throughput_Bps = s.nodes * spec.storage.s3->per_instance_bandwidth_Bps;
    s.s3_put_rate_per_s = spec.storage.s3->put_rate_per_s;
    s.s3_get_rate_per_s = spec.storage.s3->get_rate_per_s;
  }
  if (spec.usd_per_hour_per_node) s.usd_per_hour = s.nodes * *spec.usd_per_hour_per_node;
  s.graph_vertices = boost::num_vertices(cluster.graph);
  s.graph_edges = boost::num_edges(cluster.graph);
  return s;
}

nlohmann::json to_json(const TopologySummary& s) {
  nlohmann::json j;
  j["schema"] = "fmsim.topo/1";
  j["name"] = s.name;
  j["instance_type"] = s.instance_type;
  j["ultraserver_type"] = s.ultraserver_type.empty() ? nlohmann::json() : nlohmann::json(s.ultraserver_type);
  j["gpu"] = s.gpu;
  j["gpus"] = s.gpus;
  j["nodes"] = s.nodes;
  j["gpus_per_node"] = s.gpus_per_node;
  j["nvlink_domains"] = s.nvlink_domain_sizes;
  j["fabric"] = {{"topology", s.fabric}, {"leaves", s.leaves}, {"oversubscription", s.oversubscription}};
  j["nvlink_bandwidth_per_gpu_Bps"] = s.nvlink_bandwidth_per_gpu_Bps;
  j["injection_bandwidth_per_node_Bps"] = s.injection_bandwidth_per_node_Bps;
  j["bisection_bandwidth_Bps"] = s.bisection_bandwidth_Bps;
  j["hbm_bytes"] = s.hbm_bytes;
  j["hbm_bandwidth_Bps"] = s.hbm_bandwidth_Bps;
  j["bf16_dense_flops"] = s.bf16_dense_flops;
  j["host_memory_bytes"] = s.host_memory_bytes;
  nlohmann::json storage;
  storage["nvme"] = {{"capacity_bytes", s.nvme_bytes}, {"read_Bps", s.nvme_read_Bps}, {"write_Bps", s.nvme_write_Bps}};
  if (s.fsx_throughput_Bps) {
    storage["fsx_lustre"] = {{"capacity_bytes", *s.fsx_capacity_bytes}, {"throughput_Bps", *s.fsx_throughput_Bps},
                             {"bound_by", s.fsx_bound}, {"disk_throughput_Bps", s.fsx_disk_Bps},
                             {"network_throughput_Bps", s.fsx_network_Bps},
                             {"clients_throughput_Bps", s.fsx_clients_Bps}};
  }
  if (s.s3_throughput_Bps) {
    storage["s3"] = {{"throughput_Bps", *s.s3_throughput_Bps}, {"put_per_s", *s.s3_put_rate_per_s},
                     {"get_per_s", *s.s3_get_rate_per_s}};
  }
  j["storage"] = storage;
  j["usd_per_hour"] = s.usd_per_hour ? nlohmann::json(*s.usd_per_hour) : nlohmann::json();
  j["graph"] = {{"vertices", s.graph_vertices}, {"edges", s.graph_edges}};
  return j;
}

std::string to_text(const TopologySummary& s) {
  using namespace units;
  std::ostringstream out;
  std::map<int, int> domain_histogram;
  for (int size : s.nvlink_domain_sizes) ++domain_histogram[size];
  std::string domains;
  for (const auto& [size, count] : domain_histogram) {
    domains += (domains.empty() ? "" : ", ") + std::to_string(count) + " x " + std::to_string(size) + " GPUs";
  }
  auto row = [&out](const std::string& key, const std::string& value) {
    out << "  " << key << std::string(key.size() < 26 ? 26 - key.size() : 1, ' ') << value << "\n";
  };
  out << "cluster " << s.name << "\n";
  row("machines", std::to_string(s.nodes) + " x " + s.instance_type +
                      (s.ultraserver_type.empty() ? "" : " (in " + s.ultraserver_type + ")"));
  row("GPUs", std::to_string(s.gpus) + " x " + s.gpu);
  row("NVLink domains", std::to_string(s.nvlink_domain_sizes.size()) + " (" + domains + ")");
  row("NVLink per GPU", format_bandwidth(s.nvlink_bandwidth_per_gpu_Bps) + " per direction");
  row("fabric", s.fabric + ", " + std::to_string(s.leaves) + " leaves, oversubscription " +
                    std::to_string(s.oversubscription).substr(0, 4) + ":1");
  row("injection per node", format_bandwidth(s.injection_bandwidth_per_node_Bps));
  row("bisection bandwidth", format_bandwidth(s.bisection_bandwidth_Bps));
  row("HBM", format_bytes(s.hbm_bytes) + " at " + format_bandwidth(s.hbm_bandwidth_Bps));
  row("BF16 dense peak", format_flop_rate(s.bf16_dense_flops));
  row("host memory", format_bytes(s.host_memory_bytes));
  if (s.nvme_bytes > 0) {
    row("local NVMe", format_bytes(s.nvme_bytes) + ", read " + format_bandwidth(s.nvme_read_Bps) + ", write " +
                          format_bandwidth(s.nvme_write_Bps));
  } else {
    row("local NVMe", "not used");
  }
  if (s.fsx_throughput_Bps) {
    row("FSx for Lustre", format_bytes(*s.fsx_capacity_bytes) + ", " + format_bandwidth(*s.fsx_throughput_Bps) +
                              " sustained (" + s.fsx_bound + "; disk " + format_bandwidth(s.fsx_disk_Bps) +
                              ", network " + format_bandwidth(s.fsx_network_Bps) + ", clients " +
                              format_bandwidth(s.fsx_clients_Bps) + ")");
  }
  if (s.s3_throughput_Bps) {
    char rates[96];
    std::snprintf(rates, sizeof rates, ", %.0f PUT/s, %.0f GET/s", *s.s3_put_rate_per_s, *s.s3_get_rate_per_s);
    row("S3", format_bandwidth(*s.s3_throughput_Bps) + rates);
  }
  row("price", s.usd_per_hour ? format_usd(*s.usd_per_hour) + " per hour" : "n/a (reference system)");
  return out.str();
}

}  // namespace fmsim::topology
