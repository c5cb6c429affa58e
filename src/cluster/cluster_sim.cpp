// The shared-cluster simulation (cluster_sim.hpp, cluster_simulation.hpp): events, placement and the
// scheduling pass; the public entry points.
#include "cluster_simulation.hpp"

#include <cmath>
#include <stdexcept>

#include "fmsim/common/error.hpp"

namespace fmsim::cluster::detail {

Simulation::Simulation(const ClusterShape& shape, std::vector<JobSpec> jobs, const SimOptions& options)
    : shape_(shape), jobs_(std::move(jobs)), options_(options), rng_(options.failures.seed), node_(shape.nodes, kFree),
      down_holds_(shape.nodes, 0), group_free_(shape.groups(), 0), members_(shape.group_members()), blocks_(shape.block_groups()),
      state_(jobs_.size()),
      group_rng_(options.failures.seed ^ 0x47524F5550464C54ULL) {
  for (int n = 0; n < shape.nodes; ++n) ++group_free_[group_of(n)];
  free_ = shape.nodes;
  result_.jobs.resize(jobs_.size());
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    state_[j].remaining_s = jobs_[j].duration_s;
    push(jobs_[j].submit_s, EventKind::submit, static_cast<int>(j));
    if (jobs_[j].duration_s <= 0 && !options.duration_at) throw std::logic_error("a scenario job without a duration_at callback");
  }
  failure_rate_per_s_ = options.failures.node_failures_per_node_hour * shape.nodes / 3600.0;
  if (options_.policy == Policy::kueue) setup_kueue();
  for (const auto& job : jobs_) elastic_ = elastic_ || job.min_nodes > 0;
  for (const auto& m : members_) group_sizes_.push_back(m.size());
  std::sort(group_sizes_.rbegin(), group_sizes_.rend());
  if (!shape.group_block.empty() && static_cast<int>(shape.group_block.size()) != groups()) {
    throw std::logic_error("a block level that does not give every placement group its block");
  }
  // What a job could ever be placed on: the nodes of each group and block that are not hot spares (the
  // highest-numbered nodes; setup_spares_and_stragglers).
  const int first_spare = shape.nodes - options.failures.spare_nodes;
  const auto schedulable = [&](int g) {
    return static_cast<int>(std::count_if(members_[g].begin(), members_[g].end(), [&](int n) { return n < first_spare; }));
  };
  int largest = 0, largest_block = 0;
  for (int g = 0; g < groups(); ++g) largest = std::max(largest, schedulable(g));
  for (const auto& b : blocks_) {
    int size = 0;
    for (int g : b) size += schedulable(g);
    largest_block = std::max(largest_block, size);
  }
  for (const auto& job : jobs_) {
    if (job.topology != TopologyRequest::none && job.topology_level == TopologyLevel::block) {
      if (blocks_.empty()) {
        throw InputError("job " + job.id + " asks for its nodes in one block, but the cluster has no level above its " +
                         (shape.nodes_per_domain > 1 ? "NVLink domains" : "leaf switches") +
                         " (give --block-groups N, or a topology.conf with Switches= lines above the leaf switches)");
      }
      if (job.topology == TopologyRequest::required && job.nodes > largest_block) {
        throw InputError("job " + job.id + " requires its " + std::to_string(job.nodes) + " nodes in one block, but the largest holds " +
                         std::to_string(largest_block) + (options.failures.spare_nodes > 0 ? " besides the hot spares" : "") +
                         ": it could never start");
      }
      continue;
    }
    if (job.topology == TopologyRequest::required && job.nodes > largest) {
      throw InputError("job " + job.id + " requires its " + std::to_string(job.nodes) + " nodes under one " +
                       (shape.nodes_per_domain > 1 ? "NVLink domain" : "leaf switch") + ", but the largest holds " +
                       std::to_string(largest) + (options.failures.spare_nodes > 0 ? " besides the hot spares" : "") +
                       ": it could never start");
    }
  }
  if (failure_rate_per_s_ > 0) schedule_failure(jobs_.empty() ? 0.0 : jobs_.front().submit_s);
  const auto& injected = options_.failures.injected;
  for (std::size_t i = 0; i < injected.size(); ++i) push(injected[i].time_s, EventKind::failure, injected[i].node, -1 - static_cast<int>(i));
  group_failure_rate_per_s_ = options.failures.group_failures_per_group_hour * groups() / 3600.0;
  if (group_failure_rate_per_s_ > 0) schedule_group_failure(jobs_.empty() ? 0.0 : jobs_.front().submit_s);
  for (const auto& g : options_.failures.injected_groups) {
    if (g.group < 0 || g.group >= groups()) throw std::logic_error("an injected group failure outside the cluster's groups");
    push(g.time_s, EventKind::group_failure, g.group, -1);
  }
  setup_spares_and_stragglers();
}

