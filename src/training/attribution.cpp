// Where the step time goes, on one rank's time line: at each instant the rank is computing, running the
// optimizer, waiting on exposed communication (by kind), waiting on its host thread (the GPU idle while
// the host is still issuing kernels: a launch-bound step), or idle (pipeline bubble). Overlapped
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

std::map<std::string, double> breakdown_of(const workload::Trace& trace, const StepResult& r, const std::vector<int>& node_ids,
                                           double end_s) {
  struct Event {
    double time;
    int cls;
    int delta;
  };
  std::vector<Event> events;
  constexpr int kHost = static_cast<int>(kPriority.size());  // the host thread: not GPU time
  for (int id : node_ids) {
    const auto& node = trace.nodes[id];
    const double start = r.node_start_s[node.id], end = r.node_end_s[node.id];
    if (!(end > start)) continue;
    // The host thread's issue work (host_launch.cpp, moe_host.hpp) is not GPU time: a GPU with nothing
    // to run while it is busy waits on the host.
    const int cls = node.stream == "host" ? kHost : class_index(node.category);
    events.push_back({start, cls, +1});
    events.push_back({end, cls, -1});
  }
  std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) { return a.time < b.time; });
  std::array<int, kPriority.size() + 1> active{};
  std::array<double, kPriority.size()> owned{};
  double bubble = 0, host = 0, now = 0;
  auto credit = [&](double until) {
    if (until <= now) return;
    int owner = -1;
    for (std::size_t i = 0; i < kPriority.size() && owner < 0; ++i) {
      if (active[i] > 0) owner = static_cast<int>(i);
    }
    if (owner >= 0) owned[owner] += until - now;
    else if (active[kHost] > 0) host += until - now;
    else bubble += until - now;
    now = until;
  };
  for (const auto& e : events) {
    credit(e.time);
    active[e.cls] += e.delta;
  }
  credit(end_s);
  std::map<std::string, double> out;
  for (std::size_t i = 0; i < kPriority.size(); ++i) out[workload::to_string(kPriority[i])] = owned[i];
  out["host"] = host;
  out["bubble"] = bubble;
  return out;
}

}  // namespace

void attribute_time(const workload::Trace& trace, StepResult& result) {
  std::map<int, std::vector<int>> nodes_of_rank;
  std::map<int, double> rank_end;
  for (const auto& node : trace.nodes) {
    nodes_of_rank[node.rank].push_back(node.id);
    rank_end[node.rank] = std::max(rank_end[node.rank], result.node_end_s[node.id]);
  }
  result.rank_breakdown_s.clear();
  for (int rank : trace.ranks) result.rank_breakdown_s[rank] = breakdown_of(trace, result, nodes_of_rank[rank], result.step_time_s);
  // The critical rank is the busiest one (least idle): every rank's time line spans the step, and in a
  // pipeline the stage with the least bubble is the one the others wait for, so its compute and exposed
  // communication bound the step. The rank that finishes last is usually the first stage, which in an
  // uneven split (embedding, dense layers) can be the least busy. Ties: the one finishing last, then the
  // lowest rank.
  auto busy = [&](int rank) { return result.step_time_s - result.rank_breakdown_s[rank]["bubble"]; };
  int best = trace.ranks.empty() ? 0 : trace.ranks.front();
  for (int rank : trace.ranks) {
    const double b = busy(rank), best_b = busy(best);
    const double tolerance = 1e-9 * result.step_time_s;
    if (b > best_b + tolerance || (b >= best_b - tolerance && rank_end[rank] > rank_end[best] + tolerance)) best = rank;
  }
  result.critical_rank = best;
  result.breakdown_s = trace.ranks.empty() ? breakdown_of(trace, result, {}, result.step_time_s) : result.rank_breakdown_s[best];
}

}  // namespace fmsim::training
