#pragma once
// The shared-cluster simulation's state and steps (cluster_sim.hpp): an event queue of submissions,
// completions, failures, hangs and repairs, and a scheduling pass after each instant. Its steps are defined
// by concern: events, placement and scheduling (cluster_sim.cpp), failures, hot spares and stragglers
// (cluster_sim_failures.cpp), a running job's changing rate: elastic resizing and contention
// (cluster_sim_rates.cpp), and Kueue admission (cluster_sim_kueue.cpp).
#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <vector>

#include "fmsim/cluster/cluster_sim.hpp"
#include "fmsim/cluster/failure_causes.hpp"
#include "kueue_quotas.hpp"
#include "node_placement.hpp"
#include "run_progress.hpp"

namespace fmsim::cluster::detail {

// At one instant: repairs and completions free nodes first; a hang's watchdog fires before new failures.
// A straggler check after the finish of that instant (a job that ends then evicts nothing).
enum class EventKind { repair, group_repair, finish, hang, straggler, failure, group_failure, submit };

struct Event {
  double time = 0;
  EventKind kind = EventKind::submit;
  long long seq = 0;
  int index = 0;  ///< job (submit, finish, hang, straggler), node (repair, injected failure), group (group failure and repair)
  int run = 0;    ///< finish, hang: the run it ends (a failure makes older ones stale); straggler: the placement it
                  ///< checks; injected failure: -1 - its index
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

constexpr int kFree = -1, kDown = -2, kSpare = -3;

class Simulation {
 public:
  Simulation(const ClusterShape& shape, std::vector<JobSpec> jobs, const SimOptions& options);

  ClusterResult run();

 private:
  struct JobState {
    double remaining_s = 0;   ///< work left at the start of the current run (its last checkpoint)
    /// The current run: start, restart (or rescale) overhead, and its rate of work over time: the share of
    /// its requested nodes it runs on (elastic), 1 / (1 + straggler slowdown) with a straggler among them,
    /// and its contention factor (its step alone / beside its neighbours).
    detail::RunProgress progress;
    double hung_since = -1;   ///< a hung collective stopped its progress then (the watchdog fires later)
    int run = 0;
    int placement = 0;        ///< counts the runs that began on (possibly) other nodes: a straggler check's epoch
    bool running = false;
    std::vector<int> nodes;
  };

  int group_of(int node) const { return shape_.group_of(node); }
  /// The fewest groups `count` nodes fit in (largest first; the sizes sorted once).
  int min_groups(int count) const;
  int groups() const { return static_cast<int>(group_free_.size()); }

  void push(double time, EventKind kind, int index, int run = 0) { events_.push({time, kind, seq_++, index, run}); }

  void schedule_failure(double after);
  void schedule_group_failure(double after);

  /// Integrates the busy, down and idle-while-waiting node-seconds up to `now`.
  void advance(double now);

  void record_busy(double now);

  void handle(const Event& e, double now);

  /// Node `node` fails now, with a cause drawn from the Llama 3 table (of the given recovery when one is
  /// given); what follows depends on the cause's recovery (failure_causes.hpp).
  void fail(int node, double now, std::optional<Recovery> forced = std::nullopt);
  /// Placement group `group` fails now: each of its nodes is out until the group's repair; the jobs on
  /// them go on without those nodes (elastic), from in process on replacements (checkpointless), restart
  /// on hot spares, or requeue.
  void fail_group(int group, double now);
  /// Node n goes out (free, spare or already out; a job's node only after the job let it go): one more
  /// reason for it to stay down.
  void take_down(int n);
  /// One reason fewer; with none left it returns, to the spare pool first.
  void bring_up(int n);
  /// `count` replacement nodes for job j's checkpointless recovery: hot spares (of group `prefer` first),
  /// then free nodes, fewest groups first; empty if there are not enough. A failed group is already out
  /// when its failure asks (fail_group takes its idle nodes down first), so none of its nodes is offered.
  std::vector<int> replacements(int j, int count, int prefer);
  /// Job j goes on from in process on `nodes` (its healthy nodes and the claimed replacements): the step
  /// in flight is lost, the rest kept; it pauses for the checkpointless recovery.
  void recover_in_process(int j, std::vector<int> nodes, double now);
  bool checkpointless() const { return options_.failures.recovery == JobRecovery::checkpointless; }

