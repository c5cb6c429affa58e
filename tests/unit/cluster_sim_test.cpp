// The shared-cluster simulation: backfill and FIFO on a hand-worked trace, an M/M/c queue against Erlang C,
// conservation of node-seconds under failures, determinism, placement and priority.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "fmsim/cluster/cluster_sim.hpp"

using namespace fmsim::cluster;

namespace {

JobSpec job(const std::string& id, double submit_s, int nodes, double duration_s) {
  JobSpec j;
  j.id = id;
  j.submit_s = submit_s;
  j.nodes = nodes;
  j.duration_s = duration_s;
  j.time_limit_s = duration_s;
  return j;
}

ClusterShape shape(int nodes, int per_group) {
  ClusterShape s;
  s.nodes = nodes;
  s.nodes_per_leaf = per_group;
  return s;
}

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
  double held = 0;
  int restarts = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& out = r.jobs[i];
    REQUIRE(out.end_s > 0);
    double ran = 0;
    for (const auto& run : out.runs) {
      ran += run.end_s - run.start_s;
      held += (run.end_s - run.start_s) * run.nodes.size();
    }
    // Every second a job ran was either its work or lost to a failure (work past a checkpoint, restarts).
    CHECK(ran == Approx(jobs[i].duration_s + out.lost_s).epsilon(1e-9));
    restarts += out.restarts;
  }
  CHECK(restarts > 0);
  CHECK(held == Approx(r.busy_node_s).epsilon(1e-9));
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