ClusterResult Simulation::run() {
  const double first_submit = jobs_.empty() ? 0.0 : jobs_.front().submit_s;
  last_time_ = first_submit;
  result_.busy_nodes.emplace_back(first_submit, 0);
  result_.down_nodes.emplace_back(first_submit, 0);
  while (!events_.empty() && done_ < static_cast<int>(jobs_.size())) {
    const double now = events_.top().time;
    advance(now);
    while (!events_.empty() && events_.top().time == now) {
      const Event e = events_.top();
      events_.pop();
      ++result_.events;
      handle(e, now);
    }
    schedule(now);
    if (elastic_) grow(now);
    update_contention(now);
    if (result_.down_nodes.empty() || result_.down_nodes.back().second != down_) result_.down_nodes.emplace_back(now, down_);
  }
  result_.makespan_s = last_time_ - first_submit;
  if (quotas_) {
    quotas_->account(last_time_);
    result_.borrowed_gpu_s = quotas_->borrowed_gpu_s();
    result_.peak_gpus = quotas_->peak_gpus();
  }
  for (std::size_t j = 0; j < jobs_.size(); ++j) result_.jobs[j].duration_s = jobs_[j].duration_s;
  return std::move(result_);
}

int Simulation::min_groups(int count) const {
  int needed = 0;
  for (std::size_t size : group_sizes_) {
    if (count <= 0) break;
    count -= static_cast<int>(size);
    ++needed;
  }
  return needed;
}

void Simulation::schedule_failure(double after) {
  std::exponential_distribution<double> gap(failure_rate_per_s_);
  push(after + gap(rng_), EventKind::failure, 0);
}

void Simulation::schedule_group_failure(double after) {
  std::exponential_distribution<double> gap(group_failure_rate_per_s_);
  push(after + gap(group_rng_), EventKind::group_failure, 0);
}

void Simulation::advance(double now) {
  const double dt = now - last_time_;
  if (dt > 0) {
    result_.busy_node_s += dt * busy_;
    result_.down_node_s += dt * down_;
    result_.spare_node_s += dt * spare_free_;
    if (!queue_.empty()) result_.idle_while_waiting_node_s += dt * free_;
  }
  last_time_ = now;
}

void Simulation::record_busy(double now) {
  if (!result_.busy_nodes.empty() && result_.busy_nodes.back().first == now) {
    result_.busy_nodes.back().second = busy_;
  } else {
    result_.busy_nodes.emplace_back(now, busy_);
  }
}

void Simulation::handle(const Event& e, double now) {
  switch (e.kind) {
    case EventKind::submit:
      queue_.insert(e.index);
      break;
    case EventKind::finish: {
      auto& s = state_[e.index];
      if (!s.running || s.run != e.run) break;  // stale: that run was interrupted
      if (s.hung_since >= 0) break;             // hung: the watchdog ends this run
      result_.jobs[e.index].runs.push_back({s.progress.start_s(), now, s.nodes, false});
      // A run after a failure starts with its restart: time the failure cost too.
      result_.jobs[e.index].lost_s += s.progress.overhead_s();
      result_.lost_node_s += s.progress.overhead_s() * s.nodes.size();
      attribute(e.index, s.progress.split(s.remaining_s, now));
      neighbours_changed(e.index);
      release(s.nodes, now);
      release_quota(e.index, now);
      s.running = false;
      running_.erase(e.index);
      s.remaining_s = 0;
      result_.jobs[e.index].end_s = now;
      ++done_;
      break;
    }
    case EventKind::hang: {
      auto& s = state_[e.index];
      if (!s.running || s.run != e.run) break;  // stale: a failure or preemption ended the hung run first
      if (checkpointless()) {  // the healthy processes re-form on the same nodes
        recover_in_process(e.index, s.nodes, now);
        break;
      }
      const std::vector<int> nodes = s.nodes;
      interrupt(e.index, now);
      start(e.index, now, nodes);  // restarted on the same nodes
      break;
    }
    case EventKind::straggler: {
      auto& s = state_[e.index];
      if (!s.running || s.placement != e.run || s.hung_since >= 0) break;  // stale, or the watchdog's to end
      evict_stragglers(e.index, now);
      break;
    }
    case EventKind::group_failure: {
      if (e.run < 0) {  // injected
        fail_group(e.index, now);
        break;
      }
      std::uniform_int_distribution<int> pick(0, groups() - 1);
      fail_group(pick(group_rng_), now);
      if (done_ < static_cast<int>(jobs_.size())) schedule_group_failure(now);
      break;
    }
    case EventKind::group_repair:
      for (int n : members_[e.index]) bring_up(n);
      break;
    case EventKind::failure: {
      if (e.run < 0) {  // injected: a given node
        fail(e.index, now, options_.failures.injected[-1 - e.run].recovery);
        break;
      }
      std::uniform_int_distribution<int> pick(0, shape_.nodes - 1);
      fail(pick(rng_), now);
      if (done_ < static_cast<int>(jobs_.size())) schedule_failure(now);
      break;
    }
    case EventKind::repair:
      bring_up(e.index);
      break;
  }
}

