// The series-parallel reduction of pure delays keeps every task's start and end (checked against a
// longest-path schedule of the unreduced graph) and leaves tasks with flows alone.
#include <catch2/catch.hpp>

#include <random>

#include "training/replay_internal.hpp"

using namespace fmsim;

namespace {

/// Earliest start/end of every task of a graph of pure delays (no contention): longest paths.
std::pair<std::vector<double>, std::vector<double>> schedule(const engine::SimTaskGraph& g) {
  const std::size_t n = g.tasks.size();
  std::vector<double> start(n, 0), end(n, 0);
  for (std::size_t i = 0; i < n; ++i) {  // deps point to lower indices in these graphs
    for (int d : g.tasks[i].deps) start[i] = std::max(start[i], end[d]);
    end[i] = start[i] + g.tasks[i].delay_s + g.tasks[i].overlap_delay_s;
  }
  return {start, end};
}

}  // namespace

TEST_CASE("merging pure delays preserves every task's times", "[replay]") {
  std::mt19937 random(7);
  std::uniform_real_distribution<double> duration(0.1, 2.0);
  for (int trial = 0; trial < 20; ++trial) {
    engine::SimTaskGraph g;
    const int n = 200;
    for (int i = 0; i < n; ++i) {
      engine::SimTask t;
      t.delay_s = duration(random);
      // Mostly chains and small fork-joins, with some longer edges (like stream order).
      if (i > 0) t.deps.push_back(i - 1);
      if (i > 4 && random() % 4 == 0) t.deps.push_back(i - 2 - static_cast<int>(random() % 3));
      if (i > 1 && random() % 5 == 0) t.deps = {i - 2};  // a fork: i-1 and i both after i-2
      g.tasks.push_back(t);
    }
    const auto [start, end] = schedule(g);
    const training::ReducedGraph r = training::reduce_pure_delays(g);
    CHECK(r.graph.tasks.size() < g.tasks.size());
    const auto [rstart, rend] = [&] {
      // Merged graphs keep deps pointing backwards only if renumbering is monotone; schedule them generally.
      std::vector<double> s(r.graph.tasks.size(), 0), e(r.graph.tasks.size(), 0);
      for (std::size_t i = 0; i < r.graph.tasks.size(); ++i) {
        for (int d : r.graph.tasks[i].deps) s[i] = std::max(s[i], e[d]);
        e[i] = s[i] + r.graph.tasks[i].delay_s;
      }
      return std::make_pair(s, e);
    }();
    for (int i = 0; i < n; ++i) {
      const int m = r.task_of[i];
      CHECK(rstart[m] + r.member_start_s[i] == Approx(start[i]));
      CHECK(rstart[m] + r.member_end_s[i] == Approx(end[i]));
    }
  }
}

TEST_CASE("tasks with flows are kept, with pure predecessors folded into their first phase", "[replay]") {
  engine::SimTaskGraph g;
  g.tasks.resize(3);
  g.tasks[0].delay_s = 1.0;
  g.tasks[1].delay_s = 0.5;
  g.tasks[1].flows.push_back({0, 1, 1e6});
  g.tasks[1].deps = {0};
  g.tasks[2].delay_s = 2.0;
  g.tasks[2].deps = {1};
  const training::ReducedGraph r = training::reduce_pure_delays(g);
  REQUIRE(r.graph.tasks.size() == 2u);
  const auto& carrier = r.graph.tasks[r.task_of[1]];
  CHECK(carrier.flows.size() == 1u);
  CHECK(carrier.delay_s == Approx(1.5));
  CHECK(r.task_of[0] == r.task_of[1]);
  CHECK(r.member_end_s[1] < 0);  // ends when its flows end
  CHECK(r.task_of[2] != r.task_of[1]);
}
