// The shared-cluster simulation: backfill and FIFO on a hand-worked trace, an M/M/c queue against Erlang C,
// conservation of node-seconds under failures, determinism, placement and priority.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "cluster_test_support.hpp"

using namespace fmsim::cluster;
using fmsim::test::injected;
using fmsim::test::job;
using fmsim::test::shape;

namespace {

// 16 nodes: a (4 nodes, 2 h) runs; b (all 16) must wait for it; c (2 nodes, 30 min) fits before b's
// reservation; d (8 nodes, 3 h) would delay b, so it waits for b.
std::vector<JobSpec> hand_trace() {
  return {job("a", 0, 4, 7200), job("b", 600, 16, 3600), job("c", 1200, 2, 1800), job("d", 1800, 8, 10800)};
}

}  // namespace

TEST_CASE("EASY backfill on a hand-worked trace: a short job fills the hole, a long one does not") {
  SimOptions o;
  o.policy = Policy::backfill;
  const auto r = simulate_cluster(shape(16, 8), hand_trace(), o);
  CHECK(r.jobs[0].first_start_s == 0);
  CHECK(r.jobs[1].first_start_s == 7200);   // when a ends
  CHECK(r.jobs[2].first_start_s == 1200);   // backfilled: ends at 3000, before b's reservation
  CHECK(r.jobs[3].first_start_s == 10800);  // would have pushed b back: waits for b
  CHECK(r.makespan_s == 21600);
}

TEST_CASE("strict FIFO: the blocked head holds every later job") {
  SimOptions o;
  o.policy = Policy::fifo;
  const auto r = simulate_cluster(shape(16, 8), hand_trace(), o);
  CHECK(r.jobs[1].first_start_s == 7200);
  CHECK(r.jobs[2].first_start_s == 10800);  // behind b
  CHECK(r.jobs[3].first_start_s == 10800);
  // Backfill never makes the mean wait longer here.
  double fifo = 0, easy = 0;
  SimOptions b;
  const auto rb = simulate_cluster(shape(16, 8), hand_trace(), b);
  for (std::size_t i = 0; i < 4; ++i) {
    fifo += r.jobs[i].first_start_s - hand_trace()[i].submit_s;
    easy += rb.jobs[i].first_start_s - hand_trace()[i].submit_s;
  }
  CHECK(easy < fifo);
}

TEST_CASE("an M/M/c pool under FIFO waits as Erlang C says") {
  const int c = 8;
  const double mu = 1.0 / 3600, rho = 0.8, lambda = rho * c * mu;
  std::mt19937_64 rng(7);
  std::exponential_distribution<double> gap(lambda), service(mu);
  std::vector<JobSpec> jobs;
  double t = 0;
  for (int i = 0; i < 60000; ++i) {
    t += gap(rng);
    jobs.push_back(job("j" + std::to_string(i), t, 1, service(rng)));
  }
  SimOptions o;
  o.policy = Policy::fifo;
  const auto r = simulate_cluster(shape(c, c), jobs, o);
  // Erlang C: P(wait) = (a^c / c!) / (1 - rho) / (sum_{k<c} a^k / k! + (a^c / c!) / (1 - rho)), a = lambda / mu.
  const double a = lambda / mu;
  double sum = 0, term = 1;
  for (int k = 0; k < c; ++k) {
    sum += term;
    term *= a / (k + 1);
  }
  const double top = term / (1 - rho);
  const double p_wait = top / (sum + top);
  const double expected_wait = p_wait / (c * mu - lambda);
  double wait = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) wait += r.jobs[i].first_start_s - jobs[i].submit_s;
  wait /= jobs.size();
  CHECK(wait == Approx(expected_wait).epsilon(0.08));
  // Utilization is the offered load.
  CHECK(r.busy_node_s / (c * r.makespan_s) == Approx(rho).epsilon(0.03));
}

