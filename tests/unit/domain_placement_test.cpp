// Jobs that do not fill an NVLink domain, or span several: placement on UltraServer clusters, the
// layout the collectives then see, and NVLink partitions.
#include <catch2/catch.hpp>
#include <map>

#include "fmsim/collectives/layout.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/topology/placement.hpp"
#include "test_support.hpp"

using namespace fmsim::topology;
using Catch::Matchers::Contains;

namespace {

std::map<int, int> ranks_per_domain(const ClusterGraph& cluster, const std::vector<int>& gpus) {
  std::map<int, int> count;
  for (int gpu : gpus) ++count[cluster.domain_of_node(cluster.node_of_gpu(gpu))];
  return count;
}

}  // namespace

TEST_CASE("a job over several NVL72 racks gets the same whole trays in each", "[placement]") {
  const auto cluster = fmsim::test::shipped_cluster("p6e-gb200-4x72.json");
  for (auto policy : {PlacementPolicy::packed, PlacementPolicy::topology_aware}) {
    const auto gpus = place_ranks(cluster, 256, policy);
    CHECK(ranks_per_domain(cluster, gpus) == std::map<int, int>{{0, 64}, {1, 64}, {2, 64}, {3, 64}});
    const auto layout = fmsim::collectives::make_layout(cluster, gpus);
    CHECK(layout.islands == 4);
    CHECK(layout.ranks_per_island == 64);
    CHECK(layout.nodes_per_island == 16);
    // 96 GPUs: two racks of 48 (12 trays each), not 72 + 24.
    CHECK(ranks_per_domain(cluster, place_ranks(cluster, 96, policy)) == std::map<int, int>{{0, 48}, {1, 48}});
    // Within one rack the job stays there.
    CHECK(ranks_per_domain(cluster, place_ranks(cluster, 64, policy)) == std::map<int, int>{{0, 64}});
  }
}

TEST_CASE("counts that cannot be balanced over racks, or exceed the cluster, are input errors", "[placement]") {
  const auto cluster = fmsim::test::shipped_cluster("p6e-gb200-4x72.json");
  CHECK_THROWS_WITH(place_ranks(cluster, 100, PlacementPolicy::packed), Contains("nearest 96 or 104"));
  CHECK_THROWS_WITH(place_ranks(cluster, 289, PlacementPolicy::packed), Contains("a cluster of 288 GPUs"));
}

TEST_CASE("NVLink partitions make 8-GPU domains of an NVL72", "[placement]") {
  const auto cluster = fmsim::test::cluster_from_json(
      R"({"ultraserver_type": "u-p6e-gb200x72", "ultraservers": 2, "nvlink_partition_gpus": 8,
          "fabric": {"nodes_per_leaf": 18}})");
  CHECK(cluster.spec.nvlink_domains() == 18);
  const auto layout = fmsim::collectives::make_layout(cluster, place_ranks(cluster, 64, PlacementPolicy::packed));
  CHECK(layout.islands == 8);
  CHECK(layout.ranks_per_island == 8);
  CHECK_THROWS_AS(fmsim::test::cluster_from_json(
                      R"({"ultraserver_type": "u-p6e-gb200x72", "ultraservers": 1, "nvlink_partition_gpus": 6})"),
                  fmsim::InputError);
}

TEST_CASE("p6-b300 exposes 268 GB of its B300s' 288 GB", "[catalog]") {
  const auto cluster = fmsim::test::shipped_cluster("p6-b300-16node.json");
  CHECK(cluster.spec.gpu.hbm_bytes == Approx(268e9));
  CHECK(fmsim::test::catalog().gpu("B300").hbm_bytes == Approx(288e9));
  const auto& gb300 = fmsim::test::catalog().ultraserver("u-p6e-gb300x72");
  const auto& instance = fmsim::test::catalog().instance(gb300.instance);
  CHECK(gb300.instances * instance.gpus == 72);
  CHECK(gb300.instances * instance.gpus * fmsim::test::catalog().gpu("GB300").hbm_bytes == Approx(20.1e12).epsilon(0.01));
}
