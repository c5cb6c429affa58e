#include <catch2/catch.hpp>
#include <boost/graph/breadth_first_search.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/topology/bisection.hpp"
#include "fmsim/topology/summary.hpp"
#include "test_support.hpp"

using namespace fmsim::topology;
using fmsim::test::cluster_from_json;
using fmsim::test::shipped_cluster;
using Catch::Matchers::Contains;

namespace {

/// Vertices reachable from `from` over edges with bandwidth in both directions.
std::vector<bool> reachable(const ClusterGraph& cluster, Vertex from) {
  const Graph& g = cluster.graph;
  std::vector<bool> seen(boost::num_vertices(g), false);
  std::vector<Vertex> stack{from};
  seen[from] = true;
  while (!stack.empty()) {
    Vertex v = stack.back();
    stack.pop_back();
    for (auto [it, end] = boost::out_edges(v, g); it != end; ++it) {
      Vertex w = boost::target(*it, g);
      if (!seen[w] && g[*it].forward_Bps > 0 && g[*it].reverse_Bps > 0) {
        seen[w] = true;
        stack.push_back(w);
      }
    }
  }
  return seen;
}

std::string fabric_json(const std::string& instance, int nodes, const std::string& topology, int per_leaf,
                        double oversubscription) {
  return R"({"instance_type": ")" + instance + R"(", "nodes": )" + std::to_string(nodes) +
         R"(, "fabric": {"topology": ")" + topology + R"(", "nodes_per_leaf": )" + std::to_string(per_leaf) +
         R"(, "oversubscription": )" + std::to_string(oversubscription) + "}}";
}

}  // namespace

TEST_CASE("shipped clusters have the GPU counts and NVLink domains their hardware implies", "[graph]") {
  struct Row { const char* file; int gpus; int domains; int domain_size; };
  for (const Row& row : {Row{"p5-2node.json", 16, 2, 8}, Row{"p5-16node.json", 128, 16, 8},
                         Row{"p5en-128node.json", 1024, 128, 8}, Row{"p6-b200-64node.json", 512, 64, 8},
                         Row{"p6e-gb200-4x72.json", 288, 4, 72}, Row{"p4de-2node.json", 16, 2, 8},
                         Row{"dgx-h100-8node-ib.json", 64, 8, 8}}) {
    INFO(row.file);
    auto cluster = shipped_cluster(row.file);
    auto summary = summarize(cluster);
    CHECK(summary.gpus == row.gpus);
    CHECK(cluster.gpus.size() == static_cast<std::size_t>(row.gpus));
    REQUIRE(summary.nvlink_domain_sizes.size() == static_cast<std::size_t>(row.domains));
    for (int size : summary.nvlink_domain_sizes) CHECK(size == row.domain_size);
    CHECK(summary.hbm_bytes == Approx(row.gpus * cluster.spec.gpu.hbm_bytes));
  }
}

TEST_CASE("every GPU reaches every other GPU and every storage tier", "[graph]") {
  for (const char* file : {"p5-2node.json", "p5-16node.json", "p6e-gb200-4x72.json", "dgx-h100-8node-ib.json"}) {
    INFO(file);
    auto cluster = shipped_cluster(file);
    // The graph is undirected, so one traversal from GPU 0 shows every pair connected.
    auto seen = reachable(cluster, cluster.gpus.front());
    for (Vertex gpu : cluster.gpus) CHECK(seen[gpu]);
    for (Vertex disk : cluster.nvme) CHECK(seen[disk]);
    if (cluster.has_fsx) CHECK(seen[cluster.fsx]);
    if (cluster.has_s3) CHECK(seen[cluster.s3]);
  }
  auto p5 = shipped_cluster("p5-2node.json");
  CHECK(p5.has_fsx);
  CHECK(p5.has_s3);
  CHECK(p5.nvme.size() == 2);
}

TEST_CASE("bisection bandwidth equals the closed form for the oversubscription", "[graph]") {
  const double node_Bps = 400e9;  // p5.48xlarge: 3,200 Gbps
  for (const char* topology : {"fat-tree", "rail-optimized"}) {
    for (double oversubscription : {1.0, 2.0, 4.0}) {
      INFO(topology << " " << oversubscription << ":1");
      // 8 nodes, 2 per leaf group: the halves are leaf-aligned, so all crossing traffic uses uplinks.
      auto cluster = cluster_from_json(fabric_json("p5.48xlarge", 8, topology, 2, oversubscription));
      double expected = 8 / 2 * node_Bps / oversubscription;
      CHECK(bisection_bandwidth_Bps(cluster) == Approx(expected).epsilon(1e-9));
    }
  }
  // One leaf group: no uplinks in the cut, the NICs of half the nodes bound it.
  auto single_leaf = cluster_from_json(fabric_json("p5.48xlarge", 4, "fat-tree", 16, 4.0));
  CHECK(bisection_bandwidth_Bps(single_leaf) == Approx(2 * node_Bps));
}