TEST_CASE("under failures every job completes and node-seconds are conserved") {
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 40; ++i) {
    JobSpec j = job("j" + std::to_string(i), i * 900.0, 1 + (i % 4) * 2, 4 * 3600.0);
    j.checkpoint_interval_s = 1800;
    jobs.push_back(j);
  }
  SimOptions o;
  o.failures.node_failures_per_node_hour = 0.01;
  o.failures.seed = 3;
  const auto r = simulate_cluster(shape(16, 8), jobs, o);
  CHECK(r.node_failures > 0);
  fmsim::test::check_time_conserved(jobs, r);
  int restarts = 0;
  for (const auto& out : r.jobs) restarts += out.restarts;
  CHECK(restarts > 0);
  // The same seed replays the same failures; another seed draws others.
  const auto again = simulate_cluster(shape(16, 8), jobs, o);
  CHECK(again.node_failures == r.node_failures);
  CHECK(again.makespan_s == r.makespan_s);
  o.failures.seed = 4;
  const auto other = simulate_cluster(shape(16, 8), jobs, o);
  CHECK(other.makespan_s != r.makespan_s);
}

TEST_CASE("topology placement keeps a job under one switch where spread placement splits it") {
  const std::vector<JobSpec> jobs = {job("small", 0, 4, 3600)};
  SimOptions topo, spread;
  spread.placement = Placement::spread;
  CHECK(simulate_cluster(shape(16, 8), jobs, topo).jobs[0].groups_spanned == 1);
  CHECK(simulate_cluster(shape(16, 8), jobs, spread).jobs[0].groups_spanned == 2);
  CHECK(simulate_cluster(shape(16, 8), jobs, spread).jobs[0].min_groups == 1);
}

TEST_CASE("the priority policy starts a later high-priority job first") {
  std::vector<JobSpec> jobs = {job("running", 0, 16, 3600), job("low", 10, 16, 3600), job("high", 20, 16, 3600)};
  jobs[2].priority = 10;
  SimOptions o;
  o.policy = Policy::priority;
  const auto r = simulate_cluster(shape(16, 8), jobs, o);
  CHECK(r.jobs[2].first_start_s == 3600);
  CHECK(r.jobs[1].first_start_s == 7200);
}

TEST_CASE("a hang holds the job's nodes until the watchdog, then it restarts on them; software restarts at once") {
  // One 2-node job of 1 h, no checkpoint, on 4 nodes; its node 0 fails at 1,000 s. Watchdog 600 s, restart
  // 600 s. Hang: 1000 + 600 (undetected) + 600 (restart) + 3600 (all work again) = 5800 s. Software: no
  // watchdog wait: 5200 s. Neither sends the node to repair.
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600)};
  SimOptions o;
  o.failures.watchdog_s = 600;
  o.failures.restart_s = 600;
  o.failures.injected = {injected(1000, 0, Recovery::hang)};
  auto r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(5800));
  CHECK(r.hangs == 1);
  CHECK(r.jobs[0].hangs == 1);
  CHECK(r.jobs[0].restarts == 1);
  CHECK(r.jobs[0].lost_s == Approx(2200));
  CHECK(r.down_node_s == 0);
  REQUIRE(r.jobs[0].runs.size() == 2);
  CHECK(r.jobs[0].runs[1].nodes == r.jobs[0].runs[0].nodes);
  CHECK(llama3_failure_causes()[r.failures[0].cause].name == "NCCL Watchdog Timeouts");
  CHECK(r.failures[0].job == 0);

  o.failures.injected = {injected(1000, 0, Recovery::restart)};
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(5200));
  CHECK(r.software_restarts == 1);
  CHECK(r.hangs == 0);
  CHECK(r.down_node_s == 0);
  CHECK(llama3_failure_causes()[r.failures[0].cause].category == "Dependency");

  // A hang on a node with no job stops nothing.
  o.failures.injected = {injected(1000, 3, Recovery::hang)};
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(3600));
  CHECK(r.hangs == 0);
}

