// The fast contention model of scenario jobs on shared leaf uplinks (scenario_timing.hpp,
// uplink_sharing.hpp): fast-fidelity replays of each job alone and at its expected uplink share.
#include <algorithm>
#include <cmath>
#include <map>

#include "fmsim/cluster/scenario_timing.hpp"
#include "fmsim/cluster/uplink_sharing.hpp"
#include "fmsim/training/step_simulation.hpp"
#include <spdlog/spdlog.h>

namespace fmsim::cluster {

namespace {

/// Fixed-point rounds: each job's shared step lengthens its transfers and so raises its duty, which the
/// others see. The rounds stop as soon as no job's share moves by kShareQuantum; four bound the replays of
/// a neighbourhood (on the CLI test's neighbourhoods the second round already moves none).
constexpr int kFixedPointRounds = 4;
/// Rail shares closer than this count as equal (the fixed point has converged).
constexpr double kShareQuantum = 1e-3;
/// Spacing of the rail shares replayed (others interpolated between the two nearest).
constexpr double kShareGrid = 0.02;

}  // namespace

std::map<int, int> ScenarioTiming::leaf_order(const std::vector<int>& nodes) const {
  std::map<int, int> ids;
  for (int n : nodes) ids.emplace(graph_->leaf_group_of_node(n), static_cast<int>(ids.size()));
  return ids;
}

ScenarioTiming::FastReplay ScenarioTiming::fast_replay(const JobSpec& job, const std::vector<int>& nodes, double rail_scale) {
  // The replay depends on the scenario, the leaf switch and NVLink domain of each node in order (which ring
  // hops cross, which nodes form an island), and the share: leaves and domains are renumbered in order of
  // first use so a shifted placement hits the memo. Shares are replayed on a grid (kShareGrid) and
  // interpolated between its two nearest points: a job's step is smooth in its rail share, and the grid
  // bounds the replays per placement.
  const int domain_nodes = std::max(1, spec_.nvlink_domain_nodes);
  const std::map<int, int> leaf_ids = leaf_order(nodes);
  std::map<int, int> domain_ids;
  std::vector<std::pair<int, int>> where;
  for (int n : nodes) {
    where.push_back({leaf_ids.at(graph_->leaf_group_of_node(n)), domain_ids.emplace(n / domain_nodes, static_cast<int>(domain_ids.size())).first->second});
  }
  auto at = [&](long long point) {
    const auto key = std::make_tuple(job.scenario, where, point);
    if (auto hit = fast_memo_.find(key); hit != fast_memo_.end()) return hit->second;
    const std::string origin = job.scenario + " (job " + job.id + ")";
    const auto trace = trace_on_nodes(cluster_file_, spec_, job.scenario, nodes, catalog_, origin, false);
    const auto step = training::simulate_step(trace, *graph_, {static_cast<double>(point) * kShareGrid});
    ++fast_replays_;
    FastReplay r;
    r.step_s = step.step_time_s;
    const auto& t = step.cross_leaf;
    r.time_share = t.net_busy_s > 0 ? std::clamp(t.cross_busy_s / t.net_busy_s, 0.0, 1.0) : 0.0;
    r.demand_share = t.cross_active_s > 0 ? std::clamp(t.cross_busy_s / t.cross_active_s, 0.0, 1.0) : 0.0;
    r.duty = r.step_s > 0 ? std::clamp(t.cross_active_s / r.step_s, 0.0, 1.0) : 0.0;
    for (const auto& [leaf, busy] : t.leaf_cross_busy_s) {
      if (auto id = leaf_ids.find(leaf); id != leaf_ids.end() && t.cross_active_s > 0) {
        r.leaf_demand_share[id->second] = std::clamp(busy / t.cross_active_s, 0.0, 1.0);
      }
    }
    fast_memo_.emplace(key, r);
    return r;
  };
  const double share = std::clamp(rail_scale, kShareGrid, 1.0) / kShareGrid;
  const auto lo = static_cast<long long>(std::floor(share));
  const double w = share - static_cast<double>(lo);
  const FastReplay a = at(lo);
  if (w < 1e-9) return a;
  const FastReplay b = at(lo + 1);
  auto mix = [w](double x, double y) { return x + w * (y - x); };
  FastReplay r{mix(a.step_s, b.step_s), mix(a.time_share, b.time_share), mix(a.demand_share, b.demand_share), mix(a.duty, b.duty), {}};
  for (const auto& [leaf, share] : a.leaf_demand_share) r.leaf_demand_share[leaf] += (1 - w) * share;
  for (const auto& [leaf, share] : b.leaf_demand_share) r.leaf_demand_share[leaf] += w * share;
  return r;
}

std::vector<double> ScenarioTiming::fast_contention_factors(const std::vector<const JobSpec*>& jobs, const std::vector<std::vector<int>>& nodes) {
  // contention_factors has built graph_.
  // Aligned: every other job's cross-leaf transfers run whenever this job's do (jobs started together
  // with identical steps: the bound the full model's common start gives).
  const bool aligned = contention_model_ == ContentionModel::aligned;
  const std::size_t n = jobs.size();
  // Nodes of each job under each leaf; each leaf's uplink in rails' worth per rail.
  std::vector<std::map<int, int>> per_leaf_nodes(n);
  for (std::size_t j = 0; j < n; ++j) {
    for (int node : nodes[j]) ++per_leaf_nodes[j][graph_->leaf_group_of_node(node)];
  }
  auto uplink_rails = [&](int leaf) { return graph_->nodes_in_leaf_group(leaf) / std::max(spec_.fabric.oversubscription, 1.0); };
  std::vector<FastReplay> alone(n), shared(n);
  std::vector<double> scale(n, 1.0);
  for (std::size_t j = 0; j < n; ++j) shared[j] = alone[j] = fast_replay(*jobs[j], nodes[j], 1.0);
  std::vector<std::map<int, int>> leaf_ids(n);
  for (std::size_t j = 0; j < n; ++j) leaf_ids[j] = leaf_order(nodes[j]);
  auto demand_on = [&](std::size_t job, int leaf) {
    const auto& shares = alone[job].leaf_demand_share;
    auto it = shares.find(leaf_ids[job].at(leaf));
    return it == shares.end() ? 0.0 : it->second;
  };
  for (int round = 0; round < kFixedPointRounds; ++round) {
    bool moved = false;
    std::vector<double> next(n, 1.0);
    for (std::size_t j = 0; j < n; ++j) {
      // A job's demand on a leaf while it sends across: its nodes there x the share of their rail that
      // crosses then (per leaf: a ring split 2 + 30 sends one hop out of each leaf, so all of the small
      // leaf's nodes' worth and a fifteenth of the large one's). Its stretch: the slowest of its leaves.
      double stretch = 1.0;
      for (const auto& [leaf, own] : per_leaf_nodes[j]) {
        std::vector<LeafTenant> others;
        for (std::size_t k = 0; k < n; ++k) {
          if (k == j) continue;
          auto it = per_leaf_nodes[k].find(leaf);
          if (it != per_leaf_nodes[k].end()) others.push_back({it->second * demand_on(k, leaf), aligned ? 1.0 : shared[k].duty});
        }
        stretch = std::max(stretch, uplink_stretch(own * demand_on(j, leaf), others, uplink_rails(leaf)));
      }
      // Its crossing transfers take `stretch` times as long, the rest of its network time is unchanged.
      next[j] = rail_share(alone[j].time_share, stretch);
      if (std::abs(next[j] - scale[j]) >= kShareQuantum) moved = true;
    }
    if (!moved) break;
    scale = next;
    for (std::size_t j = 0; j < n; ++j) shared[j] = fast_replay(*jobs[j], nodes[j], scale[j]);
  }
  std::vector<double> factors(n, 1.0);
  for (std::size_t j = 0; j < n; ++j) {
    factors[j] = shared[j].step_s > 0 ? std::min(1.0, alone[j].step_s / shared[j].step_s) : 1.0;
    spdlog::debug("fast contention: job {} alone {:.4f} s (crossing: {:.3f} of its network time, {:.3f} of its rail while on, duty {:.3f}), "
                  "rail share {:.3f}, shared {:.4f} s",
                  jobs[j]->id, alone[j].step_s, alone[j].time_share, alone[j].demand_share, alone[j].duty, scale[j], shared[j].step_s);
  }
  return factors;
}

}  // namespace fmsim::cluster
