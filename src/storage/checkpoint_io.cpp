// Checkpoint save and restore as task graphs on the storage platform (see checkpoint_io.hpp).
#include "fmsim/storage/checkpoint_io.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "fmsim/common/error.hpp"
#include "fmsim/units/format.hpp"
#include "io_network.hpp"

namespace fmsim::storage {
namespace {

using detail::IoNetwork;
using detail::Phase;
using engine::SimTask;

/// Lustre metadata operations per file: create + close when writing, open when reading (estimate).
constexpr double kMetadataOpsPerFileWrite = 2.0;
constexpr double kMetadataOpsPerFileRead = 1.0;

bool uses_fsx(Strategy s) { return s == Strategy::fsx || s == Strategy::nvme_fsx; }
bool uses_s3(Strategy s) { return s == Strategy::s3 || s == Strategy::nvme_s3; }
bool uses_nvme(Strategy s) { return s == Strategy::nvme_fsx || s == Strategy::nvme_s3; }

/// What one node moves to or from the remote tier: bytes per OST (FSx), files and S3 requests.
struct NodeShare {
  std::map<int, double> ost_bytes;
  double bytes = 0, files = 0, requests = 0;
};

/// Sharded: each rank's files go round-robin over the OSTs, each striped over stripe_count OSTs, the
/// way Lustre's allocator spreads new files. Gathered: node 0 holds the single file (striped likewise).
std::vector<NodeShare> node_shares(const topology::ClusterSpec& c, const CheckpointContents& contents, const CheckpointPlan& plan,
                                   bool gathered_on_node0) {
  std::vector<NodeShare> shares(c.nodes);
  const int osts = c.storage.fsx ? c.storage.fsx->osts : 1;
  const int stripes = c.storage.fsx ? c.storage.fsx->stripe_count : 1;
  const double part_bytes = c.storage.s3 ? c.storage.s3->part_bytes : 1.0;
  auto add_file = [&](NodeShare& share, long long file_id, double bytes) {
    const int first = static_cast<int>((file_id * stripes) % osts);
    for (int j = 0; j < stripes; ++j) share.ost_bytes[(first + j) % osts] += bytes / stripes;
    share.bytes += bytes;
    share.files += 1;
    share.requests += std::max(1.0, std::ceil(bytes / part_bytes - 1e-9));
  };
  if (gathered_on_node0) {
    add_file(shares[0], 0, contents.total_bytes);
    return shares;
  }
  for (size_t rank = 0; rank < contents.rank_bytes.size(); ++rank) {
    for (int f = 0; f < plan.files_per_rank; ++f) {
      add_file(shares[contents.rank_node[rank]], static_cast<long long>(rank) * plan.files_per_rank + f,
               contents.rank_bytes[rank] / plan.files_per_rank);
    }
  }
  return shares;
}

/// Reading a gathered file back: every node reads its own part, spread over the file's stripes.
std::vector<NodeShare> gathered_read_shares(const topology::ClusterSpec& c, const CheckpointContents& contents) {
  std::vector<NodeShare> shares(c.nodes);
  const int stripes = c.storage.fsx ? c.storage.fsx->stripe_count : 1;
  const double part_bytes = c.storage.s3 ? c.storage.s3->part_bytes : 1.0;
  for (int node = 0; node < c.nodes; ++node) {
    NodeShare& share = shares[node];
    share.bytes = contents.node_bytes[node];
    for (int j = 0; j < stripes; ++j) share.ost_bytes[j] += share.bytes / stripes;
    share.files = 1;
    share.requests = std::ceil(share.bytes / part_bytes - 1e-9);
  }
  return shares;
}

void remote_transfer(IoNetwork& net, SimTask& task, const topology::ClusterSpec& c, Strategy strategy, int node,
                     const NodeShare& share, bool via_nvme, Phase phase) {
  if (uses_fsx(strategy)) {
    task.delay_s = c.storage.fsx->metadata_latency_s;
    if (phase == Phase::restore && c.storage.fsx->lazy_load_from_s3) {
      // Not yet in the file system: its servers fetch the files from S3 on first read.
      task.delay_s += c.storage.s3->first_byte_latency_s;
      for (const auto& [ost, bytes] : share.ost_bytes) net.fsx_lazy_load(task, node, ost, bytes);
      net.fsx_repository_requests(task, share.requests);
    } else {
      for (const auto& [ost, bytes] : share.ost_bytes) net.fsx_data(task, node, ost, bytes, via_nvme);
    }
    net.fsx_metadata(task, node, share.files * (phase == Phase::save ? kMetadataOpsPerFileWrite : kMetadataOpsPerFileRead));
  } else {
    task.delay_s = c.storage.s3->first_byte_latency_s;
    net.s3_data(task, node, share.bytes, via_nvme);
    net.s3_requests(task, node, share.requests);
  }
}

int add(engine::SimTaskGraph& graph, SimTask task) {
  graph.tasks.push_back(std::move(task));
  return static_cast<int>(graph.tasks.size()) - 1;
}

double end_of(const engine::TaskTimes& times, const std::vector<int>& tasks) {
  double end = 0;
  for (int task : tasks) end = std::max(end, times.end_s[task]);
  return end;
}

PhaseResult phase_result(const IoNetwork& net, const engine::TaskTimes& times) {
  PhaseResult result;
  result.time_s = times.makespan_s;
  std::map<detail::Resource, double> utilization;
  const auto& links = net.platform().links;
  for (size_t link = 0; link < links.size(); ++link) {
    if (times.makespan_s <= 0 || links[link].bandwidth_Bps <= 0) continue;
    const double used = times.link_bytes[link] / (links[link].bandwidth_Bps * times.makespan_s);
    auto& best = utilization[net.link_resources()[link]];
    best = std::max(best, used);
  }
  for (const auto& [resource, used] : utilization) {
    if (used > result.bottleneck_utilization) {
      result.bottleneck_utilization = used;
      result.bottleneck = detail::describe(resource);
    }
  }
  return result;
}

}  // namespace

void check_strategy(const topology::ClusterSpec& c, const CheckpointContents& contents, const CheckpointPlan& plan,
                    const std::string& where) {
  const std::string name = "strategy '" + to_string(plan.strategy) + "'";
  auto bytes = [](double value) { return units::format_bytes(value); };
  if (uses_fsx(plan.strategy)) {
    if (!c.storage.fsx) throw InputError(where + ": " + name + " needs FSx for Lustre: the cluster has no storage.fsx_lustre");
    const double needed = plan.keep * contents.total_bytes;
    if (c.storage.fsx->capacity_bytes < needed) {
      throw InputError(where + ": /cluster/storage/fsx_lustre/capacity = " + bytes(c.storage.fsx->capacity_bytes) +
                       ": too small for " + std::to_string(plan.keep) + " checkpoints of " + bytes(contents.total_bytes) +
                       " (checkpoint.keep); expected at least " + bytes(needed));
    }
  }
  if (uses_s3(plan.strategy) && !c.storage.s3) {
    throw InputError(where + ": " + name + " needs S3: the cluster has no storage.s3");
  }
  const double max_node_bytes = plan.layout == Layout::gathered
                                    ? contents.total_bytes
                                    : *std::max_element(contents.node_bytes.begin(), contents.node_bytes.end());
  if (uses_nvme(plan.strategy)) {
    if (!c.storage.nvme) throw InputError(where + ": " + name + " needs local NVMe: the cluster has storage.nvme = false");
    if (plan.keep * max_node_bytes > c.instance.nvme_bytes) {
      throw InputError(where + ": " + name + ": " + std::to_string(plan.keep) + " checkpoints need " +
                       bytes(plan.keep * max_node_bytes) + " of local NVMe on a node but " + c.instance.name + " has " +
                       bytes(c.instance.nvme_bytes));
    }
  }
  if (plan.strategy == Strategy::peer) {
    if (plan.layout == Layout::gathered) throw InputError(where + ": /checkpoint/layout = \"gathered\": peer replication copies each node's own shards; use \"sharded\"");
    if (c.nodes < 2) throw InputError(where + ": " + name + " needs at least 2 nodes to hold each other's copies");
    const double needed = (1.0 + plan.peer_replicas) * max_node_bytes;
    if (needed > c.instance.host_memory_bytes) {
      throw InputError(where + ": " + name + ": its own state plus " + std::to_string(plan.peer_replicas) +
                       " peer copies need " + bytes(needed) + " of host memory per node but " + c.instance.name + " has " +
                       bytes(c.instance.host_memory_bytes));
    }
  }
  if (plan.layout == Layout::gathered && contents.total_bytes > c.instance.host_memory_bytes) {
    throw InputError(where + ": /checkpoint/layout = \"gathered\": the whole checkpoint (" + bytes(contents.total_bytes) +
                     ") does not fit in rank 0's host memory (" + bytes(c.instance.host_memory_bytes) + ")");
  }
}

CheckpointIo simulate_checkpoint_io(const topology::ClusterSpec& c, const CheckpointContents& contents,
                                    const CheckpointPlan& plan) {
  const Strategy strategy = plan.strategy;
  const bool gathered = plan.layout == Layout::gathered;
  CheckpointIo io;

  // Save: GPU -> host memory on every node, then the tiers.
  IoNetwork save(c, Phase::save);
  engine::SimTaskGraph graph;
  graph.actor_per_task = true;
  std::vector<int> copies, first_tier, exports;
  std::vector<int> copy_of(c.nodes, -1);
  for (int node = 0; node < c.nodes; ++node) {
    SimTask copy;
    save.d2h(copy, node, contents.node_bytes[node]);
    copy_of[node] = add(graph, std::move(copy));
    copies.push_back(copy_of[node]);
  }
  const auto shares = node_shares(c, contents, plan, gathered);
  std::vector<int> staged = copy_of;  // per node: the task after which its bytes sit in host memory
  if (gathered) {
    SimTask gather;
    gather.deps = copies;
    for (int node = 1; node < c.nodes; ++node) save.node_to_node(gather, node, 0, contents.node_bytes[node]);
    staged.assign(c.nodes, add(graph, std::move(gather)));
    copies = {staged[0]};
  }
  const int writers = gathered ? 1 : c.nodes;
  for (int node = 0; node < writers; ++node) {
    if (shares[node].bytes <= 0) continue;
    int before_remote = staged[node];
    if (uses_nvme(strategy)) {
      SimTask local;
      local.deps = {staged[node]};
      save.nvme_write(local, node, shares[node].bytes);
      before_remote = add(graph, std::move(local));
      first_tier.push_back(before_remote);
    }
    if (strategy == Strategy::peer) {
      SimTask replicate;
      replicate.deps = {staged[node]};
      for (int r = 1; r <= plan.peer_replicas; ++r) save.node_to_node(replicate, node, (node + r) % c.nodes, shares[node].bytes);
      first_tier.push_back(add(graph, std::move(replicate)));
      continue;
    }
    SimTask remote;
    remote.deps = {before_remote};
    remote_transfer(save, remote, c, strategy, node, shares[node], uses_nvme(strategy), Phase::save);
    const int id = add(graph, std::move(remote));
    if (!uses_nvme(strategy)) first_tier.push_back(id);
    if (uses_fsx(strategy) && c.storage.fsx->export_to_s3) {
      SimTask copy_out;
      copy_out.deps = {id};
      copy_out.delay_s = c.storage.s3->first_byte_latency_s;
      for (const auto& [ost, bytes] : shares[node].ost_bytes) save.fsx_export(copy_out, ost, bytes);
      save.fsx_repository_requests(copy_out, shares[node].requests);
      exports.push_back(add(graph, std::move(copy_out)));
    }
  }
  const auto saved = engine::simulate_tasks_in_child(save.platform(), graph);
  io.save = phase_result(save, saved);
  io.export_s = end_of(saved, exports);
  if (!exports.empty()) {
    // Durable on FSx before the export ends: the save is the FSx write; the export is reported apart.
    std::vector<bool> is_export(graph.tasks.size(), false);
    for (int task : exports) is_export[task] = true;
    io.save.time_s = 0;
    for (size_t task = 0; task < graph.tasks.size(); ++task) {
      if (!is_export[task]) io.save.time_s = std::max(io.save.time_s, saved.end_s[task]);
    }
  }
  io.first_tier_s = end_of(saved, first_tier);
  io.stall_s = plan.mode == SaveMode::async ? end_of(saved, copies) : io.first_tier_s;

  // Restore: one node was replaced and has nothing local; every node ends with its state on its GPUs.
  IoNetwork restore(c, Phase::restore);
  engine::SimTaskGraph back;
  back.actor_per_task = true;
  const int replaced = c.nodes - 1;
  const auto read_shares = gathered ? gathered_read_shares(c, contents) : shares;
  for (int node = 0; node < c.nodes; ++node) {
    SimTask read;
    const bool local_copy = node != replaced && (uses_nvme(strategy) || strategy == Strategy::peer) && !(gathered && node != 0);
    if (strategy == Strategy::peer) {
      if (!local_copy) restore.node_to_node(read, (node + 1) % c.nodes, node, contents.node_bytes[node]);
    } else if (local_copy) {
      restore.nvme_read(read, node, contents.node_bytes[node]);
    } else {
      remote_transfer(restore, read, c, strategy, node, read_shares[node], false, Phase::restore);
    }
    SimTask upload;
    upload.deps = {add(back, std::move(read))};
    restore.d2h(upload, node, contents.node_bytes[node]);
    add(back, std::move(upload));
  }
  io.restore = phase_result(restore, engine::simulate_tasks_in_child(restore.platform(), back));
  return io;
}

}  // namespace fmsim::storage
