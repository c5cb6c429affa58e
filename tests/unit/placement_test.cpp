#include <catch2/catch.hpp>
#include <set>

#include "fmsim/common/error.hpp"
#include "fmsim/topology/placement.hpp"
#include "test_support.hpp"

using namespace fmsim::topology;

namespace {

ClusterGraph ten_nodes_in_groups_of_four() {
  // Leaf groups of 4, 4 and 2 nodes.
  return fmsim::test::cluster_from_json(
      R"({"instance_type": "p5.48xlarge", "nodes": 10, "fabric": {"topology": "fat-tree", "nodes_per_leaf": 4}})");
}

std::set<int> leaf_groups_used(const ClusterGraph& cluster, const std::vector<int>& gpus) {
  std::set<int> groups;
  for (int gpu : gpus) groups.insert(cluster.leaf_group_of_node(cluster.node_of_gpu(gpu)));
  return groups;
}

}  // namespace

TEST_CASE("every policy maps ranks one-to-one onto existing GPUs", "[placement]") {
  auto cluster = ten_nodes_in_groups_of_four();
  for (auto policy : {PlacementPolicy::packed, PlacementPolicy::topology_aware, PlacementPolicy::scattered}) {
    for (int ranks : {1, 7, 8, 24, 80}) {
      INFO(to_string(policy) << " ranks=" << ranks);
      auto gpus = place_ranks(cluster, ranks, policy, 42);
      REQUIRE(gpus.size() == static_cast<std::size_t>(ranks));
      std::set<int> distinct(gpus.begin(), gpus.end());
      CHECK(distinct.size() == gpus.size());
      CHECK(*distinct.begin() >= 0);
      CHECK(*distinct.rbegin() < 80);
      // Every policy fills whole nodes: a job uses the minimum number of nodes.
      std::set<int> nodes;
      for (int gpu : gpus) nodes.insert(cluster.node_of_gpu(gpu));
      CHECK(nodes.size() == static_cast<std::size_t>((ranks + 7) / 8));
    }
  }
}

TEST_CASE("packed placement is the identity", "[placement]") {
  auto gpus = place_ranks(ten_nodes_in_groups_of_four(), 20, PlacementPolicy::packed);
  for (int rank = 0; rank < 20; ++rank) CHECK(gpus[rank] == rank);
}

TEST_CASE("topology-aware placement keeps a job under the fewest leaves", "[placement]") {
  auto cluster = ten_nodes_in_groups_of_four();
  // Two nodes fit in the two-node group: best fit leaves the full groups free.
  auto small = place_ranks(cluster, 16, PlacementPolicy::topology_aware);
  CHECK(leaf_groups_used(cluster, small) == std::set<int>{2});
  // Five nodes need two groups; packed would too, but never fewer.
  auto medium = place_ranks(cluster, 40, PlacementPolicy::topology_aware);
  CHECK(leaf_groups_used(cluster, medium).size() == 2);
  // Three nodes fit under one leaf, so they get one.
  auto three = place_ranks(cluster, 24, PlacementPolicy::topology_aware);
  CHECK(leaf_groups_used(cluster, three).size() == 1);
}

TEST_CASE("scattered placement is reproducible for a seed and differs across seeds", "[placement]") {
  auto cluster = fmsim::test::shipped_cluster("p5-16node.json");
  auto a = place_ranks(cluster, 64, PlacementPolicy::scattered, 7);
  auto b = place_ranks(cluster, 64, PlacementPolicy::scattered, 7);
  auto c = place_ranks(cluster, 64, PlacementPolicy::scattered, 8);
  CHECK(a == b);
  CHECK(a != c);
  CHECK(a != place_ranks(cluster, 64, PlacementPolicy::packed));
}

TEST_CASE("impossible placements are input errors", "[placement]") {
  auto cluster = ten_nodes_in_groups_of_four();
  CHECK_THROWS_AS(place_ranks(cluster, 0, PlacementPolicy::packed), fmsim::InputError);
  CHECK_THROWS_AS(place_ranks(cluster, 81, PlacementPolicy::packed), fmsim::InputError);
  CHECK_THROWS_AS(parse_placement_policy("random"), fmsim::InputError);
}