void Simulation::release(const std::vector<int>& nodes, double now) {
  for (int n : nodes) {
    node_[n] = kFree;
    ++group_free_[group_of(n)];
  }
  free_ += static_cast<int>(nodes.size());
  busy_ -= static_cast<int>(nodes.size());
  record_busy(now);
}

void Simulation::claim(int j, const std::vector<int>& nodes, double now) {
  for (int n : nodes) {
    node_[n] = j;
    --group_free_[group_of(n)];
  }
  free_ -= static_cast<int>(nodes.size());
  busy_ += static_cast<int>(nodes.size());
  record_busy(now);
}

void Simulation::start(int j, double now, std::vector<int> nodes) {
  auto& s = state_[j];
  auto& outcome = result_.jobs[j];
  // A topology request places it as Slurm's topology plugin does (best fit into one group, which a
  // required job is known to have: can_place), whatever the cluster's placement policy.
  const Placement placement = jobs_[j].topology == TopologyRequest::none ? options_.placement : Placement::topology;
  if (nodes.empty() && jobs_[j].topology != TopologyRequest::none && jobs_[j].topology_level == TopologyLevel::block) {
    // A block request: the best-fitting block, the topology plugin's placement within it (a preferred
    // job with no block free enough goes wherever the plugin puts it).
    const int b = fitting_block(jobs_[j].nodes);
    if (b >= 0) nodes = place_in_block(b, jobs_[j].nodes);
  }
  s.nodes = nodes.empty() ? place(jobs_[j].nodes, placement) : std::move(nodes);
  take_quota(j, now);
  claim(j, s.nodes, now);
  const int held = static_cast<int>(s.nodes.size());  // fewer than asked for: an elastic job restarted as it was
  s.running = true;
  s.hung_since = -1;
  s.progress.begin(now, outcome.restarts > 0 ? options_.failures.restart_s : 0.0, static_cast<double>(held) / jobs_[j].nodes,
                   speed_on(s.nodes), 1.0);
  running_.insert(j);
  queue_.erase(j);
  neighbours_changed(j);
  if (jobs_[j].duration_s <= 0) {
    // A scenario job: its run time at the nodes it got (the same placement on restarts).
    const double d = options_.duration_at(j, s.nodes);
    jobs_[j].duration_s = d;
    if (jobs_[j].time_limit_s < d) jobs_[j].time_limit_s = d;
    s.remaining_s = d;
  }
  watch_stragglers(j);
  if (outcome.first_start_s < 0) {
    outcome.first_start_s = now;
    std::set<int> spanned;
    for (int n : s.nodes) spanned.insert(group_of(n));
    outcome.groups_spanned = static_cast<int>(spanned.size());
    outcome.min_groups = min_groups(jobs_[j].nodes);
  }
  push_finish(j);
}

int Simulation::fitting_block(int count) const {
  int best = -1, best_free = 0;
  for (std::size_t b = 0; b < blocks_.size(); ++b) {
    int free = 0;
    for (int g : blocks_[b]) free += group_free_[g];
    if (free >= count && (best < 0 || free < best_free)) {
      best = static_cast<int>(b);
      best_free = free;
    }
  }
  return best;
}

