// Engine tests. SimGrid runs once per process, so every simulation here goes through
// simulate_in_child (a forked child per call).
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include <algorithm>

#include "fmsim/engine/network_sim.hpp"
#include "fmsim/engine/task_graph.hpp"

using namespace fmsim::engine;

namespace {

/// p hosts in a ring: host i reaches host i+1 over its own link of `bandwidth` and `latency`.
SimPlatform ring_platform(int p, double bandwidth, double latency) {
  SimPlatform platform;
  for (int i = 0; i < p; ++i) {
    platform.hosts.push_back("h" + std::to_string(i));
    platform.links.push_back({"l" + std::to_string(i), bandwidth, latency});
    platform.routes.push_back({i, (i + 1) % p, {i}});
  }
  return platform;
}

/// Ring all-reduce: 2(p-1) steps, each rank sends S/p to its successor and receives from its predecessor.
SimJob ring_all_reduce(int p, double bytes) {
  SimJob job;
  job.is_program = true;
  job.program.rank_host.resize(p);
  job.program.steps.assign(p, std::vector<SimStep>(2 * (p - 1)));
  for (int rank = 0; rank < p; ++rank) {
    job.program.rank_host[rank] = rank;
    for (auto& step : job.program.steps[rank]) {
      step.ops.push_back({true, (rank + 1) % p, bytes / p});
      step.ops.push_back({false, (rank + p - 1) % p, bytes / p});
    }
  }
  return job;
}

}  // namespace

TEST_CASE("a ring all-reduce matches 2(p-1)/p S/B + 2(p-1) alpha", "[engine]") {
  const double bandwidth = 50e9, latency = 5e-6;
  for (int p : {2, 4, 8, 16}) {
    for (double bytes : {1048576.0, 268435456.0}) {
      INFO("p=" << p << " bytes=" << bytes);
      SimStats stats = simulate_in_child(ring_platform(p, bandwidth, latency), {ring_all_reduce(p, bytes)});
      double expected = 2.0 * (p - 1) / p * bytes / bandwidth + 2.0 * (p - 1) * latency;
      CHECK(stats.durations_s.at(0) == Approx(expected).epsilon(1e-6));
    }
  }
}

TEST_CASE("bytes sent equal bytes received, and equal the algorithm's volume", "[engine]") {
  const int p = 8;
  const double bytes = 8 * 1048576.0;
  SimStats stats = simulate_in_child(ring_platform(p, 10e9, 1e-6), {ring_all_reduce(p, bytes)});
  CHECK(stats.bytes_sent == stats.bytes_received);
  CHECK(stats.bytes_sent == Approx(2.0 * (p - 1) * bytes));
  CHECK(stats.messages == 2LL * (p - 1) * p);
}

TEST_CASE("flows sharing a link split its bandwidth, and jobs run on an idle network", "[engine]") {
  SimPlatform platform;
  platform.hosts = {"a", "b", "c"};
  platform.links = {{"shared", 10e9, 0.0}, {"private", 10e9, 0.0}};
  platform.routes = {{0, 2, {0}}, {1, 2, {0}}, {1, 0, {1}}};
  SimJob alone, together;
  alone.flows = {{0, 2, 1e9}};
  together.flows = {{0, 2, 1e9}, {1, 2, 1e9}, {1, 0, 1e9}};
  SimStats stats = simulate_in_child(platform, {alone, together, alone});
  CHECK(stats.durations_s[0] == Approx(0.1));
  CHECK(stats.durations_s[1] == Approx(0.2));  // two flows on "shared"; the private one ends at 0.1
  CHECK(stats.durations_s[2] == Approx(0.1));
}

TEST_CASE("more bandwidth never makes a job slower", "[engine]") {
  double previous = 1e300;
  for (double bandwidth : {1e9, 2e9, 5e9, 25e9}) {
    SimStats stats = simulate_in_child(ring_platform(6, bandwidth, 2e-6), {ring_all_reduce(6, 64e6)});
    CHECK(stats.durations_s[0] <= previous);
    previous = stats.durations_s[0];
  }
}

TEST_CASE("an invalid platform or program is rejected before simulating", "[engine]") {
  SimPlatform platform = ring_platform(3, 1e9, 0.0);
  SimJob backwards;
  backwards.flows = {{1, 0, 1e6}};  // no route 1 -> 0
  CHECK_THROWS_AS(simulate_in_child(platform, {backwards}), fmsim::InternalError);
  SimJob unmatched = ring_all_reduce(3, 3e6);
  unmatched.program.steps[0].pop_back();  // rank 0 skips its last send and receive
  CHECK_THROWS_WITH(simulate_in_child(platform, {unmatched}), Catch::Matchers::Contains("do not match"));
}

namespace {

/// A random task graph over a 4-host ring: delays, overlapped delays, and flows that share links.
SimTaskGraph random_task_graph(unsigned seed, int tasks) {
  SimTaskGraph graph;
  unsigned state = seed;
  auto next = [&state](int modulo) {
    state = state * 1103515245u + 12345u;
    return static_cast<int>((state >> 8) % static_cast<unsigned>(modulo));
  };
  for (int i = 0; i < tasks; ++i) {
    SimTask task;
    task.delay_s = next(4) * 0.25;
    task.overlap_delay_s = next(3) == 0 ? 0.5 : 0.0;
    const int flows = next(4);
    for (int f = 0; f < flows; ++f) {
      const int src = next(4);
      task.flows.push_back({src, (src + 1) % 4, 1e8 * (1 + next(10))});
    }
    for (int d = 0; d < 2 && i > 0; ++d) {
      const int dep = next(i);
      if (std::find(task.deps.begin(), task.deps.end(), dep) == task.deps.end()) task.deps.push_back(dep);
    }
    graph.tasks.push_back(task);
  }
  return graph;
}

}  // namespace

TEST_CASE("flows starting together on one link end together at N S / B", "[engine]") {
  const SimPlatform platform = ring_platform(2, 1e9, 0.0);
  SimTaskGraph graph;
  SimTask task;
  for (int i = 0; i < 5; ++i) task.flows.push_back({0, 1, 2e8});
  task.delay_s = 0.5;
  graph.tasks.push_back(task);
  for (bool actors : {false, true}) {
    graph.actor_per_task = actors;
    const TaskTimes times = simulate_tasks_in_child(platform, graph);
    CHECK(times.makespan_s == Approx(0.5 + 5 * 2e8 / 1e9));
    CHECK(times.link_bytes[0] == Approx(1e9));
  }
}

TEST_CASE("both task executors give the same times", "[engine]") {
  const SimPlatform platform = ring_platform(4, 1e9, 0.0);
  for (unsigned seed : {1u, 2u, 3u}) {
    SimTaskGraph graph = random_task_graph(seed, 150);
    const TaskTimes controller = simulate_tasks_in_child(platform, graph);
    graph.actor_per_task = true;
    const TaskTimes actors = simulate_tasks_in_child(platform, graph);
    REQUIRE(controller.end_s.size() == actors.end_s.size());
    for (size_t i = 0; i < actors.end_s.size(); ++i) {
      CHECK(actors.start_s[i] == Approx(controller.start_s[i]).margin(1e-9));
      CHECK(actors.end_s[i] == Approx(controller.end_s[i]).margin(1e-9));
    }
    CHECK(actors.flows == controller.flows);
  }
}
