// What a step's replay reports of its traffic across leaf switches (training::CrossLeafTraffic), which
// the fast contention model reads: the share of a data-parallel ring's hops between leaves, the time its
// crossing transfers are in flight, and the rail-bandwidth scale slowing exactly that traffic.
#include <catch2/catch.hpp>

#include "fmsim/cluster/scenario_timing.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "test_support.hpp"

using namespace fmsim;

namespace {

training::StepResult ddp_step(const std::vector<int>& nodes, double rail_scale = 1.0) {
  const auto cluster_file = test::source_dir() / "topologies" / "p5-32node-os2.json";
  const auto spec = topology::load_cluster(cluster_file, test::catalog());
  static const auto graph = topology::build_cluster_graph(spec);
  const auto scenario = (test::source_dir() / "configs" / "training" / "llama3-8b-ddp-p5-os2.json").string();
  const auto trace = cluster::trace_on_nodes(cluster_file, spec, scenario, nodes, test::catalog(), "test", false);
  return training::simulate_step(trace, graph, {rail_scale});
}

}  // namespace

TEST_CASE("a data-parallel ring crosses leaf switches on the hops between them", "[contention][replay]") {
  // p5-32node-os2: 8 nodes per leaf. Four nodes under one leaf: nothing crosses.
  const auto packed = ddp_step({0, 1, 2, 3});
  REQUIRE(packed.cross_leaf.net_bytes > 0);
  CHECK(packed.cross_leaf.cross_bytes == 0);
  CHECK(packed.cross_leaf.cross_active_s == 0);
  // One node under each of four leaves: every hop crosses.
  const auto scattered = ddp_step({0, 8, 16, 24});
  CHECK(scattered.cross_leaf.cross_bytes == Approx(scattered.cross_leaf.net_bytes));
  CHECK(scattered.cross_leaf.cross_busy_s == Approx(scattered.cross_leaf.net_busy_s));
  // Two nodes under each of two leaves, in order: two of the ring's four hops cross.
  const auto pairs = ddp_step({0, 1, 8, 9});
  CHECK(pairs.cross_leaf.cross_bytes == Approx(0.5 * pairs.cross_leaf.net_bytes));
  CHECK(pairs.cross_leaf.leaf_cross_busy_s.at(0) == Approx(pairs.cross_leaf.leaf_cross_busy_s.at(1)));
  // Three nodes under one leaf and one under another: the ring leaves the first leaf once in three hops
  // and the second every time, so that leaf's crossing share is three times the first's.
  const auto uneven = ddp_step({0, 1, 2, 8});
  const auto& by_leaf = uneven.cross_leaf.leaf_cross_busy_s;
  REQUIRE(by_leaf.size() == 2);
  CHECK(by_leaf.at(1) == Approx(3 * by_leaf.at(0)));
  CHECK(uneven.cross_leaf.cross_bytes == Approx(0.5 * uneven.cross_leaf.net_bytes));  // two of four hops
  CHECK(by_leaf.at(0) == Approx(uneven.cross_leaf.cross_busy_s * (1.0 / 3) / 0.5));
  // In flight: no longer than the step, no shorter than the weighted busy time, and the union of the
  // GPU's crossing transfers (never their sum when they overlap).
  for (const auto* r : {&scattered, &pairs}) {
    CHECK(r->cross_leaf.cross_active_s > 0);
    CHECK(r->cross_leaf.cross_active_s <= r->step_time_s * (1 + 1e-9));
    CHECK(r->cross_leaf.cross_busy_s <= r->cross_leaf.cross_active_s * (1 + 1e-9) + 1e-12);
  }
}

TEST_CASE("a smaller rail share slows the network part of a step and nothing else", "[contention][replay]") {
  const auto alone = ddp_step({0, 8, 16, 24});
  const auto half = ddp_step({0, 8, 16, 24}, 0.5);
  CHECK(half.step_time_s > alone.step_time_s);
  // The extra time is at most the network transfers' own time again (each at half the bandwidth).
  CHECK(half.step_time_s - alone.step_time_s <= alone.cross_leaf.net_busy_s * (1 + 1e-6));
  CHECK(half.cross_leaf.net_bytes == Approx(alone.cross_leaf.net_bytes));
  // Packed under one leaf the step has no network traffic of its rails beyond its own: still slower at
  // half its rail, by the same bound.
  const auto packed = ddp_step({0, 1, 2, 3});
  CHECK(ddp_step({0, 1, 2, 3}, 0.5).step_time_s - packed.step_time_s <= packed.cross_leaf.net_busy_s * (1 + 1e-6));
}
