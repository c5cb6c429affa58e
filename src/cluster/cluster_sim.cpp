// The shared-cluster simulation (cluster_sim.hpp): an event queue of submissions, completions, node
// failures and repairs, and a scheduling pass after each instant.
#include "fmsim/cluster/cluster_sim.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <random>
#include <set>
#include <stdexcept>

namespace fmsim::cluster {

namespace {

enum class EventKind { repair, finish, failure, submit };  // at one instant: repairs and completions free nodes first

struct Event {
  double time = 0;
  EventKind kind = EventKind::submit;
  long long seq = 0;
  int index = 0;  ///< job (submit, finish), node (repair); unused for failure
  int run = 0;    ///< finish: the run it ends (a failure makes older finish events stale)
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

constexpr int kFree = -1, kDown = -2;

class Simulation {
 public:
  Simulation(const ClusterShape& shape, std::vector<JobSpec> jobs, const SimOptions& options)
      : shape_(shape), jobs_(std::move(jobs)), options_(options), rng_(options.failures.seed), node_(shape.nodes, kFree),
        group_free_(shape.groups(), 0), members_(shape.group_members()), state_(jobs_.size()) {
    for (int n = 0; n < shape.nodes; ++n) ++group_free_[group_of(n)];
    free_ = shape.nodes;
    result_.jobs.resize(jobs_.size());
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      state_[j].remaining_s = jobs_[j].duration_s;
      push(jobs_[j].submit_s, EventKind::submit, static_cast<int>(j));
      if (jobs_[j].duration_s <= 0 && !options.duration_at) throw std::logic_error("a scenario job without a duration_at callback");
    }
    failure_rate_per_s_ = options.failures.node_failures_per_node_hour * shape.nodes / 3600.0;
    if (failure_rate_per_s_ > 0) schedule_failure(jobs_.empty() ? 0.0 : jobs_.front().submit_s);
  }

  ClusterResult run() {
    const double first_submit = jobs_.empty() ? 0.0 : jobs_.front().submit_s;
    last_time_ = first_submit;
    result_.busy_nodes.emplace_back(first_submit, 0);
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
    }
    result_.makespan_s = last_time_ - first_submit;
    for (std::size_t j = 0; j < jobs_.size(); ++j) result_.jobs[j].duration_s = jobs_[j].duration_s;
    return std::move(result_);
  }

 private:
  struct JobState {
    double remaining_s = 0;   ///< work left (at the last checkpoint)
    double run_start_s = 0;   ///< start of the current run
    double overhead_s = 0;    ///< restart cost at the head of the current run
    int run = 0;
    bool running = false;
    std::vector<int> nodes;
  };

  int group_of(int node) const { return shape_.group_of(node); }
  int groups() const { return static_cast<int>(group_free_.size()); }

  void push(double time, EventKind kind, int index, int run = 0) { events_.push({time, kind, seq_++, index, run}); }

  void schedule_failure(double after) {
    std::exponential_distribution<double> gap(failure_rate_per_s_);
    push(after + gap(rng_), EventKind::failure, 0);
  }

  /// Integrates the busy, down and idle-while-waiting node-seconds up to `now`.
  void advance(double now) {
    const double dt = now - last_time_;
    if (dt > 0) {
      result_.busy_node_s += dt * busy_;
      result_.down_node_s += dt * down_;
      if (!queue_.empty()) result_.idle_while_waiting_node_s += dt * free_;
    }
    last_time_ = now;
  }

  void record_busy(double now) {
    if (!result_.busy_nodes.empty() && result_.busy_nodes.back().first == now) {
      result_.busy_nodes.back().second = busy_;
    } else {
      result_.busy_nodes.emplace_back(now, busy_);
    }
  }