TEST_CASE("a hot spare replaces a failed node at once; without one the job waits for the repair") {
  // 2 schedulable nodes, both taken by a 2-node 1 h job; node 0 fails (hardware) at 1,000 s, repair 4 h,
  // restart 600 s. With a third node held as a spare the job restarts at once: 1000 + 600 + 3600 = 5200 s.
  // Without it the job waits for node 0: 1000 + 14400 + 600 + 3600 = 19600 s.
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600)};
  SimOptions o;
  o.failures.restart_s = 600;
  o.failures.repair_s = 14400;
  o.failures.injected = {injected(1000, 0, Recovery::repair)};
  o.failures.spare_nodes = 1;
  auto r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(5200));
  CHECK(r.spare_swaps == 1);
  CHECK(r.jobs[0].spare_swaps == 1);
  REQUIRE(r.jobs[0].runs.size() == 2);
  CHECK(r.jobs[0].runs[1].nodes == std::vector<int>{2, 1});
  CHECK(r.spare_node_s == Approx(1000));  // the spare sat idle until the failure; node 0 is still in repair at the end
  CHECK(r.down_node_s == Approx(4200));

  o.failures.spare_nodes = 0;
  r = simulate_cluster(shape(2, 2), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(19600));
  CHECK(r.spare_swaps == 0);

  // A second failure with the one spare in use finds none.
  o.failures.spare_nodes = 1;
  o.failures.injected = {injected(1000, 0, Recovery::repair), injected(2000, 1, Recovery::repair)};
  r = simulate_cluster(shape(3, 3), jobs, o);
  CHECK(r.spare_swaps == 1);
  CHECK(r.spares_exhausted == 1);
  // Node 0's repair (15,400 s) refills the pool first, so the job waits for node 1's (16,400 s) and runs on
  // nodes 1 and 2: 16400 + 600 + 3600.
  CHECK(r.jobs[0].end_s == Approx(20600));
  CHECK(r.jobs[0].runs.back().nodes == std::vector<int>{1, 2});
}

TEST_CASE("a straggler slows its job by its slowdown; time is conserved with stragglers, spares and failures") {
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600)};
  SimOptions o;
  o.failures.straggler_fraction = 1.0;  // every node: MegaScale's 10 % slower
  o.failures.straggler_slowdown = 0.10;
  auto r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(3960));
  CHECK(r.jobs[0].straggler_s == Approx(360));
  CHECK(r.stragglers.size() == 4);
  o.failures.straggler_fraction = 0;
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(3600));
  CHECK(r.stragglers.empty());

  // Random failures of every kind, 2 spares, 20 % stragglers: every job completes, and each second a job
  // ran was its work, lost to failures, or added by a straggler.
  jobs.clear();
  for (int i = 0; i < 40; ++i) {
    JobSpec j = job("j" + std::to_string(i), i * 900.0, 1 + (i % 4) * 2, 4 * 3600.0);
    j.checkpoint_interval_s = 1800;
    jobs.push_back(j);
  }
  o.failures.node_failures_per_node_hour = 0.02;
  o.failures.seed = 5;
  o.failures.spare_nodes = 2;
  o.failures.straggler_fraction = 0.2;
  r = simulate_cluster(shape(18, 9), jobs, o);
  CHECK(r.node_failures > 0);
  CHECK(!r.stragglers.empty());
  fmsim::test::check_time_conserved(jobs, r);
  double added = 0;
  for (const auto& out : r.jobs) added += out.straggler_s;
  CHECK(added > 0);
  // The straggler draw has its own stream: the failures are the same with or without stragglers.
  auto without = o;
  without.failures.straggler_fraction = 0;
  const auto r2 = simulate_cluster(shape(18, 9), jobs, without);
  REQUIRE(r2.failures.size() >= 1);
  CHECK(r2.failures.front().time_s == r.failures.front().time_s);
  CHECK(r2.failures.front().node == r.failures.front().node);
}

