// The fast contention model's uplink sharing (cluster/uplink_sharing.hpp): closed forms.
#include <catch2/catch.hpp>

#include "fmsim/cluster/uplink_sharing.hpp"

using namespace fmsim::cluster;

TEST_CASE("an uplink that never binds stretches nothing", "[cluster][contention]") {
  // A leaf of 8 nodes at 2:1 carries 4 rails' worth: 1 + 2 sending nodes never exceed it.
  CHECK(uplink_stretch(1, {{2, 1.0}}, 4.0) == 1.0);
  CHECK(uplink_stretch(2, {}, 4.0) == 1.0);
  // No other tenant, or tenants that never send: the job alone.
  CHECK(uplink_stretch(6, {}, 4.0) == 1.0);
  CHECK(uplink_stretch(3, {{4, 0.0}}, 4.0) == 1.0);
}

TEST_CASE("an always-on neighbour shares the uplink max-min fairly", "[cluster][contention]") {
  // 8 senders on a 4-rail uplink: each gets half its rail, its cross-leaf bytes take twice as long.
  CHECK(uplink_stretch(4, {{4, 1.0}}, 4.0) == Approx(2.0));
  // Seven one-node neighbours always on beside one node: 8 / 4.
  std::vector<LeafTenant> seven(7, LeafTenant{1, 1.0});
  CHECK(uplink_stretch(1, seven, 4.0) == Approx(2.0));
  // Relative to the job alone: a job that oversubscribes the uplink by itself (6 on 4) counts only the rest.
  CHECK(uplink_stretch(6, {{2, 1.0}}, 4.0) == Approx(8.0 / 6.0));
}

TEST_CASE("random phases: the stretch is the expectation over the neighbours' duty", "[cluster][contention]") {
  // One neighbour of 4 on a 4-rail uplink beside 4 of our own, on a fraction d of the time: 1 + d.
  for (double d : {0.1, 0.25, 0.5, 0.9}) CHECK(uplink_stretch(4, {{4, d}}, 4.0) == Approx(1.0 + d));
  // Two neighbours of 2 (duties a, b) beside 2 on a 4-rail uplink: only both on binds (6 / 4).
  const double a = 0.3, b = 0.6;
  CHECK(uplink_stretch(2, {{2, a}, {2, b}}, 4.0) == Approx(1.0 + a * b * 0.5));
  // Fractional demands (a ring whose hops leave the leaf half the time): 0.5 + 3.5 on 2 rails.
  CHECK(uplink_stretch(0.5, {{3.5, 1.0}}, 2.0) == Approx(2.0));
  // More duty never shortens a transfer; more uplink never lengthens one.
  CHECK(uplink_stretch(4, {{4, 0.6}}, 4.0) > uplink_stretch(4, {{4, 0.3}}, 4.0));
  CHECK(uplink_stretch(4, {{4, 0.6}}, 8.0) <= uplink_stretch(4, {{4, 0.6}}, 4.0));
}

TEST_CASE("the rail share mixes stretched cross-leaf bytes with the rest", "[cluster][contention]") {
  CHECK(rail_share(0.0, 3.0) == 1.0);
  CHECK(rail_share(1.0, 2.0) == Approx(0.5));
  CHECK(rail_share(0.5, 2.0) == Approx(1.0 / 1.5));
  CHECK(rail_share(0.5, 1.0) == 1.0);
  CHECK(rail_share(0.7, 0.5) == 1.0);  // a stretch below 1 is none
}