  void handle(const Event& e, double now) {
    switch (e.kind) {
      case EventKind::submit:
        queue_.insert(e.index);
        break;
      case EventKind::finish: {
        auto& s = state_[e.index];
        if (!s.running || s.run != e.run) break;  // stale: that run was interrupted
        result_.jobs[e.index].runs.push_back({s.run_start_s, now, s.nodes, false});
        // A run after a failure starts with its restart: time the failure cost too.
        result_.jobs[e.index].lost_s += s.overhead_s;
        result_.lost_node_s += s.overhead_s * s.nodes.size();
        release(s.nodes, now);
        s.running = false;
        running_.erase(e.index);
        s.remaining_s = 0;
        result_.jobs[e.index].end_s = now;
        ++done_;
        break;
      }
      case EventKind::failure: {
        std::uniform_int_distribution<int> pick(0, shape_.nodes - 1);
        fail(pick(rng_), now);
        if (done_ < static_cast<int>(jobs_.size())) schedule_failure(now);
        break;
      }
      case EventKind::repair:
        node_[e.index] = kFree;
        --down_;
        ++free_;
        ++group_free_[group_of(e.index)];
        break;
    }
  }

  void fail(int node, double now) {
    if (node_[node] == kDown) return;  // already in repair
    ++result_.node_failures;
    result_.failures.push_back({now, node});
    if (node_[node] >= 0) {
      const int j = node_[node];
      auto& s = state_[j];
      auto& outcome = result_.jobs[j];
      const double ran = now - s.run_start_s;
      const double worked = std::max(0.0, ran - s.overhead_s);
      const double interval = jobs_[j].checkpoint_interval_s;
      const double kept = interval > 0 ? std::min(s.remaining_s, std::floor(worked / interval) * interval) : 0.0;
      s.remaining_s -= kept;
      outcome.lost_s += ran - kept;
      result_.lost_node_s += (ran - kept) * s.nodes.size();
      outcome.runs.push_back({s.run_start_s, now, s.nodes, true});
      ++outcome.restarts;
      release(s.nodes, now);
      s.running = false;
      running_.erase(j);
      ++s.run;
      queue_.insert(j);
    }
    // The node (now free) goes to repair.
    node_[node] = kDown;
    --free_;
    --group_free_[group_of(node)];
    ++down_;
    push(now + options_.failures.repair_s, EventKind::repair, node);
  }

  void release(const std::vector<int>& nodes, double now) {
    for (int n : nodes) {
      node_[n] = kFree;
      ++group_free_[group_of(n)];
    }
    free_ += static_cast<int>(nodes.size());
    busy_ -= static_cast<int>(nodes.size());
    record_busy(now);
  }

