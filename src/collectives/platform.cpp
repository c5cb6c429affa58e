#include "fmsim/collectives/platform.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"

namespace fmsim::collectives {
namespace {

using topology::FabricTopology;

int add_link(engine::SimPlatform& platform, std::string name, double bandwidth_Bps) {
  platform.links.push_back({std::move(name), bandwidth_Bps, 0.0});
  return static_cast<int>(platform.links.size()) - 1;
}

/// Leaf uplinks of one leaf group, per rail (rail-optimized) or one (fat tree), created on demand.
struct Uplinks {
  std::map<std::pair<int, int>, std::pair<int, int>> by_group_rail;  // -> (up, down)
  std::pair<int, int> get(engine::SimPlatform& platform, const topology::ClusterGraph& cluster, int group,
                          int rail, double scale) {
    auto key = std::make_pair(group, rail);
    auto it = by_group_rail.find(key);
    if (it != by_group_rail.end()) return it->second;
    const auto& spec = cluster.spec;
    int nodes_in_group = cluster.nodes_in_leaf_group(group);
    double bw = nodes_in_group * spec.rail_bandwidth_Bps() * scale / spec.fabric.oversubscription;
    std::string name = "uplink" + std::to_string(group) + "-" + std::to_string(rail);
    auto links = std::make_pair(add_link(platform, name + "-up", bw), add_link(platform, name + "-down", bw));
    by_group_rail.emplace(key, links);
    return links;
  }
};

}  // namespace

NodePlatform build_node_platform(const CommLayout& layout, const std::vector<NetPattern>& patterns) {
  const auto& cluster = *layout.cluster;
  const auto& spec = cluster.spec;
  NodePlatform out;
  auto& platform = out.platform;
  const int rails = spec.rails();
  const double node_Bps = spec.rail_bandwidth_Bps() * rails;
  std::vector<int> up, down, group;
  for (const auto& nodes : layout.island_nodes) {
    out.island_hosts.emplace_back();
    for (int node : nodes) {
      out.island_hosts.back().push_back(static_cast<int>(platform.hosts.size()));
      platform.hosts.push_back("node" + std::to_string(node));
      up.push_back(add_link(platform, "node" + std::to_string(node) + "-nics-up", node_Bps));
      down.push_back(add_link(platform, "node" + std::to_string(node) + "-nics-down", node_Bps));
      group.push_back(cluster.leaf_group_of_node(node));
    }
  }
  // A group's uplinks together carry all rails of its nodes: every rail leaf's uplink (rail-optimized)
  // or the one leaf's uplink (fat tree), nodes x node bandwidth / oversubscription either way.
  const double scale = rails;
  Uplinks uplinks;
  std::set<std::pair<int, int>> routed;
  auto route = [&](int a, int b) {
    if (!routed.insert({a, b}).second) return;
    engine::SimRoute r{a, b, {up[a]}};
    if (group[a] != group[b]) {
      r.links.push_back(uplinks.get(platform, cluster, group[a], 0, scale).first);
      r.links.push_back(uplinks.get(platform, cluster, group[b], 0, scale).second);
    }
    r.links.push_back(down[b]);
    platform.routes.push_back(std::move(r));
  };
  const int islands = layout.islands;
  out.node_group = group;
  for (NetPattern pattern : patterns) {
    if (pattern == NetPattern::ring_next && islands > 1) {
      for (int i = 0; i < islands; ++i) {
        for (int k = 0; k < layout.nodes_per_island; ++k) {
          route(out.island_hosts[i][k], out.island_hosts[(i + 1) % islands][k]);
        }
      }
    }
    if (pattern == NetPattern::all_pairs && out.group_source_host.empty()) {
      const int groups = cluster.leaf_groups();
      std::vector<double> group_Bps(groups, 0.0);
      for (int g : group) group_Bps[g] += node_Bps;
      out.group_source_host.assign(groups, -1);
      out.group_sink_host.assign(groups, -1);
      for (int g = 0; g < groups; ++g) {
        if (group_Bps[g] == 0) continue;
        out.group_source_host[g] = static_cast<int>(platform.hosts.size());
        platform.hosts.push_back("group" + std::to_string(g) + "-source");
        up.push_back(add_link(platform, "group" + std::to_string(g) + "-nics-up", group_Bps[g]));
        down.push_back(-1);
        out.group_sink_host[g] = static_cast<int>(platform.hosts.size());
        platform.hosts.push_back("group" + std::to_string(g) + "-sink");
        up.push_back(-1);
        down.push_back(add_link(platform, "group" + std::to_string(g) + "-nics-down", group_Bps[g]));
        group.push_back(g);
        group.push_back(g);
      }
      for (int a = 0; a < groups; ++a) {
        for (int b = 0; b < groups; ++b) {
          if (out.group_source_host[a] >= 0 && out.group_sink_host[b] >= 0) {
            route(out.group_source_host[a], out.group_sink_host[b]);
          }
        }
      }
    }
  }
  return out;
}

std::vector<engine::SimFlow> pattern_flows(const NodePlatform& platform, const CommLayout& layout,
                                           NetPattern pattern, double bytes_per_island) {
  std::vector<engine::SimFlow> flows;
  const int islands = layout.islands, per_island = layout.nodes_per_island;
  if (islands < 2 || pattern == NetPattern::none) return flows;
  const double per_node = bytes_per_island / per_island;
  if (pattern == NetPattern::ring_next) {
    for (int i = 0; i < islands; ++i) {
      for (int k = 0; k < per_island; ++k) {
        flows.push_back({platform.island_hosts[i][k], platform.island_hosts[(i + 1) % islands][k], per_node});
      }
    }
    return flows;
  }
  // All pairs: node k of island i sends per_node / (I - 1) to node k of every other island. Count
  // how many islands of each group every group's nodes send to, then emit one flow per group pair.
  const int groups = static_cast<int>(platform.group_source_host.size());
  std::vector<std::vector<int>> group_of(islands, std::vector<int>(per_island));
  for (int i = 0; i < islands; ++i) {
    for (int k = 0; k < per_island; ++k) group_of[i][k] = platform.node_group[platform.island_hosts[i][k]];
  }
  std::vector<double> bytes(static_cast<std::size_t>(groups) * groups, 0.0);
  const double share = per_node / (islands - 1);
  for (int k = 0; k < per_island; ++k) {
    std::vector<double> receivers(groups, 0.0);  // islands whose node k sits in each group
    for (int i = 0; i < islands; ++i) receivers[group_of[i][k]] += 1.0;
    for (int i = 0; i < islands; ++i) {
      int a = group_of[i][k];
      for (int b = 0; b < groups; ++b) {
        double count = receivers[b] - (b == a ? 1.0 : 0.0);  // never to itself
        bytes[static_cast<std::size_t>(a) * groups + b] += share * count;
      }
    }
  }
  for (int a = 0; a < groups; ++a) {
    for (int b = 0; b < groups; ++b) {
      double amount = bytes[static_cast<std::size_t>(a) * groups + b];
      if (amount > 0) flows.push_back({platform.group_source_host[a], platform.group_sink_host[b], amount});
    }
  }
  return flows;
}

double bottleneck_time_s(const engine::SimPlatform& platform, const std::vector<engine::SimFlow>& flows) {
  std::map<std::pair<int, int>, const engine::SimRoute*> routes;
  for (const auto& route : platform.routes) routes[{route.src, route.dst}] = &route;
  std::vector<double> load_bytes(platform.links.size(), 0.0);
  for (const auto& flow : flows) {
    auto it = routes.find({flow.src, flow.dst});
    if (it == routes.end()) {
      throw InternalError("collectives: no route " + platform.hosts.at(flow.src) + " -> " + platform.hosts.at(flow.dst));
    }
    for (int link : it->second->links) load_bytes[link] += flow.bytes;
  }
  double time_s = 0;
  for (std::size_t i = 0; i < load_bytes.size(); ++i) {
    if (load_bytes[i] > 0) time_s = std::max(time_s, load_bytes[i] / platform.links[i].bandwidth_Bps);
  }
  return time_s;
}

engine::SimPlatform build_gpu_platform(const CommLayout& layout, const std::vector<engine::SimProgram>& programs) {
  const auto& cluster = *layout.cluster;
  const auto& spec = cluster.spec;
  engine::SimPlatform platform;
  const double nvlink_Bps = layout.nvlink_Bps * layout.nvlink_copy_efficiency;
  const double rail_Bps = layout.rail_Bps * tuning::kNetworkEfficiency;
  std::vector<int> nvl_up, nvl_down;
  std::map<int, int> gpu_rank;
  for (int rank = 0; rank < layout.ranks; ++rank) {
    platform.hosts.push_back("rank" + std::to_string(rank));
    nvl_up.push_back(add_link(platform, "rank" + std::to_string(rank) + "-nvlink-up", nvlink_Bps));
    nvl_down.push_back(add_link(platform, "rank" + std::to_string(rank) + "-nvlink-down", nvlink_Bps));
    gpu_rank[layout.rank_gpu[rank]] = rank;
  }
  std::map<std::pair<int, int>, std::pair<int, int>> nics;  // (node, rail) -> (up, down)
  auto nic = [&](int node, int rail) {
    auto key = std::make_pair(node, rail);
    auto it = nics.find(key);
    if (it != nics.end()) return it->second;
    std::string name = "node" + std::to_string(node) + "-nic" + std::to_string(rail);
    auto links = std::make_pair(add_link(platform, name + "-up", rail_Bps), add_link(platform, name + "-down", rail_Bps));
    nics.emplace(key, links);
    return links;
  };
  const bool rail_optimized = spec.fabric.topology == FabricTopology::rail_optimized;
  // Per rail leaf (rail-optimized) or one leaf for all rails (fat tree).
  const double uplink_scale = tuning::kNetworkEfficiency * (rail_optimized ? 1.0 : spec.rails());
  Uplinks uplinks;
  std::set<std::pair<int, int>> routed;
  auto route = [&](int a, int b) {
    if (!routed.insert({a, b}).second) return;
    engine::SimRoute r{a, b, {}};
    int gpu_a = layout.rank_gpu[a], gpu_b = layout.rank_gpu[b];
    int node_a = cluster.node_of_gpu(gpu_a), node_b = cluster.node_of_gpu(gpu_b);
    if (cluster.domain_of_node(node_a) == cluster.domain_of_node(node_b)) {
      r.links = {nvl_up[a], nvl_down[b]};
    } else {
      // PXN: hop over NVLink to the GPU of a's domain on the receiver's rail, then rail-aligned network.
      const int rail = gpu_b % spec.gpus_per_node;
      const int domain_offset = (gpu_b % (spec.gpus_per_node * spec.nvlink_domain_nodes));
      const int first_gpu_of_domain = gpu_a - gpu_a % (spec.gpus_per_node * spec.nvlink_domain_nodes);
      const int relay_gpu = first_gpu_of_domain + domain_offset;
      const int relay_node = cluster.node_of_gpu(relay_gpu);
      if (relay_gpu != gpu_a) {
        auto relay = gpu_rank.find(relay_gpu);
        r.links.push_back(nvl_up[a]);
        if (relay != gpu_rank.end()) r.links.push_back(nvl_down[relay->second]);
      }
      r.links.push_back(nic(relay_node, rail).first);
      int group_a = cluster.leaf_group_of_node(relay_node), group_b = cluster.leaf_group_of_node(node_b);
      if (group_a != group_b) {
        int leaf_rail = rail_optimized ? rail : 0;
        r.links.push_back(uplinks.get(platform, cluster, group_a, leaf_rail, uplink_scale).first);
        r.links.push_back(uplinks.get(platform, cluster, group_b, leaf_rail, uplink_scale).second);
      }
      r.links.push_back(nic(node_b, rail).second);
    }
    platform.routes.push_back(std::move(r));
  };
  for (const auto& program : programs) {
    for (std::size_t rank = 0; rank < program.steps.size(); ++rank) {
      for (const auto& step : program.steps[rank]) {
        for (const auto& op : step.ops) {
          if (op.send) route(static_cast<int>(rank), op.peer);
        }
      }
    }
  }
  return platform;
}

}  // namespace fmsim::collectives
