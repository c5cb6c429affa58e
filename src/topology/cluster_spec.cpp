#include "fmsim/topology/cluster_spec.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::topology {
namespace {

using config::ObjectReader;
using units::Dimension;

constexpr double kBytesPerTiB = 1099511627776.0;
/// Memory per vertex and per edge of the cluster graph, its max-flow copy and the summary: fmsim topo
/// on p5.48xlarge clusters of 1,024 to 16,384 nodes peaks at 22.5 KB per node (18 vertices, 41 edges).
constexpr double kGraphBytesPerVertex = 500.0, kGraphBytesPerEdge = 330.0;
/// The largest cluster fmsim accepts: 1,048,576 nodes and GPUs (about 2.9 GiB for `topo` on 8-GPU
/// nodes), and never one whose graph needs over 4 GiB, so every command stays well inside a 24 GiB machine.
constexpr std::int64_t kMaxNodes = 1 << 20, kMaxGpus = 1 << 20;
constexpr double kMaxGraphBytes = 4.0 * 1073741824.0;
/// FSx for Lustre file systems top out in the tens of PiB; this keeps the OST count an int.
constexpr double kMaxFsxBytes = 1024.0 * 1125899906842624.0;

std::string list(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

/// Memory of the cluster graph (Boost adjacency list with named vertices): per node a host, an NVMe,
/// one NIC per rail and the GPUs as vertices, and 1 + 2 x rails + 3 x GPUs edges.
double estimated_graph_bytes(std::int64_t nodes, int gpus_per_node) {
  const double vertices = 2.0 + 2.0 * gpus_per_node, edges = 1.0 + 5.0 * gpus_per_node;
  return static_cast<double>(nodes) * (vertices * kGraphBytesPerVertex + edges * kGraphBytesPerEdge);
}

/// Refuses a cluster whose graph alone could not fit in memory, with the estimate, before building anything.
void check_size(ObjectReader& root, const ClusterSpec& spec) {
  const std::int64_t gpus = std::int64_t{spec.nodes} * spec.gpus_per_node;
  const double bytes = estimated_graph_bytes(spec.nodes, spec.gpus_per_node);
  if (spec.nodes <= kMaxNodes && gpus <= kMaxGpus && bytes <= kMaxGraphBytes) return;
  char text[320];
  std::snprintf(text, sizeof text,
                "a smaller cluster: %lld nodes x %d GPUs = %lld GPUs need about %.1f GiB for the cluster graph alone "
                "(fmsim takes at most %lld nodes, %lld GPUs and %.0f GiB of graph)",
                static_cast<long long>(spec.nodes), spec.gpus_per_node, static_cast<long long>(gpus),
                bytes / 1073741824.0, static_cast<long long>(kMaxNodes), static_cast<long long>(kMaxGpus),
                kMaxGraphBytes / 1073741824.0);
  root.fail(spec.ultraserver ? "ultraservers" : "nodes", text);
}

void read_machines(ObjectReader& root, const hardware::Catalog& catalog, ClusterSpec& spec) {
  bool by_instance = root.has("instance_type");
  bool by_ultraserver = root.has("ultraserver_type");
  if (by_instance == by_ultraserver) {
    root.fail(by_instance ? "ultraserver_type" : "instance_type",
              "exactly one of 'instance_type' (with 'nodes') or 'ultraserver_type' (with 'ultraservers')");
  }
  if (by_instance && root.has("ultraservers")) root.fail("ultraservers", "'nodes' with 'instance_type' ('ultraservers' goes with 'ultraserver_type')");
  if (by_ultraserver && root.has("nodes")) root.fail("nodes", "'ultraservers' with 'ultraserver_type' ('nodes' goes with 'instance_type')");
  if (by_instance) {
    std::string type = root.required_string("instance_type");
    auto known = catalog.instance_names();
    if (!catalog.instances().count(type)) root.fail("instance_type", "a known instance type: " + list(known));
    spec.instance = catalog.instance(type);
    if (spec.instance.nvlink_domain == "ultraserver") {
      root.fail("instance_type", "an instance type that is its own NVLink domain; '" + type +
                                     "' is part of an UltraServer: use 'ultraserver_type' and 'ultraservers'");
    }
    spec.nodes = static_cast<int>(root.required_int("nodes", 1));
  } else {
    std::string type = root.required_string("ultraserver_type");
    const auto known = catalog.ultraserver_names();
    if (std::find(known.begin(), known.end(), type) == known.end()) {
      root.fail("ultraserver_type", "a known UltraServer type: " + list(known));
    }
    spec.ultraserver = catalog.ultraserver(type);
    spec.instance = catalog.instance(spec.ultraserver->instance);
    const std::int64_t instances = std::max(1, spec.ultraserver->instances);
    const auto servers = root.required_int("ultraservers", 1, ObjectReader::kIntMax / instances);
    spec.nvlink_domain_nodes = spec.ultraserver->instances;
    spec.nodes = static_cast<int>(servers * instances);
  }
  spec.gpus_per_node = spec.instance.gpus;
  check_size(root, spec);
  spec.gpu = catalog.gpu(spec.instance.gpu);
  if (spec.instance.gpu_memory_bytes > 0) {
    // The instance exposes less HBM per GPU than the GPU's datasheet figure (p6-b300: 268 of 288 GB).
    spec.gpu.hbm_bytes = spec.instance.gpu_memory_bytes;
    spec.gpu.sources["hbm_capacity"] = spec.instance.sources.at("gpu_memory");
  }
  spec.nvlink = catalog.interconnect(spec.instance.nvlink);
  spec.network = catalog.interconnect(spec.instance.interconnect);
}

/// "nvlink_partition_gpus": an UltraServer's NVLink domain split into partitions of that many GPUs (NVLink
/// partitions set up by the fabric manager / IMEX, e.g. 8-GPU partitions of an NVL72 used like HGX
/// nodes). Each partition is then an NVLink domain of its own; traffic between partitions of one rack
/// goes over the scale-out network.
void read_nvlink_partition(ObjectReader& root, ClusterSpec& spec) {
  if (!root.has("nvlink_partition_gpus")) return;
  const int domain_gpus = spec.gpus_per_node * spec.nvlink_domain_nodes;
  if (!spec.ultraserver) {
    root.fail("nvlink_partition_gpus", "no such key on an instance cluster: its NVLink domain is one " +
                                           spec.instance.name + " (" + std::to_string(domain_gpus) +
                                           " GPUs); partitions apply to 'ultraserver_type' clusters");
  }
  const auto gpus = root.required_int("nvlink_partition_gpus", 1);
  if (gpus % spec.gpus_per_node != 0 || domain_gpus % gpus != 0) {
    root.fail("nvlink_partition_gpus",
              "a multiple of the " + std::to_string(spec.gpus_per_node) + " GPUs of one " + spec.instance.name +
                  " that divides the UltraServer's " + std::to_string(domain_gpus) + " GPUs (e.g. " +
                  std::to_string(spec.gpus_per_node * 2) + " or " + std::to_string(domain_gpus) + ")");
  }
  spec.nvlink_domain_nodes = static_cast<int>(gpus) / spec.gpus_per_node;
}

void read_fabric(ObjectReader& root, ClusterSpec& spec) {
  spec.fabric.message_latency_s = spec.network.message_latency_s;
  spec.fabric.switch_latency_s = spec.network.switch_latency_s;
  auto fabric = root.optional_object("fabric");
  if (!fabric) return;
  std::string topology = fabric->choice_or("topology", {"rail-optimized", "fat-tree"}, "rail-optimized");
  spec.fabric.topology = topology == "fat-tree" ? FabricTopology::fat_tree : FabricTopology::rail_optimized;
  spec.fabric.nodes_per_leaf = static_cast<int>(fabric->int_or("nodes_per_leaf", 16, 1, kMaxNodes));
  spec.fabric.oversubscription = fabric->number_or("oversubscription", 1.0, 0.0);
  if (spec.fabric.oversubscription < 1.0) {
    fabric->fail("oversubscription", "a ratio >= 1 (1 = non-blocking, 2 = 2:1 leaf downlink:uplink)");
  }
  spec.fabric.message_latency_s =
      fabric->quantity_or("message_latency", Dimension::time, spec.fabric.message_latency_s);
  spec.fabric.switch_latency_s =
      fabric->quantity_or("switch_latency", Dimension::time, spec.fabric.switch_latency_s);
  fabric->reject_unknown_keys();
}

void read_storage(ObjectReader& root, const hardware::Catalog& catalog, ClusterSpec& spec) {
  auto storage = root.optional_object("storage");
  if (!storage) return;
  spec.storage.nvme = storage->bool_or("nvme", true);
  if (auto fsx = storage->optional_object("fsx_lustre")) {
    FsxSpec out;
    out.deployment_type = fsx->required_string("deployment_type");
    bool known = false;
    for (const auto& name : catalog.fsx_deployment_names()) known = known || name == out.deployment_type;
    if (!known) fsx->fail("deployment_type", "one of: " + list(catalog.fsx_deployment_names()));
    const auto& deployment = catalog.fsx_deployment(out.deployment_type);
    out.capacity_bytes = fsx->required_quantity("capacity", Dimension::bytes);
    if (out.capacity_bytes <= 0 || out.capacity_bytes > kMaxFsxBytes) {
      fsx->fail("capacity", "a capacity above zero and at most 1024PiB, like '480TiB'");
    }
    double tib = out.capacity_bytes / kBytesPerTiB;
    out.throughput_Bps = tib * deployment.network_throughput_per_tib_Bps;
    out.disk_throughput_Bps = tib * deployment.disk_throughput_per_tib_Bps;
    out.metadata_latency_s = deployment.metadata_latency_s;
    out.osts = std::max(1, static_cast<int>(std::ceil(out.capacity_bytes / deployment.ost_bytes - 1e-9)));
    out.metadata_ops_per_s = tib * deployment.metadata_ops_per_tib_per_s;
    out.efa = fsx->bool_or("efa_enabled", false);
    if (out.efa && out.deployment_type.rfind("PERSISTENT_2", 0) != 0) {
      fsx->fail("efa_enabled", "false: EFA and GPUDirect Storage need a PERSISTENT_2 deployment type");
    }
    out.client_Bps = out.efa ? catalog.lustre_client().efa_Bps : catalog.lustre_client().tcp_Bps;
    const auto stripes = fsx->int_or("stripe_count", 1, -1);
    if (stripes == 0) fsx->fail("stripe_count", "an OST count >= 1, or -1 for all OSTs");
    out.stripe_count = stripes < 0 ? out.osts : static_cast<int>(std::min<std::int64_t>(stripes, out.osts));
    if (auto repository = fsx->optional_object("data_repository")) {
      out.export_to_s3 = repository->bool_or("export", false);
      out.lazy_load_from_s3 = repository->bool_or("lazy_load", false);
      repository->reject_unknown_keys();
    }
    fsx->reject_unknown_keys();
    spec.storage.fsx = out;
  }
  if (auto s3 = storage->optional_object("s3")) {
    S3BucketSpec out;
    out.prefixes = static_cast<int>(s3->int_or("prefixes", 1, 1));
    const auto& service = catalog.s3();
    out.per_instance_bandwidth_Bps = service.per_instance_bandwidth_Bps;
    out.first_byte_latency_s = service.first_byte_latency_s;
    out.put_rate_per_s = out.prefixes * service.put_rate_per_prefix_per_s;
    out.get_rate_per_s = out.prefixes * service.get_rate_per_prefix_per_s;
    out.part_bytes = s3->quantity_or("part_size", Dimension::bytes, service.part_bytes);
    if (out.part_bytes < 5e6) s3->fail("part_size", "a multipart part size of at least 5MB (the S3 minimum)");
    out.max_concurrent_requests = static_cast<int>(s3->int_or("max_concurrent_requests", service.max_concurrent_requests, 1));
    s3->reject_unknown_keys();
    spec.storage.s3 = out;
  }
  if (spec.storage.fsx && (spec.storage.fsx->export_to_s3 || spec.storage.fsx->lazy_load_from_s3) && !spec.storage.s3) {
    storage->fail("fsx_lustre", "an \"s3\" bucket beside it: its data_repository links FSx to S3");
  }
  storage->reject_unknown_keys();
}

}  // namespace

std::string to_string(FabricTopology topology) {
  return topology == FabricTopology::fat_tree ? "fat-tree" : "rail-optimized";
}

ClusterSpec load_cluster(const std::filesystem::path& path, const hardware::Catalog& catalog) {
  config::JsonFile file = config::load_json_file(path);
  return cluster_from_json(file.root, file.path, path.stem().string(), catalog);
}

ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& origin, const std::string& default_name,
                              const hardware::Catalog& catalog) {
  ObjectReader root(json, origin);
  ClusterSpec spec;
  spec.source_file = origin;
  spec.name = root.string_or("name", default_name);
  root.optional_string("description");
  root.optional_string("schema");
  read_machines(root, catalog, spec);
  read_nvlink_partition(root, spec);
  read_fabric(root, spec);
  read_storage(root, catalog, spec);
  if (root.has("usd_per_hour")) spec.usd_per_hour_per_node = root.number_or("usd_per_hour", 0.0, 0.0);
  else spec.usd_per_hour_per_node = spec.instance.usd_per_hour;
  root.reject_unknown_keys();
  return spec;
}

}  // namespace fmsim::topology
