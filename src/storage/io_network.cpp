// The storage platform (see io_network.hpp). Figures: docs/model.md, "Checkpoints".
#include "io_network.hpp"

#include <algorithm>

#include "fmsim/collectives/tuning.hpp"
#include "fmsim/storage/checkpoint_io.hpp"

namespace fmsim::storage::detail {

std::string describe(Resource resource) {
  switch (resource) {
    case Resource::pcie: return "PCIe between GPUs and host memory";
    case Resource::nvme_write: return "local NVMe write";
    case Resource::nvme_read: return "local NVMe read";
    case Resource::node_network: return "node network (EFA)";
    case Resource::spine: return "leaf uplinks to the spine";
    case Resource::fsx_client: return "FSx per-client throughput";
    case Resource::fsx_network: return "FSx network throughput";
    case Resource::fsx_ost: return "FSx disk throughput (OSTs)";
    case Resource::fsx_metadata: return "FSx metadata operations";
    case Resource::s3_client: return "S3 per-instance throughput";
    case Resource::s3_client_requests: return "S3 requests in flight per client (latency-bound)";
    case Resource::s3_request_rate: return "S3 request rate (per prefix)";
  }
  return "unknown";
}

IoNetwork::IoNetwork(const topology::ClusterSpec& c, Phase phase) : cluster_(c), phase_(phase) {
  const auto& instance = c.instance;
  const double nic_Bps = instance.network_bandwidth_Bps * collectives::tuning::kNetworkEfficiency;
  for (int node = 0; node < c.nodes; ++node) {
    const std::string n = "n" + std::to_string(node);
    node_hosts_.push_back({add_host(n + "-gpus"), add_host(n + "-memory"), add_host(n + "-nvme")});
    pcie_.push_back(add_link(n + "-pcie", instance.host_gpu_bandwidth_Bps * c.gpus_per_node, Resource::pcie));
    nvme_write_.push_back(add_link(n + "-nvme-write", instance.nvme_write_Bps, Resource::nvme_write));
    nvme_read_.push_back(add_link(n + "-nvme-read", instance.nvme_read_Bps, Resource::nvme_read));
    nic_out_.push_back(add_link(n + "-nic-out", nic_Bps, Resource::node_network));
    nic_in_.push_back(add_link(n + "-nic-in", nic_Bps, Resource::node_network));
    if (c.storage.fsx) fsx_client_.push_back(add_link(n + "-fsx-client", c.storage.fsx->client_Bps, Resource::fsx_client));
    if (c.storage.s3) {
      const auto& s3 = *c.storage.s3;
      s3_client_.push_back(add_link(n + "-s3-client", s3.per_instance_bandwidth_Bps, Resource::s3_client));
      // Little's law: each GPU's process keeps max_concurrent_requests in flight, each one first-byte latency long.
      const double requests_per_s = c.gpus_per_node * s3.max_concurrent_requests / s3.first_byte_latency_s;
      s3_concurrency_.push_back(add_link(n + "-s3-requests", requests_per_s * kRequestUnitBytes, Resource::s3_client_requests));
    }
  }
  const int groups = (c.nodes + c.fabric.nodes_per_leaf - 1) / c.fabric.nodes_per_leaf;
  if (c.fabric.oversubscription > 1.0 && groups > 1) {
    for (int group = 0; group < groups; ++group) {
      const int nodes = std::min(c.fabric.nodes_per_leaf, c.nodes - group * c.fabric.nodes_per_leaf);
      const double uplink_Bps = nodes * nic_Bps / c.fabric.oversubscription;
      uplink_out_.push_back(add_link("group" + std::to_string(group) + "-uplink-out", uplink_Bps, Resource::spine));
      uplink_in_.push_back(add_link("group" + std::to_string(group) + "-uplink-in", uplink_Bps, Resource::spine));
    }
  }
  if (c.storage.fsx) {
    const auto& fsx = *c.storage.fsx;
    fsx_network_ = add_link("fsx-network", fsx.throughput_Bps, Resource::fsx_network);
    for (int ost = 0; ost < fsx.osts; ++ost) {
      ost_hosts_.push_back(add_host("fsx-ost" + std::to_string(ost)));
      ost_links_.push_back(add_link("fsx-ost" + std::to_string(ost), fsx.disk_throughput_Bps / fsx.osts, Resource::fsx_ost));
    }
    fsx_metadata_host_ = add_host("fsx-mds");
    fsx_metadata_link_ = add_link("fsx-mds", fsx.metadata_ops_per_s * kRequestUnitBytes, Resource::fsx_metadata);
  }
  if (c.storage.s3) {
    const auto& s3 = *c.storage.s3;
    s3_host_ = add_host("s3");
    s3_request_host_ = add_host("s3-requests");
    const double rate = phase == Phase::save ? s3.put_rate_per_s : s3.get_rate_per_s;
    s3_rate_ = add_link("s3-request-rate", rate * kRequestUnitBytes, Resource::s3_request_rate);
  }
}

int IoNetwork::add_host(const std::string& name) {
  platform_.hosts.push_back(name);
  return static_cast<int>(platform_.hosts.size()) - 1;
}

int IoNetwork::add_link(const std::string& name, double bandwidth_Bps, Resource resource) {
  platform_.links.push_back({name, bandwidth_Bps, 0.0});
  resources_.push_back(resource);
  return static_cast<int>(platform_.links.size()) - 1;
}

void IoNetwork::flow(engine::SimTask& task, int src, int dst, std::vector<int> links, double bytes) {
  if (bytes <= 0) return;
  if (routed_.insert({src, dst}).second) platform_.routes.push_back({src, dst, std::move(links)});
  task.flows.push_back({src, dst, bytes});
}

std::vector<int> IoNetwork::out_of_node(int node) const {
  std::vector<int> links{nic_out_[node]};
  if (!uplink_out_.empty()) links.push_back(uplink_out_[node / cluster_.fabric.nodes_per_leaf]);
  return links;
}

std::vector<int> IoNetwork::into_node(int node) const {
  std::vector<int> links;
  if (!uplink_in_.empty()) links.push_back(uplink_in_[node / cluster_.fabric.nodes_per_leaf]);
  links.push_back(nic_in_[node]);
  return links;
}

void IoNetwork::d2h(engine::SimTask& task, int node, double bytes) {
  if (phase_ == Phase::save) flow(task, gpu(node), memory(node), {pcie_[node]}, bytes);
  else flow(task, memory(node), gpu(node), {pcie_[node]}, bytes);
}

void IoNetwork::nvme_write(engine::SimTask& task, int node, double bytes) {
  flow(task, memory(node), nvme(node), {nvme_write_[node]}, bytes);
}

void IoNetwork::nvme_read(engine::SimTask& task, int node, double bytes) {
  flow(task, nvme(node), memory(node), {nvme_read_[node]}, bytes);
}

void IoNetwork::node_to_node(engine::SimTask& task, int from, int to, double bytes) {
  std::vector<int> links{nic_out_[from]};
  const int from_group = from / cluster_.fabric.nodes_per_leaf, to_group = to / cluster_.fabric.nodes_per_leaf;
  if (!uplink_out_.empty() && from_group != to_group) {
    links.push_back(uplink_out_[from_group]);
    links.push_back(uplink_in_[to_group]);
  }
  links.push_back(nic_in_[to]);
  flow(task, memory(from), memory(to), std::move(links), bytes);
}

void IoNetwork::fsx_data(engine::SimTask& task, int node, int ost, double bytes, bool via_nvme) {
  if (phase_ == Phase::save) {
    std::vector<int> links;
    if (via_nvme) links.push_back(nvme_read_[node]);
    for (int link : out_of_node(node)) links.push_back(link);
    for (int link : {fsx_client_[node], fsx_network_, ost_links_[ost]}) links.push_back(link);
    flow(task, via_nvme ? nvme(node) : memory(node), ost_hosts_[ost], std::move(links), bytes);
  } else {
    std::vector<int> links{ost_links_[ost], fsx_network_, fsx_client_[node]};
    for (int link : into_node(node)) links.push_back(link);
    flow(task, ost_hosts_[ost], memory(node), std::move(links), bytes);
  }
}

void IoNetwork::fsx_metadata(engine::SimTask& task, int node, double operations) {
  flow(task, memory(node), fsx_metadata_host_, {fsx_metadata_link_}, operations * kRequestUnitBytes);
}

void IoNetwork::s3_data(engine::SimTask& task, int node, double bytes, bool via_nvme) {
  if (phase_ == Phase::save) {
    std::vector<int> links;
    if (via_nvme) links.push_back(nvme_read_[node]);
    for (int link : out_of_node(node)) links.push_back(link);
    links.push_back(s3_client_[node]);
    flow(task, via_nvme ? nvme(node) : memory(node), s3_host_, std::move(links), bytes);
  } else {
    std::vector<int> links{s3_client_[node]};
    for (int link : into_node(node)) links.push_back(link);
    flow(task, s3_host_, memory(node), std::move(links), bytes);
  }
}

void IoNetwork::s3_requests(engine::SimTask& task, int node, double requests) {
  flow(task, memory(node), s3_request_host_, {s3_concurrency_[node], s3_rate_}, requests * kRequestUnitBytes);
}

void IoNetwork::fsx_export(engine::SimTask& task, int ost, double bytes) {
  flow(task, ost_hosts_[ost], s3_host_, {ost_links_[ost], fsx_network_}, bytes);
}

void IoNetwork::fsx_lazy_load(engine::SimTask& task, int node, int ost, double bytes) {
  // S3 -> file server (OST) -> client: a route from the bucket to the node through the OST's links.
  std::vector<int> links{ost_links_[ost], fsx_network_, fsx_client_[node]};
  for (int link : into_node(node)) links.push_back(link);
  const int source = s3_lazy_hosts_.count(ost) ? s3_lazy_hosts_[ost] : (s3_lazy_hosts_[ost] = add_host("s3-via-ost" + std::to_string(ost)));
  flow(task, source, memory(node), std::move(links), bytes);
}

void IoNetwork::fsx_repository_requests(engine::SimTask& task, double requests) {
  flow(task, fsx_metadata_host_, s3_request_host_, {s3_rate_}, requests * kRequestUnitBytes);
}

}  // namespace fmsim::storage::detail
