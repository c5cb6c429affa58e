// Failures by cause, hangs, hot spares and stragglers of the shared-cluster simulation
// (cluster_simulation.hpp; docs/model.md "Shared cluster").
#include "cluster_simulation.hpp"

#include <cmath>
#include <stdexcept>

namespace fmsim::cluster::detail {

void Simulation::fail(int node, double now, std::optional<Recovery> forced) {
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
    if (checkpointless()) {  // the crashed process restarts in place; its peers hold its state
      recover_in_process(job, s.nodes, now);
      return;
    }
    const std::vector<int> nodes = s.nodes;
    interrupt(job, now);
    start(job, now, nodes);
    return;
  }
  // Its job goes on without it (elastic; a hung one cannot: it restarts, its progress stopped), in process on
  // a replacement (checkpointless), or from its checkpoint on a hot spare of the node's group first.
  if (job >= 0) {
    lose_nodes(job, {node}, now, group_of(node));
  } else {
    take_down(node);  // a free node or a spare
  }
  push(now + options_.failures.repair_s, EventKind::repair, node);
}

void Simulation::take_down(int n) {
  if (node_[n] == kDown) {
    ++down_holds_[n];
    return;
  }
  if (node_[n] >= 0) throw std::logic_error("a node taken down while a job holds it");
  if (node_[n] == kFree) {
    --free_;
    --group_free_[group_of(n)];
  } else {  // kSpare
    --spare_free_;
  }
  node_[n] = kDown;
  down_holds_[n] = 1;
  ++down_;
}

void Simulation::bring_up(int n) {
  if (--down_holds_[n] > 0) return;  // still out for another reason (its group, or its own repair)
  --down_;
  if (spare_free_ < options_.failures.spare_nodes) {  // the spare pool first
    node_[n] = kSpare;
    ++spare_free_;
    return;
  }
  node_[n] = kFree;
  ++free_;
  ++group_free_[group_of(n)];
}

void Simulation::setup_spares_and_stragglers() {
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
  for (int n : f.straggler_nodes) {
    if (n < 0 || n >= shape_.nodes) throw std::logic_error("a given straggler node outside the cluster");
    straggler_[n] = true;
  }
  if (f.straggler_fraction > 0) {
    std::mt19937_64 draw(f.seed ^ 0x5354524147474C45ULL);  // its own stream: failures draw the same with or without
    std::bernoulli_distribution slow(std::min(1.0, f.straggler_fraction));
    for (int n = 0; n < shape_.nodes; ++n) {
      if (slow(draw)) straggler_[n] = true;
    }
  }
  for (int n = 0; n < shape_.nodes; ++n) {
    if (straggler_[n]) result_.stragglers.push_back(n);
  }
}

int Simulation::take_spare(int group) {
  if (spare_free_ == 0) return -1;
  int pick = -1;
  for (int n : group >= 0 ? members_[group] : std::vector<int>{}) {
    if (node_[n] == kSpare) {
      pick = n;
      break;
    }
  }
  for (int n = shape_.nodes - 1; pick < 0 && n >= 0; --n) {
    if (node_[n] == kSpare) pick = n;
  }
  if (pick < 0) return -1;
  node_[pick] = kFree;
  --spare_free_;
  ++free_;
  ++group_free_[group_of(pick)];
  return pick;
}

double Simulation::speed_on(const std::vector<int>& nodes) const {
  for (int n : nodes) {
    if (straggler_[n]) return 1.0 / (1.0 + options_.failures.straggler_slowdown);
  }
  return 1.0;
}

void Simulation::watch_stragglers(int j) {
  auto& s = state_[j];
  ++s.placement;
  if (options_.failures.straggler_detect_s <= 0 || speed_on(s.nodes) >= 1.0) return;
  push(s.progress.start_s() + s.progress.overhead_s() + options_.failures.straggler_detect_s, EventKind::straggler, j, s.placement);
}

void Simulation::evict_stragglers(int j, double now) {
  std::vector<int> slow;
  for (int n : state_[j].nodes) {
    if (straggler_[n]) slow.push_back(n);
  }
  if (slow.empty()) return;
  for (int n : slow) {
    straggler_[n] = false;  // diagnosed and repaired: it returns at full speed
    result_.evictions.push_back({now, n, j});
  }
  result_.jobs[j].straggler_evictions += static_cast<int>(slow.size());
  lose_nodes(j, slow, now, group_of(slow.front()));  // a spare under the same switch first, as for a failure
  for (int n : slow) push(now + options_.failures.repair_s, EventKind::repair, n);
}

void Simulation::attribute(int j, const detail::RunProgress::Split& split) {
  const double nodes = static_cast<double>(state_[j].nodes.size());
  result_.jobs[j].straggler_s += split.straggler_s;
  result_.jobs[j].contention_s += split.contention_s;
  result_.straggler_node_s += split.straggler_s * nodes;
  result_.contention_node_s += split.contention_s * nodes;
}

void Simulation::interrupt(int j, double now) {
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
  neighbours_changed(j);
  outcome.runs.push_back({s.progress.start_s(), now, s.nodes, true});
  ++outcome.restarts;
  release(s.nodes, now);
  release_quota(j, now);
  s.running = false;
  running_.erase(j);
  ++s.run;
  queue_.insert(j);
}

}  // namespace fmsim::cluster::detail
