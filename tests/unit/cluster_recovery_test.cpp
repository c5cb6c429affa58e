// The shared-cluster simulation's correlated failures (a whole leaf switch group or NVLink domain out at
// once) and checkpointless recovery (in process on a replacement node), on hand-worked traces, and
// conservation of time and node-seconds under random group failures with either recovery.
#include <catch2/catch.hpp>

#include <algorithm>

#include "cluster_test_support.hpp"

using namespace fmsim::cluster;
using fmsim::test::injected;
using fmsim::test::job;
using fmsim::test::shape;

namespace {

SimOptions hand_options() {
  SimOptions o;
  o.failures.restart_s = 600;
  o.failures.repair_s = 14400;
  o.failures.group_repair_s = 10800;
  o.failures.checkpointless_recovery_s = 105;
  return o;
}

}  // namespace

TEST_CASE("a group failure takes all its nodes out; its job restarts elsewhere from its checkpoint or goes on in process") {
  // 8 nodes in two groups of 4. Job a (4 nodes, 1 h, checkpoints every 30 min) is placed on group 0
  // (nodes 0-3); group 0 fails at 2,000 s for 3 h.
  std::vector<JobSpec> jobs = {job("a", 0, 4, 3600, 1800)};
  SimOptions o = hand_options();
  o.failures.injected_groups = {{2000, 0}};
  // Restart: the work since the 1,800 s checkpoint is lost; group 1 is free, so it runs again at once
  // there: 2000 + 600 + (3600 - 1800) = 4400 s; lost 200 + 600 s.
  auto r = simulate_cluster(shape(8, 4), jobs, o);
  REQUIRE(r.group_failures.size() == 1);
  CHECK(r.group_failures[0].jobs == std::vector<int>{0});
  CHECK(r.group_failures[0].nodes == 4);
  CHECK(r.jobs[0].group_failures == 1);
  CHECK(r.jobs[0].restarts == 1);
  CHECK(r.jobs[0].end_s == Approx(4400));
  CHECK(r.jobs[0].lost_s == Approx(800));
  CHECK(r.jobs[0].runs.back().nodes == std::vector<int>{4, 5, 6, 7});
  CHECK(r.down_node_s == Approx(4 * (4400 - 2000)));  // the group is still out when the trace ends

  // Checkpointless: four free nodes outside the group replace it; nothing of its work is lost (a job
  // given by its duration has no step in flight), only the 105 s pause: 2000 + 105 + 1600 = 3705 s.
  o.failures.recovery = JobRecovery::checkpointless;
  r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[0].restarts == 0);
  CHECK(r.jobs[0].checkpointless_recoveries == 1);
  CHECK(r.checkpointless_recoveries == 1);
  CHECK(r.jobs[0].end_s == Approx(3705));
  CHECK(r.jobs[0].lost_s == Approx(105));
  CHECK(r.jobs[0].runs.back().nodes == std::vector<int>{4, 5, 6, 7});

  // A job of 36 steps (100 s each) loses the step in flight: failing at 2,050 s it keeps 2,000 s.
  jobs[0].steps = 36;
  o.failures.injected_groups = {{2050, 0}};
  r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(2050 + 105 + 1600));
  CHECK(r.jobs[0].lost_s == Approx(50 + 105));

  // With no room outside the group it restarts through the queue when the group is back:
  // 2050 + 10800 + 600 + (3600 - 1800).
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].checkpointless_recoveries == 0);
  CHECK(r.jobs[0].restarts == 1);
  CHECK(r.jobs[0].end_s == Approx(2050 + 10800 + 600 + 1800));
}