  // ---- Contention between scenario jobs (SimOptions::contention_at) ----
  bool is_scenario(int j) const { return options_.contention_at && !jobs_[j].scenario.empty(); }
  /// Job j started, ended or was resized: its neighbours' pace is due for another look.
  void neighbours_changed(int j) { contention_dirty_ = contention_dirty_ || is_scenario(j); }
  /// After an instant in which a scenario job started, ended or was resized: the running scenario jobs
  /// whose nodes span more than one leaf switch are grouped by the leaf switches they share (a job under
  /// one switch sends nothing up its uplinks); each group of two or more gets its members' contention
  /// factors, every other job runs at its own pace. A changed factor starts a new segment of the run.
  void update_contention(double now);
  /// Job j works at `contention` of its pace from now on (a hung job keeps its stopped progress).
  void retime(int j, double now, double contention);

  // ---- Hot spares and stragglers ----
  /// The highest-numbered nodes become the spare pool; straggler nodes are drawn once per seed.
  void setup_spares_and_stragglers();
  /// A spare for a failed node of group `group` (one in the same group first, -1: any), now a free node;
  /// -1: none.
  int take_spare(int group);
  /// The pace of a synchronous job on `nodes`: its slowest node's.
  double speed_on(const std::vector<int>& nodes) const;
  /// Job j's run began on its nodes now: with straggler detection on and a straggler among them, its check
  /// comes once it has trained straggler_detect_s.
  void watch_stragglers(int j);
  /// The check fired: the straggler nodes among job j's go to repair and the job goes on without them.
  void evict_stragglers(int j, double now);
  /// Job j loses `lost` of its nodes (they go out): elastic, it goes on without them; checkpointless, in
  /// process on replacements; else it is interrupted, and restarts at once on hot spares if enough are
  /// free. Replacements take the lost nodes' places, from group `prefer` first (-1: any).
  void lose_nodes(int j, const std::vector<int>& lost, double now, int prefer);
  /// Adds what stragglers and contention added to a run's time (the rest is its work or lost).
  void attribute(int j, const detail::RunProgress::Split& split);

  /// Ends job `j`'s run early (a failure of one of its nodes, or a preemption): the work since its last
  /// checkpoint is lost, it frees its nodes and quota and waits again.
  void interrupt(int j, double now);

  // ---- Elastic jobs ----
  /// Settles the work an elastic job's current run did up to `now` and starts a new run on `nodes` after
  /// the rescale pause (the pending finish event goes stale).
  void rescale(int j, std::vector<int> nodes, double now);
  /// Nodes of elastic job j failed: it goes on without them (they go to repair as usual).
  void shrink(int j, const std::vector<int>& failed, double now);
  /// After the queue is served, elastic jobs below their size take free nodes back.
  void grow(double now);

  // ---- Kueue (kueue.hpp) ----
  void setup_kueue();
  double job_gpus(int j) const { return jobs_[j].nodes * static_cast<double>(shape_.gpus_per_node); }
  void take_quota(int j, double now) { take_quota_part(j, now, state_[j].nodes.size() * static_cast<double>(shape_.gpus_per_node)); }
  void take_quota_part(int j, double now, double gpus);
  void release_quota(int j, double now) { release_quota_part(j, now, state_[j].nodes.size() * static_cast<double>(shape_.gpus_per_node)); }
  void release_quota_part(int j, double now, double gpus);
  /// Preemption for job j (blocked by quota or nodes): reclaim within the cohort (jobs of queues borrowing
  /// beyond their nominal quota, when j's queue stays within its own) and, with LowerPriority within its
  /// queue, its own queue's lower-priority jobs; the lowest priority and latest started first. Preempts
  /// only if that makes room for j.
  bool try_preempt(int j, double now);
  void schedule_kueue(double now);

  void release(const std::vector<int>& nodes, double now);
  /// The twin of release: job j holds `nodes` (free ones) from now on.
  void claim(int j, const std::vector<int>& nodes, double now);
  /// The event that ends job j's current run, at its current pace.
  void push_finish(int j) { push(state_[j].progress.time_for(state_[j].remaining_s), EventKind::finish, j, state_[j].run); }