TEST_CASE("a detected straggler is evicted: to repair, and its job goes on without it as from a failure") {
  // Node 0 runs 10 % slower; a 2-node job of 1 h (checkpoints every 300 s) starts on nodes 0 and 1 at t = 0.
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600, 300)};
  SimOptions o;
  o.failures.straggler_nodes = {0};
  o.failures.straggler_detect_s = 600;
  auto r = simulate_cluster(shape(4, 4), jobs, o);
  // At 600 s it has done 600 / 1.1 = 545 s of work: the 300 s checkpoint is kept, node 0 goes to repair,
  // and the job restarts on two healthy nodes: 600 + 600 (restart) + 3300 = 4500 s.
  REQUIRE(r.evictions.size() == 1);
  CHECK(r.evictions[0].time_s == Approx(600));
  CHECK(r.evictions[0].node == 0);
  CHECK(r.jobs[0].straggler_evictions == 1);
  CHECK(r.jobs[0].restarts == 1);
  CHECK(r.jobs[0].end_s == Approx(4500));
  CHECK(r.jobs[0].straggler_s == Approx(30));              // the kept 300 s of work took 330
  CHECK(r.jobs[0].lost_s == Approx(600 - 330 + 600));     // the rest of the first run, and the restart
  for (int n : r.jobs[0].runs.back().nodes) CHECK(n != 0);
  // Without detection it runs slow to the end: 3960 s; a 10 h job gains from the eviction (36,000 x 1.1 =
  // 39,600 s against 600 + 600 + 35,700 = 36,900 s).
  o.failures.straggler_detect_s = 0;
  CHECK(simulate_cluster(shape(4, 4), jobs, o).jobs[0].end_s == Approx(3960));
  jobs[0].duration_s = jobs[0].time_limit_s = 36000;
  CHECK(simulate_cluster(shape(4, 4), jobs, o).jobs[0].end_s == Approx(39600));
  o.failures.straggler_detect_s = 600;
  CHECK(simulate_cluster(shape(4, 4), jobs, o).jobs[0].end_s == Approx(36900));
  // Checkpointless: a free node replaces it in process, no work lost (a job given by its duration has no
  // step in flight): 600 + 105 + (3600 - 545.45) s.
  jobs[0].duration_s = jobs[0].time_limit_s = 3600;
  o.failures.recovery = JobRecovery::checkpointless;
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].end_s == Approx(600 + 105 + 3600 - 600 / 1.1));
  CHECK(r.jobs[0].checkpointless_recoveries == 1);
  // Elastic (min_nodes 1): it goes on without the node, nothing lost, no restart.
  o.failures.recovery = JobRecovery::restart;
  jobs[0].min_nodes = 1;
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.jobs[0].straggler_evictions == 1);
  CHECK(r.jobs[0].restarts == 0);
  CHECK(r.jobs[0].rescales >= 1);
  for (int n : r.jobs[0].runs.back().nodes) CHECK(n != 0);
  // The repaired node returns at full speed: evicted once, never again.
  o.failures.recovery = JobRecovery::restart;
  jobs = {job("a", 0, 2, 3600, 300), job("b", 20000, 4, 3600, 300)};
  r = simulate_cluster(shape(4, 4), jobs, o);
  CHECK(r.evictions.size() == 1);
  CHECK(r.jobs[1].end_s == Approx(23600));

  // With hot spares the evicted node's place goes to a spare under its own leaf switch first, as for a
  // failure, so a job that required one switch stays under one (review of session 24). 16 nodes in two
  // switches of 8, 9 spares (nodes 7-15: one under switch 0); the job takes nodes 0-3.
  {
    SimOptions spares;
    spares.failures.straggler_nodes = {0};
    spares.failures.straggler_detect_s = 600;
    spares.failures.spare_nodes = 9;
    std::vector<JobSpec> one = {job("r", 0, 4, 3600, 300)};
    one[0].topology = TopologyRequest::required;
    const auto rs = simulate_cluster(shape(16, 8), one, spares);
    REQUIRE(rs.jobs[0].runs.size() == 2);
    CHECK(rs.jobs[0].runs[1].nodes == std::vector<int>{7, 1, 2, 3});
    CHECK(rs.jobs[0].spare_swaps == 1);
  }

  // Random failures, spares, drawn stragglers and detection: time is conserved (rigid jobs: an elastic
  // one's shrunk runs take work / share, conserved in its own test).
  jobs.clear();
  for (int i = 0; i < 40; ++i) jobs.push_back(job("j" + std::to_string(i), i * 900.0, 1 + (i % 4) * 2, 4 * 3600.0, 1800));
  o = SimOptions{};
  o.failures.node_failures_per_node_hour = 0.02;
  o.failures.seed = 5;
  o.failures.spare_nodes = 2;
  o.failures.straggler_fraction = 0.2;
  o.failures.straggler_detect_s = 1200;
  for (auto recovery : {JobRecovery::restart, JobRecovery::checkpointless}) {
    o.failures.recovery = recovery;
    r = simulate_cluster(shape(18, 9), jobs, o);
    CHECK(!r.evictions.empty());
    fmsim::test::check_time_conserved(jobs, r);
  }
}

