#pragma once
// The storage side of the cluster as an engine platform (internal to storage/): per node a GPU side,
// host memory and NVMe; FSx for Lustre as its network and one host per OST; S3 as a front end and a
// request-rate link. Links carry the figures of the cluster spec; routes are added as flows need them.
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "fmsim/engine/task_graph.hpp"
#include "fmsim/topology/cluster_spec.hpp"

namespace fmsim::storage::detail {

/// What a link stands for, to name the bottleneck.
enum class Resource {
  pcie, nvme_write, nvme_read, node_network, spine, fsx_client, fsx_network, fsx_ost, fsx_metadata,
  s3_client, s3_client_requests, s3_request_rate
};

enum class Phase { save, restore };

class IoNetwork {
 public:
  IoNetwork(const topology::ClusterSpec& cluster, Phase phase);

  int gpu(int node) const { return node_hosts_[node][0]; }
  int memory(int node) const { return node_hosts_[node][1]; }
  int nvme(int node) const { return node_hosts_[node][2]; }

  /// Flows added to `task`; each registers its route on first use.
  void d2h(engine::SimTask& task, int node, double bytes);               ///< GPU -> host memory (h2d on restore)
  void nvme_write(engine::SimTask& task, int node, double bytes);        ///< host memory -> NVMe
  void nvme_read(engine::SimTask& task, int node, double bytes);         ///< NVMe -> host memory
  void node_to_node(engine::SimTask& task, int from, int to, double bytes);  ///< host memory over EFA
  /// Between a node (its memory, or its NVMe when `via_nvme`) and one OST: direction from the phase.
  void fsx_data(engine::SimTask& task, int node, int ost, double bytes, bool via_nvme);
  void fsx_metadata(engine::SimTask& task, int node, double operations);
  void s3_data(engine::SimTask& task, int node, double bytes, bool via_nvme);
  void s3_requests(engine::SimTask& task, int node, double requests);
  /// Data repository association: the file servers copy an OST's bytes to S3 (export) or, on a lazy
  /// load, from S3 through the OST to a node; their requests go through the bucket's request rate.
  void fsx_export(engine::SimTask& task, int ost, double bytes);
  void fsx_lazy_load(engine::SimTask& task, int node, int ost, double bytes);
  void fsx_repository_requests(engine::SimTask& task, double requests);

  const engine::SimPlatform& platform() const { return platform_; }
  const std::vector<Resource>& link_resources() const { return resources_; }
  int osts() const { return static_cast<int>(ost_hosts_.size()); }

 private:
  int add_host(const std::string& name);
  int add_link(const std::string& name, double bandwidth_Bps, Resource resource);
  void flow(engine::SimTask& task, int src, int dst, std::vector<int> links, double bytes);
  /// Links from a node out of its leaf (and back in), with the leaf uplink when the fabric is oversubscribed.
  std::vector<int> out_of_node(int node) const;
  std::vector<int> into_node(int node) const;

  const topology::ClusterSpec& cluster_;
  Phase phase_;
  engine::SimPlatform platform_;
  std::vector<Resource> resources_;
  std::set<std::pair<int, int>> routed_;
  std::vector<std::vector<int>> node_hosts_;  ///< gpu, memory, nvme
  std::vector<int> pcie_, nvme_write_, nvme_read_, nic_out_, nic_in_, fsx_client_, s3_client_, s3_concurrency_;
  std::vector<int> uplink_out_, uplink_in_;   ///< by leaf group; empty when not oversubscribed
  std::vector<int> ost_hosts_, ost_links_;
  int fsx_network_ = -1, fsx_metadata_host_ = -1, fsx_metadata_link_ = -1;
  int s3_host_ = -1, s3_request_host_ = -1, s3_rate_ = -1;
  std::map<int, int> s3_lazy_hosts_;          ///< by OST: the bucket as seen through that OST
};

/// "FSx disk (OSTs)", "S3 request rate (per prefix)", ...
std::string describe(Resource resource);

}  // namespace fmsim::storage::detail