  /// Free nodes for a job of `count`, by the placement policy (free_ >= count).
  std::vector<int> place(int count, Placement placement) const {
    return detail::place_nodes(count, placement, members_, group_free_, [this](int n) { return node_[n] == kFree; });
  }
  std::vector<int> place(int count) const { return place(count, options_.placement); }
  /// The block with the fewest free nodes that still holds `count` (best fit); -1: none.
  int fitting_block(int count) const;
  /// `count` free nodes of block b, as the topology plugin places them within it.
  std::vector<int> place_in_block(int b, int count) const;
  /// Whether job j can start on the free nodes now: anywhere, or under one group (or in one block) when it
  /// requires that.
  bool can_place(int j) const {
    if (jobs_[j].topology != TopologyRequest::required) return jobs_[j].nodes <= free_;
    if (jobs_[j].topology_level == TopologyLevel::block) return fitting_block(jobs_[j].nodes) >= 0;
    return std::any_of(group_free_.begin(), group_free_.end(), [&](int f) { return f >= jobs_[j].nodes; });
  }

  /// Starts job j on free nodes: the placement policy's, or `nodes` (a restart on the nodes it had).
  void start(int j, double now, std::vector<int> nodes = {});

  /// When the scheduler expects a running job to end: its restart cost and the rest of its time limit.
  double expected_end(int j) const;

  void schedule(double now);

  ClusterShape shape_;
  std::vector<JobSpec> jobs_;  ///< a copy: scenario jobs get their duration when they start
  SimOptions options_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long seq_ = 0;
  std::vector<int> node_;        ///< job index, kFree, kDown or kSpare
  std::vector<int> down_holds_;  ///< per node: outstanding reasons it is down (its own repair, its group's)
  std::vector<int> group_free_;  ///< free nodes per leaf switch (or NVLink domain)
  std::vector<std::vector<int>> members_;  ///< the nodes of each group
  std::vector<std::vector<int>> blocks_;   ///< the groups of each block (empty: no block level)
  std::vector<JobState> state_;
  std::vector<int> cq_of_;        ///< Kueue: each job's ClusterQueue
  std::optional<detail::KueueQuotas> quotas_;  ///< Kueue's quotas (Policy::kueue)
  bool elastic_ = false;          ///< some job is elastic (min_nodes)
  std::vector<std::size_t> group_sizes_;  ///< nodes per group, largest first
  /// A failure's root cause, in the Llama 3 table's proportions (failure_causes.hpp).
  std::discrete_distribution<int> cause_ = [] {
    std::vector<int> weights;
    for (const auto& c : llama3_failure_causes()) weights.push_back(c.count);
    return std::discrete_distribution<int>(weights.begin(), weights.end());
  }();
  /// The same, among the causes of one recovery (an injected failure of a given kind), by Recovery value.
  std::vector<std::discrete_distribution<int>> cause_of_ = [] {
    std::vector<std::discrete_distribution<int>> by;
    for (Recovery r : {Recovery::repair, Recovery::restart, Recovery::hang}) {
      std::vector<int> weights;
      for (const auto& c : llama3_failure_causes()) weights.push_back(c.recovery() == r ? c.count : 0);
      by.emplace_back(weights.begin(), weights.end());
    }
    return by;
  }();
  std::vector<bool> straggler_;  ///< per node
  bool contention_dirty_ = false;  ///< a scenario job started, ended or was resized since the last pass
  int spare_free_ = 0;           ///< idle hot spares
  std::set<int> queue_;          ///< waiting jobs, by trace index (= arrival order)
  std::set<int> running_;
  int free_ = 0, busy_ = 0, down_ = 0, done_ = 0;
  double failure_rate_per_s_ = 0;
  double group_failure_rate_per_s_ = 0;
  std::mt19937_64 group_rng_;    ///< group failures draw from their own stream (node failures draw the same either way)
  double last_time_ = 0;
  ClusterResult result_;
};

}  // namespace fmsim::cluster::detail