TEST_CASE("jobs that share leaf switches slow each other while they run together, by the factor given") {
  // 4 nodes, 2 per leaf switch; a (nodes 0 and 2) and b (1 and 3) both span both switches. Together each
  // runs at half its pace (a stand-in for the shared-fabric simulation). a: 1 h of work, b: 30 min. Both
  // start at 0; b's 30 min take 1 h at half pace; by then a has done 30 min; alone it does the other 30:
  // a ends at 1.5 h. Their added time is the contention: 30 min each.
  std::vector<JobSpec> jobs = {job("a", 0, 2, 3600), job("b", 0, 2, 1800)};
  for (auto& j : jobs) j.scenario = "shared.json";
  SimOptions o;
  o.placement = Placement::spread;
  int calls = 0;
  o.contention_at = [&calls](const std::vector<int>& members, const std::vector<std::vector<int>>& nodes) {
    ++calls;
    CHECK(members.size() == 2);
    CHECK(nodes.size() == 2);
    return std::vector<double>(members.size(), 0.5);
  };
  auto r = simulate_cluster(shape(4, 2), jobs, o);
  CHECK(calls >= 1);
  CHECK(r.jobs[1].end_s == Approx(3600));
  CHECK(r.jobs[0].end_s == Approx(5400));
  CHECK(r.jobs[0].contention_s == Approx(1800));
  CHECK(r.jobs[1].contention_s == Approx(1800));
  CHECK(r.contention_node_s == Approx(2 * 1800 + 2 * 1800));
  // Packed under one switch each (topology placement), they never meet on an uplink: no call, no slowdown.
  o.placement = Placement::topology;
  calls = 0;
  r = simulate_cluster(shape(4, 2), jobs, o);
  CHECK(calls == 0);
  CHECK(r.jobs[0].end_s == Approx(3600));
  CHECK(r.jobs[1].end_s == Approx(1800));
  // A node of a fails at 1 h 10 min: it has done 30 min of work at half pace (1 h) and 10 min alone, 40 min
  // in all, every minute of it checkpointed (every 10 min), so only the 10 min restart is lost; it ends at
  // 4200 + 600 + 20 min = 6000 s. Run time is conserved: work + lost + contention.
  o.placement = Placement::spread;
  jobs[0].checkpoint_interval_s = 600;
  FailureModel::Injected f;
  f.time_s = 4200;
  f.node = 0;
  o.failures.injected = {f};
  o.failures.restart_s = 600;
  o.failures.repair_s = 60;
  r = simulate_cluster(shape(4, 2), jobs, o);
  double ran = 0;
  for (const auto& run : r.jobs[0].runs) ran += run.end_s - run.start_s;
  CHECK(ran == Approx(jobs[0].duration_s + r.jobs[0].lost_s + r.jobs[0].contention_s + r.jobs[0].straggler_s));
  CHECK(r.jobs[0].lost_s == Approx(600));
  CHECK(r.jobs[0].end_s == Approx(6000));
  CHECK(r.jobs[0].contention_s == Approx(1800));
}