TEST_CASE("an elastic job goes on without a failed group; hot spares outside it replace its nodes") {
  // Job a on 8 nodes over groups 0 and 1 (4 each), elastic down to 4: group 0 fails at 1,000 s; it goes on
  // at half speed on group 1 after the 60 s rescale, and grows back when the group returns at 11,800 s.
  std::vector<JobSpec> jobs = {job("a", 0, 8, 36000, 1800)};
  jobs[0].min_nodes = 4;
  SimOptions o = hand_options();
  o.failures.injected_groups = {{1000, 0}};
  auto r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[0].restarts == 0);
  CHECK(r.jobs[0].rescales == 2);
  // Work: 1000 s whole, then (11800 - 1060) / 2 at half size, then the rest whole after another 60 s.
  const double half = (11800.0 - 1060.0) / 2;
  CHECK(r.jobs[0].end_s == Approx(11800 + 60 + (36000 - 1000 - half)));

  // Not elastic, with 4 hot spares (nodes 8-11, group 2): they replace group 0's nodes at once and the
  // job restarts from its checkpoint: 1000 + 600 + 36000 (nothing kept before 1,800 s).
  jobs[0].min_nodes = 0;
  o.failures.spare_nodes = 4;
  r = simulate_cluster(shape(12, 4), jobs, o);
  CHECK(r.spare_swaps == 4);
  CHECK(r.jobs[0].spare_swaps == 4);
  CHECK(r.jobs[0].end_s == Approx(1000 + 600 + 36000));
  // Spares inside the failed group are no use. 8 nodes, the 2 highest (6, 7 in group 1) held as spares: a
  // 2-node job fits group 1 best (nodes 4, 5); group 1 fails and takes the spares with it, so none is
  // found and the job restarts through the queue on group 0 at once.
  jobs = {job("b", 0, 2, 3600, 1800)};
  o.failures.spare_nodes = 2;
  o.failures.injected_groups = {{1000, 1}};
  r = simulate_cluster(shape(8, 4), jobs, o);
  REQUIRE(r.jobs[0].runs.size() == 2);
  CHECK(r.jobs[0].runs[0].nodes == std::vector<int>{4, 5});
  CHECK(r.spare_swaps == 0);
  CHECK(r.spares_exhausted == 1);
  CHECK(r.jobs[0].runs[1].start_s == Approx(1000));
  CHECK(r.jobs[0].runs[1].nodes[0] < 4);
  CHECK(r.jobs[0].end_s == Approx(1000 + 600 + 3600));
}

TEST_CASE("checkpointless recovery of a group takes the spares, then free nodes besides them, each once") {
  // 24 nodes in groups of 8, node 23 held as a spare. x (7 nodes), w (6, short), y (2) and v (6) start at
  // once; w ends; group 0 fails at 1 h and the jobs on it go on elsewhere: the spare replaces one node,
  // free nodes the rest, and no job gets the spare twice (the free nodes are looked for without it).
  std::vector<JobSpec> jobs = {job("x", 0, 7, 36000, 1800), job("w", 0, 6, 600, 1800), job("y", 0, 2, 36000, 1800),
                               job("v", 0, 6, 36000, 1800)};
  SimOptions o = hand_options();
  o.failures.recovery = JobRecovery::checkpointless;
  o.failures.spare_nodes = 1;
  o.failures.injected_groups = {{3600, 0}};
  const auto r = simulate_cluster(shape(24, 8), jobs, o);
  fmsim::test::check_time_conserved(jobs, r);
  int recovered = 0, replaced = 0;
  for (const auto& out : r.jobs) {
    recovered += out.checkpointless_recoveries;
    if (out.runs.size() == 2) {
      const auto& [before, after] = std::pair{out.runs[0].nodes, out.runs[1].nodes};
      for (int n : after) replaced += std::find(before.begin(), before.end(), n) == before.end() ? 1 : 0;
    }
  }
  CHECK(recovered == static_cast<int>(r.group_failures.at(0).jobs.size()));
  CHECK(r.spare_swaps == 1);
  CHECK(replaced > r.spare_swaps);  // free nodes beside the spare
  // While they run, the group is out and every other node is held once: busy + down + free = 24 nodes.
  CHECK(r.busy_node_s + r.down_node_s <= 24 * r.makespan_s + 1e-6);
}