  /// Free nodes for a job of `count`, by the placement policy (free_ >= count).
  std::vector<int> place(int count) {
    std::vector<int> chosen;
    chosen.reserve(count);
    auto take_from = [&](int g, int want) {
      for (int n : members_[g]) {
        if (want <= 0) break;
        if (node_[n] == kFree) {
          chosen.push_back(n);
          --want;
        }
      }
    };
    std::vector<int> order(groups());
    std::iota(order.begin(), order.end(), 0);
    if (options_.placement == Placement::topology) {
      // Best fit into one group; otherwise the emptiest groups first (the fewest switches or domains).
      int best = -1;
      for (int g : order) {
        if (group_free_[g] >= count && (best < 0 || group_free_[g] < group_free_[best])) best = g;
      }
      if (best >= 0) {
        take_from(best, count);
        return chosen;
      }
      std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return group_free_[a] > group_free_[b]; });
      for (int g : order) {
        const int want = count - static_cast<int>(chosen.size());
        if (want <= 0) break;
        take_from(g, std::min(want, group_free_[g]));
      }
      return chosen;
    }
    // Least-allocated scoring: each pod goes to a node of the emptiest group, so a gang spreads.
    std::vector<int> left = group_free_;
    std::vector<int> per_group(groups(), 0);
    for (int k = 0; k < count; ++k) {
      int best = 0;
      for (int g = 1; g < groups(); ++g) {
        if (left[g] > left[best]) best = g;
      }
      --left[best];
      ++per_group[best];
    }
    for (int g = 0; g < groups(); ++g) {
      if (per_group[g] > 0) take_from(g, per_group[g]);
    }
    return chosen;
  }

  void start(int j, double now) {
    auto& s = state_[j];
    auto& outcome = result_.jobs[j];
    s.nodes = place(jobs_[j].nodes);
    for (int n : s.nodes) {
      node_[n] = j;
      --group_free_[group_of(n)];
    }
    free_ -= jobs_[j].nodes;
    busy_ += jobs_[j].nodes;
    record_busy(now);
    s.running = true;
    running_.insert(j);
    queue_.erase(j);
    s.run_start_s = now;
    s.overhead_s = outcome.restarts > 0 ? options_.failures.restart_s : 0.0;
    if (jobs_[j].duration_s <= 0) {
      // A scenario job: its run time at the nodes it got (the same placement on restarts).
      const double d = options_.duration_at(j, s.nodes);
      jobs_[j].duration_s = d;
      if (jobs_[j].time_limit_s < d) jobs_[j].time_limit_s = d;
      s.remaining_s = d;
    }
    if (outcome.first_start_s < 0) {
      outcome.first_start_s = now;
      std::set<int> spanned;
      for (int n : s.nodes) spanned.insert(group_of(n));
      outcome.groups_spanned = static_cast<int>(spanned.size());
      outcome.min_groups = shape_.min_groups(jobs_[j].nodes);
    }
    push(now + s.overhead_s + s.remaining_s, EventKind::finish, j, s.run);
  }

  /// When the scheduler expects a running job to end: its restart cost and the rest of its time limit.
  double expected_end(int j) const {
    const auto& s = state_[j];
    const double limit_left = s.remaining_s * jobs_[j].time_limit_s / jobs_[j].duration_s;
    return s.run_start_s + s.overhead_s + limit_left;
  }

  void schedule(double now) {
    if (queue_.empty() || free_ == 0) return;
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
        if (need <= free_) {
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
      if (need > free_) continue;
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

  ClusterShape shape_;
  std::vector<JobSpec> jobs_;  ///< a copy: scenario jobs get their duration when they start
  SimOptions options_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long seq_ = 0;
  std::vector<int> node_;        ///< job index, kFree or kDown
  std::vector<int> group_free_;  ///< free nodes per leaf switch (or NVLink domain)
  std::vector<std::vector<int>> members_;  ///< the nodes of each group
  std::vector<JobState> state_;
  std::set<int> queue_;          ///< waiting jobs, by trace index (= arrival order)
  std::set<int> running_;
  int free_ = 0, busy_ = 0, down_ = 0, done_ = 0;
  double failure_rate_per_s_ = 0;
  double last_time_ = 0;
  ClusterResult result_;
};

}  // namespace

ClusterResult simulate_cluster(const ClusterShape& shape, const std::vector<JobSpec>& jobs, const SimOptions& options) {
  return Simulation(shape, jobs, options).run();
}

int ClusterShape::groups() const {
  if (node_group.empty()) return (nodes + group_nodes() - 1) / group_nodes();
  return node_group.empty() ? 0 : *std::max_element(node_group.begin(), node_group.end()) + 1;
}

std::vector<std::vector<int>> ClusterShape::group_members() const {
  std::vector<std::vector<int>> members(groups());
  for (int n = 0; n < nodes; ++n) members[group_of(n)].push_back(n);
  return members;
}

int ClusterShape::min_groups(int count) const {
  std::vector<std::size_t> sizes;
  for (const auto& m : group_members()) sizes.push_back(m.size());
  std::sort(sizes.rbegin(), sizes.rend());
  int groups_needed = 0;
  for (std::size_t size : sizes) {
    if (count <= 0) break;
    count -= static_cast<int>(size);
    ++groups_needed;
  }
  return groups_needed;
}

std::string to_string(Policy policy) {
  switch (policy) {
    case Policy::fifo: return "fifo";
    case Policy::backfill: return "backfill";
    case Policy::priority: return "priority";
  }
  return "backfill";
}

std::string to_string(Placement placement) { return placement == Placement::spread ? "spread" : "topology"; }

}  // namespace fmsim::cluster