TEST_CASE("a job that requires one leaf switch waits for room under one; preferred and none do not") {
  // 8 nodes, 4 per switch. x and y (3 nodes, 2 h) take 3 nodes under each switch at 0; z (2 nodes, 1 h)
  // comes at 60 s: 2 nodes are free, one under each switch. Required: it waits for x (2 h). Otherwise it
  // starts at once across the two switches (preferred: the fewest it can, here two).
  std::vector<JobSpec> jobs = {job("x", 0, 3, 7200), job("y", 0, 3, 7300), job("z", 60, 2, 3600)};
  jobs[2].topology = TopologyRequest::required;
  SimOptions o;
  auto r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[2].first_start_s == Approx(7200));
  CHECK(r.jobs[2].groups_spanned == 1);
  jobs[2].topology = TopologyRequest::preferred;
  r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[2].first_start_s == Approx(60));
  CHECK(r.jobs[2].groups_spanned == 2);
  jobs[2].topology = TopologyRequest::none;
  r = simulate_cluster(shape(8, 4), jobs, o);
  CHECK(r.jobs[2].first_start_s == Approx(60));
  // Larger than any switch: refused, it could never start.
  jobs[2].topology = TopologyRequest::required;
  jobs[2].nodes = 5;
  CHECK_THROWS_WITH(simulate_cluster(shape(8, 4), jobs, o), Catch::Contains("could never start"));
}

TEST_CASE("a job that requires one block of switches is placed inside one, or waits for one") {
  // 8 nodes, 2 per leaf switch (groups 0-3), 2 switches per block (blocks {0, 1} and {2, 3}). x (1 node)
  // and y (1 node) take group 0 (best fit into one group). z (3 nodes) fits no single group: without a block
  // request the emptiest groups go first, 1 then 2 (nodes 2, 3, 4: both blocks); asking for a block it
  // takes block 1's groups 2 and 3 (nodes 4, 5, 6).
  std::vector<JobSpec> jobs = {job("x", 0, 1, 7200), job("y", 0, 1, 7200), job("z", 60, 3, 3600)};
  auto s = shape(8, 2);
  s.group_block = {0, 0, 1, 1};
  SimOptions o;
  auto r = simulate_cluster(s, jobs, o);
  CHECK(r.jobs[2].runs.front().nodes == std::vector<int>{2, 3, 4});
  for (auto request : {TopologyRequest::preferred, TopologyRequest::required}) {
    jobs[2].topology = request;
    jobs[2].topology_level = TopologyLevel::block;
    r = simulate_cluster(s, jobs, o);
    CHECK(r.jobs[2].first_start_s == Approx(60));
    CHECK(r.jobs[2].runs.front().nodes == std::vector<int>{4, 5, 6});
  }
  // A fourth job w (3 nodes at 0, a block required) takes block 1 (best fit: 4 free against block 0's 2):
  // nodes 4, 5, 6. The required z then waits for x and y to end (block 0 free at 2 h); preferred, it starts
  // at once on the 3 nodes free across the blocks.
  jobs.push_back(job("w", 0, 3, 20000));
  jobs[3].topology = TopologyRequest::required;
  jobs[3].topology_level = TopologyLevel::block;
  jobs[2].topology = TopologyRequest::required;
  r = simulate_cluster(s, jobs, o);
  CHECK(r.jobs[3].runs.front().nodes == std::vector<int>{4, 5, 6});
  CHECK(r.jobs[2].first_start_s == Approx(7200));
  for (int n : r.jobs[2].runs.front().nodes) CHECK(s.group_block[n / 2] == 0);
  jobs[2].topology = TopologyRequest::preferred;
  r = simulate_cluster(s, jobs, o);
  CHECK(r.jobs[2].first_start_s == Approx(60));
  CHECK(r.jobs[2].runs.front().nodes == std::vector<int>{2, 3, 7});
  // Larger than any block: refused; a block request without a block level: refused.
  jobs[2].topology = TopologyRequest::required;
  jobs[2].nodes = 5;
  CHECK_THROWS_WITH(simulate_cluster(s, jobs, o), Catch::Contains("could never start"));
  jobs[2].nodes = 3;
  s.group_block.clear();
  CHECK_THROWS_WITH(simulate_cluster(s, jobs, o), Catch::Contains("no level above"));
}
