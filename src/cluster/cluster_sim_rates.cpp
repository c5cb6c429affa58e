// A running job's changing pace in the shared-cluster simulation (cluster_simulation.hpp): elastic
// jobs shrinking and growing back, and contention between scenario jobs on shared leaf uplinks.
#include "cluster_simulation.hpp"

#include <algorithm>
#include <map>

namespace fmsim::cluster::detail {

void Simulation::update_contention(double now) {
  if (!contention_dirty_) return;
  contention_dirty_ = false;
  std::vector<int> spanning;
  std::map<int, std::vector<int>> jobs_of_leaf;
  for (int j : running_) {
    if (!is_scenario(j)) continue;
    std::set<int> leaves;
    for (int n : state_[j].nodes) leaves.insert(n / shape_.nodes_per_leaf);
    if (leaves.size() < 2) {
      retime(j, now, 1.0);
      continue;
    }
    spanning.push_back(j);
    for (int leaf : leaves) jobs_of_leaf[leaf].push_back(j);
  }
  std::map<int, int> parent;  // union-find over the spanning jobs
  for (int j : spanning) parent[j] = j;
  std::function<int(int)> root = [&](int j) { return parent[j] == j ? j : parent[j] = root(parent[j]); };
  for (const auto& [leaf, members] : jobs_of_leaf) {
    for (std::size_t i = 1; i < members.size(); ++i) parent[root(members[i])] = root(members[0]);
  }
  std::map<int, std::vector<int>> groups;
  for (int j : spanning) groups[root(j)].push_back(j);
  for (const auto& [r, members] : groups) {
    if (members.size() < 2) {
      retime(members[0], now, 1.0);
      continue;
    }
    std::vector<std::vector<int>> nodes;
    for (int j : members) nodes.push_back(state_[j].nodes);
    const std::vector<double> factors = options_.contention_at(members, nodes);
    for (std::size_t i = 0; i < members.size(); ++i) retime(members[i], now, std::clamp(factors.at(i), 1e-3, 1.0));
  }
}

void Simulation::retime(int j, double now, double contention) {
  auto& s = state_[j];
  if (!s.running || s.hung_since >= 0 || contention == s.progress.contention()) return;
  s.progress.set_rate(now, s.progress.share(), s.progress.speed(), contention);
  ++s.run;
  push_finish(j);
}

void Simulation::rescale(int j, std::vector<int> nodes, double now) {
  auto& s = state_[j];
  auto& outcome = result_.jobs[j];
  const double worked = std::min(s.remaining_s, s.progress.work_done(now));
  attribute(j, s.progress.split(worked, now));
  s.remaining_s = std::max(0.0, s.remaining_s - worked);
  outcome.lost_s += std::min(s.progress.overhead_s(), now - s.progress.start_s());  // its pause (restart or rescale) cost time
  outcome.runs.push_back({s.progress.start_s(), now, s.nodes, false});
  ++outcome.rescales;
  s.nodes = std::move(nodes);
  s.progress.begin(now, options_.failures.rescale_s, static_cast<double>(s.nodes.size()) / jobs_[j].nodes, speed_on(s.nodes), 1.0);
  ++s.run;
  push_finish(j);
  watch_stragglers(j);
  neighbours_changed(j);
}

void Simulation::shrink(int j, const std::vector<int>& failed, double now) {
  auto nodes = state_[j].nodes;
  std::erase_if(nodes, [&failed](int n) { return std::find(failed.begin(), failed.end(), n) != failed.end(); });
  release(failed, now);
  release_quota_part(j, now, static_cast<double>(failed.size()) * shape_.gpus_per_node);
  rescale(j, std::move(nodes), now);
}

void Simulation::grow(double now) {
  for (int j : std::vector<int>(running_.begin(), running_.end())) {
    if (free_ == 0) return;
    const int missing = jobs_[j].nodes - static_cast<int>(state_[j].nodes.size());
    if (missing <= 0 || state_[j].hung_since >= 0) continue;  // a hung job waits for its watchdog
    const int take = std::min(missing, free_);
    if (options_.policy == Policy::kueue && !quotas_->allows(cq_of_[j], take * static_cast<double>(shape_.gpus_per_node))) continue;
    std::vector<int> more = place(take);
    claim(j, more, now);
    take_quota_part(j, now, take * static_cast<double>(shape_.gpus_per_node));
    auto nodes = state_[j].nodes;
    nodes.insert(nodes.end(), more.begin(), more.end());
    rescale(j, std::move(nodes), now);
  }
}

}  // namespace fmsim::cluster::detail
