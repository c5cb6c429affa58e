// Where the step time goes, on one rank's time line: at each instant the rank is computing, running the
// optimizer, waiting on exposed communication (by kind), or idle (pipeline bubble). Overlapped
// communication costs nothing here, as in a profiler's "exposed" view.
#include <algorithm>
#include <array>

#include "replay_internal.hpp"

namespace fmsim::training {
namespace {

using workload::Category;

// Priority order: the first active class owns an instant.
constexpr std::array<Category, 7> kPriority = {Category::compute, Category::optimizer, Category::tp_comm, Category::cp_comm,
                                               Category::ep_comm, Category::pp_comm, Category::dp_comm};

int class_index(Category category) {
  for (std::size_t i = 0; i < kPriority.size(); ++i) {
    if (kPriority[i] == category) return static_cast<int>(i);
  }
  return 0;
}

std::map<std::string, double> breakdown_of(const workload::Trace& trace, const StepResult& r, int rank, double end_s) {
  struct Event {
    double time;
    int cls;
    int delta;
  };
  std::vector<Event> events;
  for (const auto& node : trace.nodes) {
    if (node.rank != rank) continue;
    const double start = r.node_start_s[node.id], end = r.node_end_s[node.id];
    if (!(end > start)) continue;
    const int cls = class_index(node.category);
    events.push_back({start, cls, +1});
    events.push_back({end, cls, -1});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
  std::array<int, kPriority.size()> active{};
  std::array<double, kPriority.size()> owned{};
  double bubble = 0, now = 0;
  auto credit = [&](double until) {
    if (until <= now) return;
    int owner = -1;
    for (std::size_t i = 0; i < kPriority.size() && owner < 0; ++i) {
      if (active[i] > 0) owner = static_cast<int>(i);
    }
    if (owner < 0) bubble += until - now;
    else owned[owner] += until - now;
    now = until;
  };
  for (const auto& e : events) {
    credit(e.time);
    active[e.cls] += e.delta;
  }
  credit(end_s);
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < kPriority.size(); ++i) out[workload::to_string(kPriority[i])] = owned[i];
  out["bubble"] = bubble;
  return out;
}

}  // namespace

void attribute_time(const workload::Trace& trace, StepResult& result) {
  // The rank that finishes last carries the critical path's end; among ties the one computing most.
  std::map<int, double> rank_end, rank_compute;
  for (const auto& node : trace.nodes) {
    rank_end[node.rank] = std::max(rank_end[node.rank], result.node_end_s[node.id]);
    if (node.type == workload::NodeType::comp) {
      rank_compute[node.rank] += result.node_end_s[node.id] - result.node_start_s[node.id];
    }
  }
  int best = trace.ranks.empty() ? 0 : trace.ranks.front();
  for (int rank : trace.ranks) {
    const double end = rank_end[rank], best_end = rank_end[best];
    if (end > best_end * (1 + 1e-9) || (end >= best_end * (1 - 1e-9) && rank_compute[rank] > rank_compute[best])) best = rank;
  }
  result.critical_rank = best;
  result.breakdown_s = breakdown_of(trace, result, best, result.step_time_s);
}

}  // namespace fmsim::training
