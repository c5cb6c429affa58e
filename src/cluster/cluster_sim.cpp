// The shared-cluster simulation (cluster_sim.hpp): an event queue of submissions, completions, node
// failures and repairs, and a scheduling pass after each instant.
#include "fmsim/cluster/cluster_sim.hpp"
#include "fmsim/cluster/failure_causes.hpp"

#include "fmsim/common/error.hpp"
#include "kueue_quotas.hpp"
#include "run_progress.hpp"
#include "node_placement.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <cmath>
#include <optional>
#include <queue>
#include <random>
#include <set>
#include <stdexcept>

namespace fmsim::cluster {

namespace {

// At one instant: repairs and completions free nodes first; a hang's watchdog fires before new failures.
enum class EventKind { repair, finish, hang, failure, submit };

struct Event {
  double time = 0;
  EventKind kind = EventKind::submit;
  long long seq = 0;
  int index = 0;  ///< job (submit, finish, hang), node (repair, injected failure); unused for a random failure
  int run = 0;    ///< finish, hang: the run it ends (a failure makes older ones stale); injected failure: -1 - its index
  bool operator>(const Event& o) const {
    if (time != o.time) return time > o.time;
    if (kind != o.kind) return kind > o.kind;
    return seq > o.seq;
  }
};

constexpr int kFree = -1, kDown = -2, kSpare = -3;

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
    if (options_.policy == Policy::kueue) setup_kueue();
    for (const auto& job : jobs_) elastic_ = elastic_ || job.min_nodes > 0;
    for (const auto& m : members_) group_sizes_.push_back(m.size());
    std::sort(group_sizes_.rbegin(), group_sizes_.rend());
    for (const auto& job : jobs_) {
      const int largest = group_sizes_.empty() ? 0 : static_cast<int>(group_sizes_.front());
      if (job.topology == TopologyRequest::required && job.nodes > largest) {
        throw InputError("job " + job.id + " requires its " + std::to_string(job.nodes) + " nodes under one " +
                         (shape.nodes_per_domain > 1 ? "NVLink domain" : "leaf switch") + ", but the largest holds " +
                         std::to_string(largest) + ": it could never start");
      }
    }
    if (failure_rate_per_s_ > 0) schedule_failure(jobs_.empty() ? 0.0 : jobs_.front().submit_s);
    const auto& injected = options_.failures.injected;
    for (std::size_t i = 0; i < injected.size(); ++i) push(injected[i].time_s, EventKind::failure, injected[i].node, -1 - static_cast<int>(i));
    setup_spares_and_stragglers();
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
      if (elastic_) grow(now);
      update_contention(now);
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

 private:
  struct JobState {
    double remaining_s = 0;   ///< work left at the start of the current run (its last checkpoint)
    /// The current run: start, restart (or rescale) overhead, and its rate of work over time: the share of
    /// its requested nodes it runs on (elastic), 1 / (1 + straggler slowdown) with a straggler among them,
    /// and its contention factor (its step alone / beside its neighbours).
    detail::RunProgress progress;
    double hung_since = -1;   ///< a hung collective stopped its progress then (the watchdog fires later)
    int run = 0;
    bool running = false;
    std::vector<int> nodes;
  };