TEST_CASE("checkpointless recovery: a replacement node for hardware, in place for software and after a hang's watchdog") {
  // 3 nodes in one group; job a on 2 of them for 1 h, checkpoints every 30 min; node 0 fails at 1,000 s.
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600, 1800)};
  SimOptions o = hand_options();
  o.failures.watchdog_s = 600;
  o.failures.injected = {injected(1000, 0, Recovery::repair)};
  // Restart: nothing kept before the first checkpoint; the free node 2 takes the place: 1000 + 600 + 3600.
  auto r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(5200));
  o.failures.recovery = JobRecovery::checkpointless;
  r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(1000 + 105 + 2600));
  CHECK(r.jobs[0].runs.back().nodes == std::vector<int>{2, 1});
  CHECK(r.jobs[0].restarts == 0);
  // Software: the crashed process restarts in place on the same nodes.
  o.failures.injected = {injected(1000, 0, Recovery::restart)};
  r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(1000 + 105 + 2600));
  CHECK(r.jobs[0].runs.back().nodes == std::vector<int>{0, 1});
  // A hang stops progress at 1,000 s; the watchdog finds it at 1,600 s; then in process.
  o.failures.injected = {injected(1000, 0, Recovery::hang)};
  r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(1600 + 105 + 2600));
  CHECK(r.jobs[0].lost_s == Approx(600 + 105));
  // No node to replace the failed one: it waits for the repair and restarts from its checkpoint.
  o.failures.injected = {injected(1000, 0, Recovery::repair)};
  r = simulate_cluster(shape(2, 2), jobs, o);
  CHECK(r.jobs[0].checkpointless_recoveries == 0);
  CHECK(r.jobs[0].end_s == Approx(1000 + 14400 + 600 + 3600));
}

TEST_CASE("a node out for its own repair and its group's comes back when both are done") {
  // Node 5 (group 1) fails at 100 s; group 1 fails at 500 s for 2,000 s (back at 2,500 s). Job big wants
  // all 8 nodes from 600 s on, so it starts when the last one returns.
  std::vector<JobSpec> jobs = {job("big", 600, 8, 1000)};
  SimOptions o = hand_options();
  o.failures.group_repair_s = 2000;
  o.failures.injected = {injected(100, 5, Recovery::repair)};
  o.failures.injected_groups = {{500, 1}};
  // Its own repair ends first (1,100 s): it stays out with its group until 2,500 s.
  o.failures.repair_s = 1000;
  auto r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[0].first_start_s == Approx(2500));
  CHECK(r.down_node_s == Approx((2500 - 100) + 3 * (2500 - 500)));
  // Its own repair ends last (5,100 s): the group's return does not bring it back early.
  o.failures.repair_s = 5000;
  r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[0].first_start_s == Approx(5100));
  CHECK(r.down_node_s == Approx((5100 - 100) + 3 * (2500 - 500)));
}

TEST_CASE("under random group and node failures every job completes and time is conserved, with either recovery") {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 40; ++i) {
    JobSpec j = job("j" + std::to_string(i), i * 900.0, 1 + (i % 4) * 2, 4 * 3600.0, 1800);
    j.steps = i % 2 == 0 ? 0 : 144;  // half of them with 100 s steps
    jobs.push_back(j);
  }
  for (auto [recovery, spares] : {std::pair{JobRecovery::restart, 0}, std::pair{JobRecovery::checkpointless, 0},
                                  std::pair{JobRecovery::restart, 2}, std::pair{JobRecovery::checkpointless, 2}}) {
    INFO("recovery " << to_string(recovery) << ", spares " << spares);
    SimOptions o;
    o.failures.spare_nodes = spares;
    o.failures.node_failures_per_node_hour = 0.005;
    o.failures.group_failures_per_group_hour = 0.01;
    o.failures.group_repair_s = 7200;
    o.failures.recovery = recovery;
    o.failures.seed = 5;
    const auto r = simulate_cluster(shape(24, 8), jobs, o);
    CHECK(r.group_failures.size() > 0);
    fmsim::test::check_time_conserved(jobs, r);
    if (recovery == JobRecovery::checkpointless) CHECK(r.checkpointless_recoveries > 0);
    const auto again = simulate_cluster(shape(24, 8), jobs, o);
    CHECK(again.group_failures.size() == r.group_failures.size());
    CHECK(again.makespan_s == r.makespan_s);
  }
}
