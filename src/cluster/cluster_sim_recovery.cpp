// Correlated failures and checkpointless recovery in the shared-cluster simulation
// (cluster_simulation.hpp; docs/model.md "Shared cluster"): a whole placement group (a leaf switch, or an
// NVLink domain) going out at once, and jobs that go on from in process on a replacement node instead of
// restarting from their last checkpoint.
#include "cluster_simulation.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::cluster::detail {

std::vector<int> Simulation::replacements(int j, int count, int prefer) {
  if (spare_free_ + free_ < count) return {};  // enough nodes, or none taken
  std::vector<int> nodes;
  while (static_cast<int>(nodes.size()) < count && spare_free_ > 0) {
    const int spare = take_spare(prefer);
    if (spare < 0) break;
    nodes.push_back(spare);
    ++result_.spare_swaps;
    ++result_.jobs[j].spare_swaps;
  }
  if (const int rest = count - static_cast<int>(nodes.size()); rest > 0) {
    // Free nodes besides the spares just taken (take_spare made them free, not yet the job's).
    std::vector<int> group_free = group_free_;
    for (int n : nodes) --group_free[group_of(n)];
    const std::set<int> taken(nodes.begin(), nodes.end());
    const auto more = detail::place_nodes(rest, Placement::topology, members_, group_free,
                                          [this, &taken](int n) { return node_[n] == kFree && taken.count(n) == 0; });
    nodes.insert(nodes.end(), more.begin(), more.end());
  }
  return nodes;
}

void Simulation::recover_in_process(int j, std::vector<int> nodes, double now) {
  auto& s = state_[j];
  auto& outcome = result_.jobs[j];
  const double ran = now - s.progress.start_s();
  const double progress_end = s.hung_since >= 0 ? std::min(now, s.hung_since) : now;  // a hang stopped progress
  const double worked = std::min(s.remaining_s, s.progress.work_done(progress_end));
  // The peers hold the state of the last finished step: a scenario job loses the step in flight; a job
  // given by its duration has no step to lose.
  const double step_s = jobs_[j].steps > 0 && jobs_[j].duration_s > 0 ? jobs_[j].duration_s / static_cast<double>(jobs_[j].steps) : 0.0;
  // Steps count from the job's start, not this run's (a rescale or a checkpoint may have left it mid-step).
  const double done_before = jobs_[j].duration_s - s.remaining_s;
  const double kept =
      step_s > 0 ? std::clamp(std::floor((done_before + worked) / step_s + 1e-9) * step_s - done_before, 0.0, worked) : worked;
  const auto split = s.progress.split(kept, progress_end);
  s.remaining_s -= kept;
  outcome.lost_s += ran - split.time_s;
  result_.lost_node_s += (ran - split.time_s) * s.nodes.size();
  attribute(j, split);
  outcome.runs.push_back({s.progress.start_s(), now, s.nodes, true});
  ++outcome.checkpointless_recoveries;
  ++result_.checkpointless_recoveries;
  s.nodes = std::move(nodes);
  s.hung_since = -1;
  s.progress.begin(now, options_.failures.checkpointless_recovery_s, static_cast<double>(s.nodes.size()) / jobs_[j].nodes,
                   speed_on(s.nodes), 1.0);
  ++s.run;
  push_finish(j);
  watch_stragglers(j);
  neighbours_changed(j);
}

void Simulation::fail_group(int group, double now) {
  const auto& members = members_[group];
  ClusterResult::GroupFailure record{now, group, static_cast<int>(members.size()), {}};
  std::set<int> hit;
  for (int n : members) {
    if (node_[n] >= 0) hit.insert(node_[n]);
  }
  record.jobs.assign(hit.begin(), hit.end());
  result_.group_failures.push_back(record);
  // The group's idle nodes (free, spare, or already in repair) go out first, so that no job takes them.
  for (int n : members) {
    if (node_[n] < 0) take_down(n);
  }
  for (int j : hit) {
    ++result_.jobs[j].group_failures;
    std::vector<int> lost;
    for (int n : state_[j].nodes) {
      if (group_of(n) == group) lost.push_back(n);
    }
    lose_nodes(j, lost, now, -1);  // the group's own spares are out with it
  }
  push(now + options_.failures.group_repair_s, EventKind::group_repair, group);
}

void Simulation::lose_nodes(int j, const std::vector<int>& lost, double now, int prefer) {
  auto& s = state_[j];
  const auto is_lost = [&lost](int n) { return std::find(lost.begin(), lost.end(), n) != lost.end(); };
  const int kept = static_cast<int>(std::count_if(s.nodes.begin(), s.nodes.end(), [&](int n) { return !is_lost(n); }));
  const int count = static_cast<int>(lost.size());
  // The job's nodes with each lost one replaced in its place by the next of `in`.
  const auto replaced = [&](const std::vector<int>& in) {
    std::vector<int> nodes = s.nodes;
    std::size_t next = 0;
    for (int& n : nodes) {
      if (is_lost(n)) n = in.at(next++);
    }
    return nodes;
  };
  std::vector<int> swap_in, restart_on;
  if (jobs_[j].min_nodes > 0 && kept >= jobs_[j].min_nodes && s.hung_since < 0) {
    shrink(j, lost, now);  // elastic: it goes on with the nodes it keeps
  } else if (checkpointless() && !(swap_in = replacements(j, count, prefer)).empty()) {
    auto nodes = replaced(swap_in);
    release(lost, now);
    claim(j, swap_in, now);
    recover_in_process(j, std::move(nodes), now);
  } else {
    if (options_.failures.spare_nodes > 0) {
      if (spare_free_ >= count) {
        std::vector<int> spares;
        for (int k = 0; k < count; ++k) spares.push_back(take_spare(prefer));
        restart_on = replaced(spares);
        result_.spare_swaps += count;
        result_.jobs[j].spare_swaps += count;
      } else {
        ++result_.spares_exhausted;
      }
    }
    interrupt(j, now);
  }
  for (int n : lost) take_down(n);
  if (!restart_on.empty()) start(j, now, restart_on);
}

}  // namespace fmsim::cluster::detail