  int group_of(int node) const { return shape_.group_of(node); }
  /// The fewest groups `count` nodes fit in (largest first; the sizes sorted once).
  int min_groups(int count) const {
    int needed = 0;
    for (std::size_t size : group_sizes_) {
      if (count <= 0) break;
      count -= static_cast<int>(size);
      ++needed;
    }
    return needed;
  }
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
      result_.spare_node_s += dt * spare_free_;
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
        if (s.hung_since >= 0) break;             // hung: the watchdog ends this run
        result_.jobs[e.index].runs.push_back({s.progress.start_s(), now, s.nodes, false});
        // A run after a failure starts with its restart: time the failure cost too.
        result_.jobs[e.index].lost_s += s.progress.overhead_s();
        result_.lost_node_s += s.progress.overhead_s() * s.nodes.size();
        attribute(e.index, s.progress.split(s.remaining_s, now));
        contention_dirty_ = contention_dirty_ || is_scenario(e.index);
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
        const std::vector<int> nodes = s.nodes;
        interrupt(e.index, now);
        start(e.index, now, nodes);  // restarted on the same nodes
        break;
      }
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
        --down_;
        if (spare_free_ < options_.failures.spare_nodes) {  // the spare pool first
          node_[e.index] = kSpare;
          ++spare_free_;
          break;
        }
        node_[e.index] = kFree;
        ++free_;
        ++group_free_[group_of(e.index)];
        break;
    }
  }

  /// Node `node` fails now, with a cause drawn from the Llama 3 table (of the given recovery when one is
  /// given); what follows depends on the cause's recovery (failure_causes.hpp).
  void fail(int node, double now, std::optional<Recovery> forced = std::nullopt) {
    if (node_[node] == kDown) return;  // already in repair
    ++result_.node_failures;
    // Its cause, in Llama 3's proportions, and the GPU a GPU-attributed cause hit.
    std::uniform_int_distribution<int> gpu(0, shape_.gpus_per_node - 1);
    const int drawn = forced ? cause_of_[static_cast<int>(*forced)](rng_) : cause_(rng_);
    const int job = node_[node] >= 0 ? node_[node] : -1;
    result_.failures.push_back({now, node, drawn, gpu(rng_), job});
    const Recovery recovery = llama3_failure_causes()[drawn].recovery();
    if (recovery != Recovery::repair) {  // the node is healthy: only its job is hit
      if (job < 0) return;
      auto& s = state_[job];
      if (recovery == Recovery::hang) {
        if (s.hung_since >= 0) return;  // already hung
        s.hung_since = now;
        ++result_.hangs;
        ++result_.jobs[job].hangs;
        push(now + options_.failures.watchdog_s, EventKind::hang, job, s.run);
        return;
      }
      ++result_.software_restarts;
      const std::vector<int> nodes = s.nodes;
      interrupt(job, now);
      start(job, now, nodes);
      return;
    }
    if (node_[node] == kSpare) --spare_free_;
    std::vector<int> restart_on;  // a hot spare takes the failed node's place
    if (job >= 0) {
      const int j = job;
      // An elastic job goes on without the node (a hung one cannot: it restarts, its progress stopped).
      if (jobs_[j].min_nodes > 0 && static_cast<int>(state_[j].nodes.size()) - 1 >= jobs_[j].min_nodes && state_[j].hung_since < 0) {
        shrink(j, node, now);
      } else {
        if (options_.failures.spare_nodes > 0) {
          const int spare = take_spare(group_of(node));
          if (spare >= 0) {
            restart_on = state_[j].nodes;
            std::replace(restart_on.begin(), restart_on.end(), node, spare);
            ++result_.spare_swaps;
            ++result_.jobs[j].spare_swaps;
          } else {
            ++result_.spares_exhausted;
          }
        }
        interrupt(j, now);
      }
    }
    // The node (now free) goes to repair.
    if (node_[node] == kFree) {
      --free_;
      --group_free_[group_of(node)];
    }
    node_[node] = kDown;
    ++down_;
    push(now + options_.failures.repair_s, EventKind::repair, node);
    if (!restart_on.empty()) start(job, now, restart_on);
  }

  // ---- Contention between scenario jobs (SimOptions::contention_at) ----
  bool is_scenario(int j) const { return options_.contention_at && !jobs_[j].scenario.empty(); }
  /// After an instant in which a scenario job started, ended or was resized: the running scenario jobs
  /// whose nodes span more than one leaf switch are grouped by the leaf switches they share (a job under
  /// one switch sends nothing up its uplinks); each group of two or more gets its members' contention
  /// factors, every other job runs at its own pace. A changed factor starts a new segment of the run.
  void update_contention(double now) {
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
  /// Job j works at `contention` of its pace from now on (a hung job keeps its stopped progress).
  void retime(int j, double now, double contention) {
    auto& s = state_[j];
    if (!s.running || s.hung_since >= 0 || contention == s.progress.contention()) return;
    s.progress.set_rate(now, s.progress.share(), s.progress.speed(), contention);
    ++s.run;
    push(s.progress.time_for(s.remaining_s), EventKind::finish, j, s.run);
  }

  // ---- Hot spares and stragglers ----
  /// The highest-numbered nodes become the spare pool; straggler nodes are drawn once per seed.
  void setup_spares_and_stragglers() {
    const auto& f = options_.failures;
    if (f.spare_nodes >= shape_.nodes) throw std::logic_error("the spare pool must leave nodes to schedule");
    for (int k = 0; k < f.spare_nodes; ++k) {
      const int n = shape_.nodes - 1 - k;
      node_[n] = kSpare;
      --free_;
      --group_free_[group_of(n)];
      ++spare_free_;
    }
    straggler_.assign(shape_.nodes, false);
    if (f.straggler_fraction <= 0) return;
    std::mt19937_64 draw(f.seed ^ 0x5354524147474C45ULL);  // its own stream: failures draw the same with or without
    std::bernoulli_distribution slow(std::min(1.0, f.straggler_fraction));
    for (int n = 0; n < shape_.nodes; ++n) {
      straggler_[n] = slow(draw);
      if (straggler_[n]) result_.stragglers.push_back(n);
    }
  }
  /// A spare for a failed node of group `group` (one in the same group first), now a free node; -1: none.
  int take_spare(int group) {
    if (spare_free_ == 0) return -1;
    int pick = -1;
    for (int n : members_[group]) {
      if (node_[n] == kSpare) {
        pick = n;
        break;
      }
    }
    for (int n = shape_.nodes - 1; pick < 0 && n >= 0; --n) {
      if (node_[n] == kSpare) pick = n;
    }
    node_[pick] = kFree;
    --spare_free_;
    ++free_;
    ++group_free_[group_of(pick)];
    return pick;
  }
  /// The pace of a synchronous job on `nodes`: its slowest node's.
  double speed_on(const std::vector<int>& nodes) const {
    for (int n : nodes) {
      if (straggler_[n]) return 1.0 / (1.0 + options_.failures.straggler_slowdown);
    }
    return 1.0;
  }
  /// Adds what stragglers and contention added to a run's time (the rest is its work or lost).
  void attribute(int j, const detail::RunProgress::Split& split) {
    const double nodes = static_cast<double>(state_[j].nodes.size());
    result_.jobs[j].straggler_s += split.straggler_s;
    result_.jobs[j].contention_s += split.contention_s;
    result_.straggler_node_s += split.straggler_s * nodes;
    result_.contention_node_s += split.contention_s * nodes;
  }

  /// Ends job `j`'s run early (a failure of one of its nodes, or a preemption): the work since its last
  /// checkpoint is lost, it frees its nodes and quota and waits again.
  void interrupt(int j, double now) {
    auto& s = state_[j];
    auto& outcome = result_.jobs[j];
    const double ran = now - s.progress.start_s();
    const double progress_end = s.hung_since >= 0 ? std::min(now, s.hung_since) : now;  // a hang stopped progress
    const double worked = s.progress.work_done(progress_end);  // full-size seconds of work
    const double interval = jobs_[j].checkpoint_interval_s;
    const double kept = interval > 0 ? std::min(s.remaining_s, std::floor(worked / interval) * interval) : 0.0;
    const auto split = s.progress.split(kept, progress_end);  // the time the kept work took; the rest is lost
    s.remaining_s -= kept;
    outcome.lost_s += ran - split.time_s;
    result_.lost_node_s += (ran - split.time_s) * s.nodes.size();
    attribute(j, split);
    s.hung_since = -1;
    contention_dirty_ = contention_dirty_ || is_scenario(j);
    outcome.runs.push_back({s.progress.start_s(), now, s.nodes, true});
    ++outcome.restarts;
    release(s.nodes, now);
    release_quota(j, now);
    s.running = false;
    running_.erase(j);
    ++s.run;
    queue_.insert(j);
  }

  // ---- Elastic jobs ----
  /// Settles the work an elastic job's current run did up to `now` and starts a new run on `nodes` after
  /// the rescale pause (the pending finish event goes stale).
  void rescale(int j, std::vector<int> nodes, double now) {
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
    push(s.progress.time_for(s.remaining_s), EventKind::finish, j, s.run);
    contention_dirty_ = contention_dirty_ || is_scenario(j);
  }
  /// A node of elastic job j failed: it goes on without it (the node goes to repair as usual).
  void shrink(int j, int failed_node, double now) {
    auto nodes = state_[j].nodes;
    nodes.erase(std::remove(nodes.begin(), nodes.end(), failed_node), nodes.end());
    release({failed_node}, now);
    release_quota_part(j, now, shape_.gpus_per_node);
    rescale(j, std::move(nodes), now);
  }
  /// After the queue is served, elastic jobs below their size take free nodes back.
  void grow(double now) {
    for (int j : std::vector<int>(running_.begin(), running_.end())) {
      if (free_ == 0) return;
      const int missing = jobs_[j].nodes - static_cast<int>(state_[j].nodes.size());
      if (missing <= 0 || state_[j].hung_since >= 0) continue;  // a hung job waits for its watchdog
      const int take = std::min(missing, free_);
      if (options_.policy == Policy::kueue && !quotas_->allows(cq_of_[j], take * static_cast<double>(shape_.gpus_per_node))) continue;
      std::vector<int> more = place(take);
      for (int n : more) {
        node_[n] = j;
        --group_free_[group_of(n)];
      }
      free_ -= take;
      busy_ += take;
      record_busy(now);
      take_quota_part(j, now, take * static_cast<double>(shape_.gpus_per_node));
      auto nodes = state_[j].nodes;
      nodes.insert(nodes.end(), more.begin(), more.end());
      rescale(j, std::move(nodes), now);
    }
  }

  // ---- Kueue (kueue.hpp) ----
  void setup_kueue() {
    const KueueConfig& k = *options_.kueue;
    quotas_.emplace(k);
    result_.borrowed_gpu_s.assign(k.cluster_queues.size(), 0.0);
    result_.peak_gpus.assign(k.cluster_queues.size(), 0.0);
    result_.preempted_by.assign(k.cluster_queues.size(), 0);
    cq_of_.resize(jobs_.size());
    for (std::size_t j = 0; j < jobs_.size(); ++j) {
      auto it = k.queue_index.find(jobs_[j].queue);
      if (it == k.queue_index.end()) {
        throw InputError("job " + jobs_[j].id + ": queue '" + jobs_[j].queue + "' is not a LocalQueue or ClusterQueue of " + k.file);
      }
      cq_of_[j] = it->second;
      const double gpus = jobs_[j].nodes * static_cast<double>(shape_.gpus_per_node);
      if (gpus > quotas_->admissible_gpus(it->second)) {
        throw InputError("job " + jobs_[j].id + " (" + std::to_string(static_cast<long long>(gpus)) + " GPUs): ClusterQueue " +
                         k.cluster_queues[it->second].name + " can never admit it (nominal quota " +
                         std::to_string(static_cast<long long>(k.cluster_queues[it->second].nominal_gpus)) +
                         " GPUs plus what its cohort can lend): a quota that admits nothing for this job");
      }
    }
  }
  double job_gpus(int j) const { return jobs_[j].nodes * static_cast<double>(shape_.gpus_per_node); }
  void take_quota(int j, double now) { take_quota_part(j, now, state_[j].nodes.size() * static_cast<double>(shape_.gpus_per_node)); }
  void take_quota_part(int j, double now, double gpus) {
    if (quotas_) quotas_->take(cq_of_[j], gpus, now);
  }
  void release_quota(int j, double now) { release_quota_part(j, now, state_[j].nodes.size() * static_cast<double>(shape_.gpus_per_node)); }
  void release_quota_part(int j, double now, double gpus) {
    if (quotas_) quotas_->release(cq_of_[j], gpus, now);
  }
  /// Preemption for job j (blocked by quota or nodes): reclaim within the cohort (jobs of queues borrowing
  /// beyond their nominal quota, when j's queue stays within its own) and, with LowerPriority within its
  /// queue, its own queue's lower-priority jobs; the lowest priority and latest started first. Preempts
  /// only if that makes room for j.
  bool try_preempt(int j, double now) {
    const auto& cqs = options_.kueue->cluster_queues;
    const int q = cq_of_[j];
    const double gpus = job_gpus(j);
    std::vector<int> candidates;
    for (int k : running_) {
      const int kq = cq_of_[k];
      const bool lower = jobs_[k].priority < jobs_[j].priority;
      if (kq == q) {
        if (cqs[q].within == PreemptWithin::lower_priority && lower) candidates.push_back(k);
      } else if (!cqs[q].cohort.empty() && cqs[kq].cohort == cqs[q].cohort && quotas_->usage()[kq] > cqs[kq].nominal_gpus + 1e-9 &&
                 quotas_->usage()[q] + gpus <= cqs[q].nominal_gpus + 1e-9 &&
                 (cqs[q].reclaim == Reclaim::any || (cqs[q].reclaim == Reclaim::lower_priority && lower))) {
        candidates.push_back(k);
      }
    }
    if (candidates.empty()) return false;
    std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
      if (jobs_[a].priority != jobs_[b].priority) return jobs_[a].priority < jobs_[b].priority;
      return state_[a].progress.start_s() > state_[b].progress.start_s();
    });
    // Simulate the releases on copies, then preempt the prefix that makes room.
    std::vector<double> usage = quotas_->usage();
    int free_nodes = free_;
    std::size_t taken = 0;
    auto room = [&] { return quotas_->allows(q, gpus, usage) && free_nodes >= jobs_[j].nodes; };
    while (!room() && taken < candidates.size()) {
      const int k = candidates[taken++];
      usage[cq_of_[k]] -= state_[k].nodes.size() * static_cast<double>(shape_.gpus_per_node);  // what it holds (elastic: maybe fewer)
      free_nodes += static_cast<int>(state_[k].nodes.size());
    }
    if (!room()) return false;
    for (std::size_t i = 0; i < taken; ++i) {
      ++result_.jobs[candidates[i]].preemptions;
      ++result_.preemptions;
      ++result_.preempted_by[q];
      interrupt(candidates[i], now);
    }
    return true;
  }
  void schedule_kueue(double now) {
    std::vector<int> order(queue_.begin(), queue_.end());  // arrival order
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return jobs_[a].priority > jobs_[b].priority; });
    for (int j : order) {
      if (!queue_.count(j)) continue;  // preempted and requeued during this pass: waits for the next
      const bool fits = quotas_->allows(cq_of_[j], job_gpus(j)) && can_place(j);
      // A job that requires one group does not preempt: the nodes preemption frees may sit anywhere.
      if (fits || (jobs_[j].topology != TopologyRequest::required && try_preempt(j, now))) start(j, now);
    }
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
  std::vector<int> place(int count, Placement placement) const {
    return detail::place_nodes(count, placement, members_, group_free_, [this](int n) { return node_[n] == kFree; });
  }
  std::vector<int> place(int count) const { return place(count, options_.placement); }
  /// Whether job j can start on the free nodes now: anywhere, or under one group when it requires that.
  bool can_place(int j) const {
    if (jobs_[j].topology != TopologyRequest::required) return jobs_[j].nodes <= free_;
    return std::any_of(group_free_.begin(), group_free_.end(), [&](int f) { return f >= jobs_[j].nodes; });
  }

  /// Starts job j on free nodes: the placement policy's, or `nodes` (a restart on the nodes it had).
  void start(int j, double now, std::vector<int> nodes = {}) {
    auto& s = state_[j];
    auto& outcome = result_.jobs[j];
    // A topology request places it as Slurm's topology plugin does (best fit into one group, which a
    // required job is known to have: can_place), whatever the cluster's placement policy.
    const Placement placement = jobs_[j].topology == TopologyRequest::none ? options_.placement : Placement::topology;
    s.nodes = nodes.empty() ? place(jobs_[j].nodes, placement) : std::move(nodes);
    take_quota(j, now);
    for (int n : s.nodes) {
      node_[n] = j;
      --group_free_[group_of(n)];
    }
    const int held = static_cast<int>(s.nodes.size());  // fewer than asked for: an elastic job restarted as it was
    free_ -= held;
    busy_ += held;
    record_busy(now);
    s.running = true;
    s.hung_since = -1;
    s.progress.begin(now, outcome.restarts > 0 ? options_.failures.restart_s : 0.0, static_cast<double>(held) / jobs_[j].nodes,
                     speed_on(s.nodes), 1.0);
    running_.insert(j);
    queue_.erase(j);
    contention_dirty_ = contention_dirty_ || is_scenario(j);
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
      outcome.min_groups = min_groups(jobs_[j].nodes);
    }
    push(s.progress.time_for(s.remaining_s), EventKind::finish, j, s.run);
  }

  /// When the scheduler expects a running job to end: its restart cost and the rest of its time limit.
  double expected_end(int j) const {
    const auto& s = state_[j];
    return s.progress.time_for(s.remaining_s * jobs_[j].time_limit_s / jobs_[j].duration_s);
  }

  void schedule(double now) {
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

  ClusterShape shape_;
  std::vector<JobSpec> jobs_;  ///< a copy: scenario jobs get their duration when they start
  SimOptions options_;
  std::mt19937_64 rng_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  long long seq_ = 0;
  std::vector<int> node_;        ///< job index, kFree, kDown or kSpare
  std::vector<int> group_free_;  ///< free nodes per leaf switch (or NVLink domain)
  std::vector<std::vector<int>> members_;  ///< the nodes of each group
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

}  // namespace fmsim::cluster
