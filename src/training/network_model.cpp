// The network side of the replay (see replay_internal.hpp). Links carry the achieved fraction of rail
// bandwidth (collectives::tuning::kNetworkEfficiency), as in `fmsim collective`.
#include <algorithm>
#include <map>

#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"
#include "replay_internal.hpp"

namespace fmsim::training {

namespace tuning = collectives::tuning;

NetworkModel::NetworkModel(const workload::Trace& trace, const topology::ClusterGraph& cluster, double rail_bandwidth_scale)
    : trace_(trace), cluster_(cluster) {
  const auto& spec = cluster.spec;
  simulated_.insert(trace.ranks.begin(), trace.ranks.end());
  oversubscribed_ = spec.fabric.oversubscription > 1.0 && cluster.leaf_groups() > 1;
  const double rail_Bps = spec.rail_bandwidth_Bps() * tuning::kNetworkEfficiency * rail_bandwidth_scale;
  for (int rank : trace.ranks) {
    const std::string name = "rank" + std::to_string(rank);
    rank_host_[rank] = static_cast<int>(platform_.hosts.size());
    platform_.hosts.push_back(name + "-gpu" + std::to_string(trace.rank_gpu[rank]));
    // Links are named after the GPU they serve: the same physical link in every trace that uses the GPU
    // (jobs sharing a fabric, training/shared_fabric.hpp, compare them by name).
    const std::string gpu = "gpu" + std::to_string(trace.rank_gpu[rank]);
    rail_up_[rank] = add_link(gpu + "-rail-up", rail_Bps);
    rail_down_[rank] = add_link(gpu + "-rail-down", rail_Bps);
    if (!trace.symmetric) continue;
    // Stand-ins for the symmetric peers: what this GPU sends to them equals what it receives from them.
    peer_host_[rank] = static_cast<int>(platform_.hosts.size());
    platform_.hosts.push_back(name + "-peers");
    route(rank_host_[rank], peer_host_[rank], {rail_up_[rank], rail_down_[rank]});
    if (oversubscribed_) {
      const double spine_Bps = rail_Bps / spec.fabric.oversubscription;
      spine_up_[rank] = add_link(gpu + "-spine-up", spine_Bps);
      spine_down_[rank] = add_link(gpu + "-spine-down", spine_Bps);
      far_peer_host_[rank] = static_cast<int>(platform_.hosts.size());
      platform_.hosts.push_back(name + "-far-peers");
      route(rank_host_[rank], far_peer_host_[rank], {rail_up_[rank], spine_up_[rank], spine_down_[rank], rail_down_[rank]});
    }
  }
}

int NetworkModel::add_link(const std::string& name, double bandwidth_Bps) {
  platform_.links.push_back({name, bandwidth_Bps, 0.0});
  return static_cast<int>(platform_.links.size()) - 1;
}

int NetworkModel::host_of_rank(int rank) const {
  auto it = rank_host_.find(rank);
  if (it == rank_host_.end()) throw InputError("trace: rank " + std::to_string(rank) + " communicates but has no nodes in the trace");
  return it->second;
}

void NetworkModel::route(int src_host, int dst_host, const std::vector<int>& links) {
  if (routed_.insert({src_host, dst_host}).second) platform_.routes.push_back({src_host, dst_host, links});
}

bool NetworkModel::all_members_simulated(const workload::Communicator& comm) const {
  return std::all_of(comm.ranks.begin(), comm.ranks.end(), [&](int r) { return simulated_.count(r) > 0; });
}

std::vector<int> NetworkModel::rail_path(int src_rank, int dst_rank) {
  const auto& spec = cluster_.spec;
  const int src_node = cluster_.node_of_gpu(trace_.rank_gpu[src_rank]);
  const int dst_node = cluster_.node_of_gpu(trace_.rank_gpu[dst_rank]);
  std::vector<int> links{rail_up_.at(src_rank)};
  const int src_group = cluster_.leaf_group_of_node(src_node), dst_group = cluster_.leaf_group_of_node(dst_node);
  if (oversubscribed_ && src_group != dst_group) {
    if (trace_.symmetric) {
      links.push_back(spine_up_.at(src_rank));
      links.push_back(spine_down_.at(dst_rank));
    } else {
      // Leaf uplinks of the destination's rail (PXN: traffic leaves on the receiver's rail), shared by
      // the group's nodes: nodes x rail bandwidth / oversubscription.
      const int rail = trace_.rank_gpu[dst_rank] % spec.gpus_per_node;
      auto uplink = [&](int group) {
        auto key = std::make_pair(group, rail);
        auto it = uplinks_.find(key);
        if (it != uplinks_.end()) return it->second;
        const int nodes = cluster_.nodes_in_leaf_group(group);
        const double bw = nodes * spec.rail_bandwidth_Bps() * tuning::kNetworkEfficiency / spec.fabric.oversubscription;
        const std::string name = "leaf" + std::to_string(group) + "-rail" + std::to_string(rail);
        auto links_pair = std::make_pair(add_link(name + "-up", bw), add_link(name + "-down", bw));
        uplinks_[key] = links_pair;
        return links_pair;
      };
      links.push_back(uplink(src_group).first);
      links.push_back(uplink(dst_group).second);
    }
  }
  links.push_back(rail_down_.at(dst_rank));
  return links;
}

const collectives::CommLayout& NetworkModel::layout(const workload::Communicator& comm) {
  auto it = layouts_.find(comm.id);
  if (it != layouts_.end()) return it->second;
  std::vector<int> gpus;
  for (int rank : comm.ranks) gpus.push_back(trace_.rank_gpu[rank]);
  try {
    return layouts_.emplace(comm.id, collectives::make_layout(cluster_, gpus)).first->second;
  } catch (const InputError& error) {
    throw InputError("communicator " + std::to_string(comm.id) + " (" + comm.kind + "): " + error.what());
  }
}

const collectives::CollectiveCost& NetworkModel::cost(const workload::Communicator& comm, collectives::Op op, double bytes) {
  auto key = std::make_tuple(comm.id, static_cast<int>(op), bytes);
  auto it = costs_.find(key);
  if (it != costs_.end()) return it->second;
  return costs_.emplace(key, collectives::collective_cost(layout(comm), op, bytes)).first->second;
}

NetworkModel::RailTraffic NetworkModel::fill_collective(engine::SimTask& task, const workload::Communicator& comm, const workload::TraceNode& node,
                                   bool joint) {
  const auto& c = cost(comm, node.op, node.comm_bytes / node.comm_bandwidth_share);
  task.delay_s = c.fixed_s;
  task.overlap_delay_s = c.nvlink_s;
  if (c.net_bytes_per_gpu <= 0) return {};
  const auto& l = layout(comm);
  // Crossing shares per communicator and pattern, computed once (all-pairs is quadratic in the islands).
  const auto key = std::make_pair(comm.id, static_cast<int>(c.pattern));
  auto known = crossing_.find(key);
  if (known == crossing_.end()) known = crossing_.emplace(key, crossing_shares(l, c.pattern)).first;
  const RailTraffic traffic{c.net_bytes_per_gpu, known->second.mean, node.rank, known->second.by_leaf};
  if (joint) {
    for (int i = 0; i < l.islands; ++i) {
      for (int k = 0; k < l.ranks_per_island; ++k) {
        const int src = comm.ranks[l.island_ranks[i][k]];
        auto send = [&](int j, double bytes) {
          const int dst = comm.ranks[l.island_ranks[j][k]];
          route(host_of_rank(src), host_of_rank(dst), rail_path(src, dst));
          task.flows.push_back({host_of_rank(src), host_of_rank(dst), bytes});
        };
        if (c.pattern == collectives::NetPattern::ring_next) {
          send((i + 1) % l.islands, c.net_bytes_per_gpu);
        } else {
          for (int j = 0; j < l.islands; ++j) {
            if (j != i) send(j, c.net_bytes_per_gpu / (l.islands - 1));
          }
        }
      }
    }
    return traffic;
  }
  const int me = host_of_rank(node.rank);
  double far_share = 0;
  if (oversubscribed_ && c.pattern == collectives::NetPattern::all_pairs && l.islands > 1) {
    const int local = static_cast<int>(std::find(comm.ranks.begin(), comm.ranks.end(), node.rank) - comm.ranks.begin());
    far_share = far_peer_share(l, l.island_of_rank(local));
  }
  if (far_share < 1) task.flows.push_back({me, peer_host_.at(node.rank), c.net_bytes_per_gpu * (1 - far_share)});
  if (far_share > 0) task.flows.push_back({me, far_peer_host_.at(node.rank), c.net_bytes_per_gpu * far_share});
  return traffic;
}

double NetworkModel::far_peer_share(const collectives::CommLayout& l, int island) const {
  const int group = cluster_.leaf_group_of_node(l.island_nodes[island].front());
  int far = 0;
  for (int j = 0; j < l.islands; ++j) far += cluster_.leaf_group_of_node(l.island_nodes[j].front()) != group ? 1 : 0;
  return static_cast<double>(far) / (l.islands - 1);
}

double NetworkModel::island_crossing(const collectives::CommLayout& l, collectives::NetPattern pattern, int i) const {
  if (pattern != collectives::NetPattern::ring_next) return far_peer_share(l, i);
  const auto& next = l.island_nodes[(i + 1) % l.islands];
  return cluster_.leaf_group_of_node(l.island_nodes[i].front()) != cluster_.leaf_group_of_node(next.front()) ? 1.0 : 0.0;
}

NetworkModel::CrossingShares NetworkModel::crossing_shares(const collectives::CommLayout& l, collectives::NetPattern pattern) const {
  if (l.islands < 2) return {};
  std::map<int, std::pair<double, int>> by_leaf;  // leaf -> (crossing, islands)
  double total = 0;
  for (int i = 0; i < l.islands; ++i) {
    auto& [crossing, islands] = by_leaf[cluster_.leaf_group_of_node(l.island_nodes[i].front())];
    const double share = island_crossing(l, pattern, i);
    crossing += share;
    total += share;
    ++islands;
  }
  CrossingShares shares{total / l.islands, {}};
  for (const auto& [leaf, sum] : by_leaf) shares.by_leaf.push_back({leaf, sum.first / sum.second});
  return shares;
}

NetworkModel::RailTraffic NetworkModel::fill_p2p(engine::SimTask& task, int src_rank, int dst_rank, double bytes) {
  const auto& spec = cluster_.spec;
  const int src_node = cluster_.node_of_gpu(trace_.rank_gpu.at(src_rank));
  const int dst_node = cluster_.node_of_gpu(trace_.rank_gpu.at(dst_rank));
  const auto base = tuning::base_latency_s(collectives::Algorithm::ring, collectives::Protocol::simple);
  if (src_node / spec.nvlink_domain_nodes == dst_node / spec.nvlink_domain_nodes) {
    task.delay_s = base + tuning::nvlink_step_latency_s(collectives::Algorithm::ring, collectives::Protocol::simple) +
                   bytes / (spec.gpu.nvlink_bandwidth_per_direction_Bps * tuning::kNvlinkCopyEfficiency);
    return {};
  }
  task.delay_s = base + spec.fabric.message_latency_s;
  const int src = host_of_rank(src_rank), dst = host_of_rank(dst_rank);
  route(src, dst, rail_path(src_rank, dst_rank));
  task.flows.push_back({src, dst, bytes});
  const int src_leaf = cluster_.leaf_group_of_node(src_node), dst_leaf = cluster_.leaf_group_of_node(dst_node);
  if (src_leaf == dst_leaf) return {bytes, 0.0, src_rank, {}};
  return {bytes, 1.0, src_rank, {{src_leaf, 1.0}, {dst_leaf, 1.0}}};
}

}  // namespace fmsim::training