std::vector<int> Simulation::place_in_block(int b, int count) const {
  std::vector<std::vector<int>> members;
  std::vector<int> free;
  for (int g : blocks_[b]) {
    members.push_back(members_[g]);
    free.push_back(group_free_[g]);
  }
  return detail::place_nodes(count, Placement::topology, members, free, [this](int n) { return node_[n] == kFree; });
}

double Simulation::expected_end(int j) const {
  const auto& s = state_[j];
  return s.progress.time_for(s.remaining_s * jobs_[j].time_limit_s / jobs_[j].duration_s);
}

void Simulation::schedule(double now) {
  if (queue_.empty()) return;
  if (options_.policy == Policy::kueue) {
    schedule_kueue(now);
    return;
  }
  if (free_ == 0) return;
  std::vector<int> order(queue_.begin(), queue_.end());  // arrival order (trace index)
  if (options_.policy == Policy::priority) {
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return jobs_[a].priority > jobs_[b].priority; });
  }
  bool reserved = false;
  double shadow_s = 0;
  int extra = 0;
  for (int j : order) {
    const int need = jobs_[j].nodes;
    if (!reserved) {
      if (can_place(j)) {
        start(j, now);
        continue;
      }
      if (options_.policy == Policy::fifo) return;
      // EASY backfill: the first job that does not fit reserves the earliest time enough nodes free up.
      std::vector<std::pair<double, int>> ends;
      for (int k : running_) ends.emplace_back(expected_end(k), jobs_[k].nodes);
      std::sort(ends.begin(), ends.end());
      int available = free_;
      shadow_s = INFINITY;
      for (const auto& [end, nodes] : ends) {
        available += nodes;
        if (available >= need) {
          shadow_s = end;
          break;
        }
      }
      extra = std::isfinite(shadow_s) ? available - need : 0;
      reserved = true;
      continue;
    }
    if (!can_place(j)) continue;
    // A scenario job not yet started has no known run time: its time limit, if the trace gives one.
    const double planned = jobs_[j].duration_s > 0 ? state_[j].remaining_s * jobs_[j].time_limit_s / jobs_[j].duration_s
                           : jobs_[j].time_limit_s > 0 ? jobs_[j].time_limit_s
                                                       : INFINITY;
    const double ends_by = now + planned + (result_.jobs[j].restarts > 0 ? options_.failures.restart_s : 0.0);
    if (ends_by <= shadow_s) {
      start(j, now);
    } else if (need <= extra) {
      extra -= need;
      start(j, now);
    }
    if (free_ == 0) return;
  }
}

}  // namespace fmsim::cluster::detail

namespace fmsim::cluster {


ClusterResult simulate_cluster(const ClusterShape& shape, const std::vector<JobSpec>& jobs, const SimOptions& options) {
  return detail::Simulation(shape, jobs, options).run();
}

int ClusterShape::groups() const {
  if (node_group.empty()) return (nodes + group_nodes() - 1) / group_nodes();
  return node_group.empty() ? 0 : *std::max_element(node_group.begin(), node_group.end()) + 1;
}

int ClusterShape::blocks() const { return group_block.empty() ? 0 : *std::max_element(group_block.begin(), group_block.end()) + 1; }

std::vector<std::vector<int>> ClusterShape::block_groups() const {
  std::vector<std::vector<int>> out(blocks());
  for (std::size_t g = 0; g < group_block.size(); ++g) out[group_block[g]].push_back(static_cast<int>(g));
  return out;
}

std::vector<std::vector<int>> ClusterShape::group_members() const {
  std::vector<std::vector<int>> members(groups());
  for (int n = 0; n < nodes; ++n) members[group_of(n)].push_back(n);
  return members;
}

std::string to_string(Policy policy) {
  switch (policy) {
    case Policy::fifo: return "fifo";
    case Policy::backfill: return "backfill";
    case Policy::priority: return "priority";
    case Policy::kueue: return "kueue";
  }
  return "backfill";
}

std::string to_string(Placement placement) { return placement == Placement::spread ? "spread" : "topology"; }

std::string to_string(JobRecovery recovery) { return recovery == JobRecovery::checkpointless ? "checkpointless" : "restart"; }

}  // namespace fmsim::cluster