TEST_CASE("bisection of one node is its NVLink; of UltraServers it is EFA", "[graph]") {
  auto one_node = cluster_from_json(fabric_json("p5.48xlarge", 1, "fat-tree", 16, 1.0));
  // 4 GPUs on each side, each with 450 GB/s to the NVSwitch, plus each one's 50 GB/s NIC rail, which
  // reaches the other half's NICs through the shared leaf switch.
  CHECK(bisection_bandwidth_Bps(one_node) == Approx(4 * 450e9 + 4 * 50e9));
  auto gb200 = shipped_cluster("p6e-gb200-4x72.json");
  // Two UltraServers of 18 instances on each side, 1,600 Gbps (200 GB/s) per instance.
  CHECK(bisection_bandwidth_Bps(gb200) == Approx(2 * 18 * 200e9));
}

TEST_CASE("more oversubscription never raises the bisection", "[graph]") {
  double previous = 1e300;
  for (double oversubscription : {1.0, 1.5, 2.0, 3.0, 8.0}) {
    auto cluster = cluster_from_json(fabric_json("p5en.48xlarge", 12, "rail-optimized", 3, oversubscription));
    double bisection = bisection_bandwidth_Bps(cluster);
    CHECK(bisection <= previous * (1 + 1e-12));
    previous = bisection;
  }
}

TEST_CASE("links carry the catalog's per-direction bandwidths", "[graph]") {
  auto cluster = shipped_cluster("p5-2node.json");
  const Graph& g = cluster.graph;
  int nvlinks = 0, nic_links = 0;
  for (auto [it, end] = boost::edges(g); it != end; ++it) {
    if (g[*it].kind == EdgeKind::nvlink) {
      ++nvlinks;
      CHECK(g[*it].forward_Bps == Approx(450e9));
    }
    if (g[*it].kind == EdgeKind::nic_leaf) {
      ++nic_links;
      CHECK(g[*it].forward_Bps == Approx(50e9));  // 3,200 Gbps over 8 rails
    }
  }
  CHECK(nvlinks == 16);
  CHECK(nic_links == 16);
  // Summed over a node's rails, injection is the instance's EFA bandwidth.
  CHECK(summarize(cluster).injection_bandwidth_per_node_Bps == Approx(400e9));
}

TEST_CASE("summary totals follow from the catalog", "[graph]") {
  auto summary = summarize(shipped_cluster("p6e-gb200-4x72.json"));
  CHECK(summary.nodes == 72);
  CHECK(summary.hbm_bytes == Approx(4 * 13.4e12).epsilon(0.01));
  CHECK(summary.usd_per_hour.value() == Approx(72 * fmsim::test::catalog().instance("p6e-gb200.36xlarge").usd_per_hour.value()));
  auto json = to_json(summary);
  CHECK(json["gpus"] == 288);
  CHECK(json["nvlink_domains"] == nlohmann::json::array({72, 72, 72, 72}));
  CHECK(json.contains("bisection_bandwidth_Bps"));
  CHECK(json.contains("usd_per_hour"));
}

TEST_CASE("bad cluster descriptions are input errors naming the key", "[graph]") {
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p9.48xlarge", "nodes": 2})"),
                    Contains("/instance_type") && Contains("p5.48xlarge"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 0})"),
                    Contains("/nodes: found 0, expected an integer >= 1"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": -3})"), Contains("/nodes"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 2, "gpu": "H100"})"),
                    Contains("unknown key 'gpu'"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 2, "fabric": {"switch_latency": "1"}})"),
                    Contains("/fabric/switch_latency") && Contains("missing unit"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p6e-gb200.36xlarge", "nodes": 2})"),
                    Contains("ultraserver_type"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 2, "fabric": {"oversubscription": 0.5}})"),
                    Contains("a ratio >= 1"));
  CHECK_THROWS_WITH(cluster_from_json(R"({"nodes": 2})"), Contains("exactly one of"));
}
