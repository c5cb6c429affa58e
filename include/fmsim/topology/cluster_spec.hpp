#pragma once
// A cluster description (topologies/*.json) resolved against the catalog: what is built, before the graph.
#include <filesystem>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fmsim/hardware/catalog.hpp"

namespace fmsim::topology {

enum class FabricTopology { fat_tree, rail_optimized };

struct FabricSpec {
  FabricTopology topology = FabricTopology::rail_optimized;
  int nodes_per_leaf = 16;        ///< fat tree: nodes under one leaf; rail-optimized: nodes per rail group
  double oversubscription = 1.0;  ///< leaf downlink : uplink bandwidth ratio (2.0 = 2:1)
  double message_latency_s = 0;   ///< from the catalog's interconnect unless overridden
  double switch_latency_s = 0;    ///< likewise
};

struct FsxSpec {
  std::string deployment_type;
  double capacity_bytes = 0;
  double throughput_Bps = 0;      ///< aggregate: capacity (TiB) x per-TiB network throughput
  double disk_throughput_Bps = 0; ///< aggregate: capacity (TiB) x per-TiB disk throughput
  double metadata_latency_s = 0;
  int osts = 1;                   ///< object storage targets: capacity / OST size
  int stripe_count = 1;           ///< OSTs one file is striped over (Lustre default 1; -1 in files = all)
  bool efa = false;               ///< EFA-enabled file system (PERSISTENT_2 only): the EFA client limit applies
  double client_Bps = 0;          ///< the most one client instance reaches (TCP or EFA figure)
  double metadata_ops_per_s = 0;  ///< aggregate metadata operation rate
  /// Data repository association with the cluster's S3 bucket: export new files to S3 after they are
  /// written, and/or load files lazily from S3 on first read (a file system that is new or released them).
  bool export_to_s3 = false;
  bool lazy_load_from_s3 = false;
};

struct S3BucketSpec {
  int prefixes = 1;
  double per_instance_bandwidth_Bps = 0;  ///< from the catalog: the most one client instance reaches
  double first_byte_latency_s = 0;
  double put_rate_per_s = 0;              ///< all prefixes together
  double get_rate_per_s = 0;
  double part_bytes = 0;                  ///< multipart part / byte-range request size
  int max_concurrent_requests = 1;        ///< per client process
};

struct StorageSpec {
  bool nvme = true;
  std::optional<FsxSpec> fsx;
  std::optional<S3BucketSpec> s3;
};

struct ClusterSpec {
  std::string name;
  std::string source_file;
  hardware::InstanceSpec instance;
  hardware::GpuSpec gpu;
  hardware::InterconnectSpec nvlink;
  hardware::InterconnectSpec network;
  std::optional<hardware::UltraServerSpec> ultraserver;
  int nodes = 0;                  ///< instances
  int gpus_per_node = 0;
  int nvlink_domain_nodes = 1;    ///< instances per NVLink domain (18 for a GB200 NVL72)
  FabricSpec fabric;
  StorageSpec storage;
  std::optional<double> usd_per_hour_per_node;

  int total_gpus() const { return nodes * gpus_per_node; }
  int nvlink_domains() const { return (nodes + nvlink_domain_nodes - 1) / nvlink_domain_nodes; }
  int rails() const { return gpus_per_node; }  ///< one NIC group (rail) per GPU
  double rail_bandwidth_Bps() const { return instance.network_bandwidth_Bps / rails(); }
};

/// Reads and validates a cluster description. Throws InputError naming the file, key, value and what
/// was expected (unknown instance types list the known ones).
ClusterSpec load_cluster(const std::filesystem::path& path, const hardware::Catalog& catalog);

/// The same from JSON already in memory; `origin` names it in errors (a file, or "scenario.json: /cluster").
ClusterSpec cluster_from_json(const nlohmann::json& json, const std::string& origin, const std::string& default_name,
                              const hardware::Catalog& catalog);

/// Name of a fabric topology as written in files ("fat-tree", "rail-optimized").
std::string to_string(FabricTopology topology);

}  // namespace fmsim::topology
