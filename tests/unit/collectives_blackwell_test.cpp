// Collectives past Hopper (issue #23 item 5): NVLink efficiency per generation from the catalog, the NVLS
// loop fill, NVL72 racks and several racks, the per-operation overhead and EFA v1 latency. Each check is
// a closed form from the model's documented constants (docs/model.md), not a copy of fmsim's output.
#include <catch2/catch.hpp>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "fmsim/collectives/benchmark.hpp"
#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/topology/placement.hpp"
#include "test_support.hpp"

using namespace fmsim::collectives;
using fmsim::topology::PlacementPolicy;

namespace {

CommLayout layout_of(const fmsim::topology::ClusterGraph& cluster, int gpus) {
  return make_layout(cluster, fmsim::topology::place_ranks(cluster, gpus, PlacementPolicy::packed));
}

BenchmarkRow row_at(const CommLayout& layout, Op op, double bytes, std::optional<Algorithm> algorithm = std::nullopt,
                    std::optional<Protocol> protocol = std::nullopt) {
  BenchmarkRequest request;
  request.op = op;
  request.algorithm = algorithm;
  request.protocol = protocol;
  request.sizes_bytes = {bytes};
  return run_benchmark(layout, request).rows.at(0);
}

constexpr double kUs = 1e-6;
constexpr double kGiB = 1073741824.0;
constexpr double kMiB = 1048576.0;

}  // namespace

TEST_CASE("every NVLink generation carries its own efficiencies, NVL72 racks their own", "[collectives][blackwell]") {
  const auto& catalog = fmsim::test::catalog();
  const auto& nv4 = catalog.interconnect("nvlink4");
  const auto& nv5 = catalog.interconnect("nvlink5");
  const auto& rack = catalog.interconnect("nvlink5-nvl72");
  // NVLink 4: 370 of 450 GB/s for copies; NVLS algbw 273 GB/s at 8 GPUs, each moving S (1 + 1/8).
  CHECK(nv4.copy_efficiency == Approx(370.0 / 450.0).epsilon(0.001));
  CHECK(nv4.nvls_efficiency == Approx(273.0 * 1.125 / 450.0).epsilon(0.001));
  // NVLink 5 NVLS: Hopper's figure x NCCL's Blackwell/Hopper NVLS efficiency ratio 0.74 / 0.85.
  CHECK(nv5.nvls_efficiency == Approx(nv4.nvls_efficiency * 0.74 / 0.85).epsilon(0.002));
  // NVLink 5 copies: 679.6 GB/s ring busbw of 900 on 4 GB200.
  CHECK(nv5.copy_efficiency == Approx(679.6 / 900.0).epsilon(0.002));
  CHECK(rack.copy_efficiency == nv5.copy_efficiency);
  CHECK(rack.nvls_efficiency < nv5.nvls_efficiency);
  CHECK(catalog.interconnect("nvlink3").nvls_efficiency == 0.0);  // A100: no NVLink SHARP
  // Which systems use which: HGX baseboards nvlink5, NVL72 trays the rack's NVLink Switch System.
  CHECK(catalog.instance("p6-b200.48xlarge").nvlink == "nvlink5");
  CHECK(catalog.instance("dgx-b300").nvlink == "nvlink5");
  for (const char* tray : {"p6e-gb200.36xlarge", "p6e-gb300.36xlarge", "dgx-gb200-tray", "dgx-gb300-tray"}) {
    INFO(tray);
    CHECK(catalog.instance(tray).nvlink == "nvlink5-nvl72");
  }
}

TEST_CASE("large NVLS all_reduce on 8 B200 tends to the NVLink 5 NVLS bound", "[collectives][blackwell]") {
  auto b200 = fmsim::test::shipped_cluster("p6-b200-64node.json");
  const auto layout = layout_of(b200, 8);
  const double eff = fmsim::test::catalog().interconnect("nvlink5").nvls_efficiency;
  // busbw = 2 (g-1)/g x algbw, algbw = eff x 900 GB/s / (1 + 1/g); at 64 GiB latency and fill are < 0.1 %.
  const double bound_GBps = 2.0 * 7 / 8 * eff * 900.0 / (1.0 + 1.0 / 8);
  const auto row = row_at(layout, Op::all_reduce, 64 * kGiB);
  CHECK(row.algorithm == Algorithm::nvls);
  CHECK(row.busbw_GBps == Approx(bound_GBps).epsilon(0.002));
  CHECK(row.busbw_GBps <= bound_GBps);
  // A ring on the same GPUs is bound by the copy efficiency: busbw -> eff_copy x 900.
  const auto ring = row_at(layout, Op::all_reduce, 64 * kGiB, Algorithm::ring, Protocol::simple);
  CHECK(ring.busbw_GBps == Approx(fmsim::test::catalog().interconnect("nvlink5").copy_efficiency * 900.0).epsilon(0.002));
}

TEST_CASE("NVLS fills one loop of ranks x channels x 128 KiB", "[collectives][blackwell]") {
  auto rack = fmsim::test::shipped_cluster("dgx-gb200-nvl72-8rack-ib.json");
  const auto layout = layout_of(rack, 72);
  REQUIRE(layout.islands == 1);
  const auto& nvls = algorithm_model(Algorithm::nvls);
  const auto shape = nvls.shape(Op::all_reduce, layout);
  const double loop = 72.0 * 24 * 131072;  // 24 NVLS channels on SM100 in one NVL domain
  CHECK(shape.fill_loop_bytes == Approx(loop));
  // t = operation overhead + NVLS latency (25 us) + (S + F S / (S + F)) x (1 + 1/72) / (eff x 900 GB/s).
  const double eff = fmsim::test::catalog().interconnect("nvlink5-nvl72").nvls_efficiency;
  for (double bytes : {512 * kMiB, 8 * kGiB}) {
    const double per_byte_s = (1.0 + 1.0 / 72) / (eff * 900e9);
    const double expected_s = tuning::kOperationOverhead_s + 25 * kUs + (bytes + loop * bytes / (bytes + loop)) * per_byte_s;
    const auto row = row_at(layout, Op::all_reduce, bytes, Algorithm::nvls);
    INFO(bytes);
    CHECK(row.time_s == Approx(expected_s).epsilon(1e-6));
  }
  // The fill tends to the message itself for small messages (the pipeline never fills): twice the wire time.
  const double small = 4096;
  const auto e = estimate({&nvls, Protocol::simple}, Op::all_reduce, layout, small, 0.0);
  CHECK(e.fill_s == Approx(e.bandwidth_s * loop / (small + loop)).epsilon(1e-9));
  // 8 H100: 8 x 16 channels x 128 KiB = 16 MiB.
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  CHECK(nvls.shape(Op::all_reduce, layout_of(p5, 8)).fill_loop_bytes == Approx(16 * kMiB));
}

TEST_CASE("several NVL72 racks: NVLS-tree over the scale-out network, never faster than one rack", "[collectives][blackwell]") {
  auto ib = fmsim::test::shipped_cluster("dgx-gb200-nvl72-8rack-ib.json");
  auto efa = fmsim::test::shipped_cluster("p6e-gb200-4x72.json");
  for (const auto* cluster : {&ib, &efa}) {
    const auto one = layout_of(*cluster, 72);
    const auto two = layout_of(*cluster, 144);
    REQUIRE(two.islands == 2);
    REQUIRE(two.ranks_per_island == 72);
    // NVLS kernels across domains run 32 channels on SM100: the loop is 72 x 32 x 128 KiB.
    CHECK(algorithm_model(Algorithm::nvls_tree).shape(Op::all_reduce, two).fill_loop_bytes == Approx(72.0 * 32 * 131072));
    for (double bytes : {64 * kMiB, 1 * kGiB, 8 * kGiB}) {
      const auto inside = row_at(one, Op::all_reduce, bytes);
      const auto across = row_at(two, Op::all_reduce, bytes);
      INFO(bytes << " " << to_string(across.algorithm));
      CHECK(inside.algorithm == Algorithm::nvls);
      // Each rack still moves S (1 + 1/72) per GPU over NVLink; the network adds to it.
      CHECK(across.time_s >= inside.time_s);
    }
    // Large messages: NVLS-tree (a tree between racks on each GPU's shard) is the tuner's choice, and a
    // hierarchical ring is still possible when forced.
    CHECK(row_at(two, Op::all_reduce, 8 * kGiB).algorithm == Algorithm::nvls_tree);
    CHECK(row_at(two, Op::all_reduce, 8 * kGiB, Algorithm::hierarchical).time_s > 0);
  }
}

TEST_CASE("small-message floors: NCCL's latency plus the per-operation overhead", "[collectives][latency]") {
  // 4 GB200 in one domain, ring/LL: base 6.6 us + 2 (4 - 1) NVLink steps x 0.6 us + overhead.
  auto rack = fmsim::test::shipped_cluster("dgx-gb200-nvl72-8rack-ib.json");
  const auto four = layout_of(rack, 4);
  const auto ring = row_at(four, Op::all_reduce, 8, Algorithm::ring, Protocol::ll);
  CHECK(ring.latency_s == Approx(6.6 * kUs + 6 * 0.6 * kUs + tuning::kOperationOverhead_s));
  // NVLS inside a node: NCCL's 25 us + overhead, the H200 floor of 29.9-31.2 us.
  auto p5en = fmsim::test::shipped_cluster("p5en-128node.json");
  CHECK(row_at(layout_of(p5en, 8), Op::all_reduce, 1024, Algorithm::nvls).latency_s == Approx(30 * kUs));
  // 2 x p4de (EFA v1), tree/LL: base 6.8 + 2 (7 x 0.6 + 1 x (5.0 + alpha)) + overhead, alpha from the catalog.
  auto p4de = fmsim::test::shipped_cluster("p4de-2node.json");
  const double alpha = fmsim::test::catalog().interconnect("efa-v1").message_latency_s;
  const auto tree = row_at(layout_of(p4de, 16), Op::all_reduce, 8);
  CHECK(tree.algorithm == Algorithm::tree);
  CHECK(tree.latency_s == Approx(6.8 * kUs + 2 * (7 * 0.6 * kUs + 5.0 * kUs + alpha) + tuning::kOperationOverhead_s));
  // alpha is the one that puts this floor at the measured 161-164 us (coll-aws-p4de-2node-allreduce-8B-2GB).
  CHECK(tree.time_s == Approx(161.5 * kUs).epsilon(0.02));
}

TEST_CASE("an NVLink generation without its efficiency, or with one above 1, is refused", "[collectives][blackwell]") {
  using Catch::Matchers::Contains;
  auto dir = fmsim::test::write_temp("{}", "placeholder").parent_path();
  for (const char* file : {"gpus.json", "instances.json", "networks.json", "storage.json"}) {
    std::filesystem::copy_file(std::filesystem::path(FMSIM_TEST_CATALOG_DIR) / file, dir / file);
  }
  const auto original = fmsim::config::load_json_file(dir / "networks.json").root;
  auto doc = original;
  doc["interconnects"]["nvlink5"].erase("copy_efficiency");
  std::ofstream(dir / "networks.json") << doc.dump();
  CHECK_THROWS_WITH(fmsim::hardware::Catalog::load(dir), Contains("nvlink5") && Contains("copy_efficiency"));
  doc = original;
  doc["interconnects"]["nvlink5-nvl72"]["nvls_efficiency"]["value"] = 1.4;
  std::ofstream(dir / "networks.json") << doc.dump();
  CHECK_THROWS_WITH(fmsim::hardware::Catalog::load(dir), Contains("nvls_efficiency") && Contains("(0, 1]"));
  // A scale-out network has no NVLink efficiency: the key is unknown there.
  doc = original;
  doc["interconnects"]["efa-v2"]["copy_efficiency"] = {{"value", 0.5}, {"source", "x"}};
  std::ofstream(dir / "networks.json") << doc.dump();
  CHECK_THROWS_WITH(fmsim::hardware::Catalog::load(dir), Contains("copy_efficiency"));
}

TEST_CASE("the per-operation overhead is part of fmsim collective, not of the replays' collective cost", "[collectives][latency]") {
  auto p5en = fmsim::test::shipped_cluster("p5en-128node.json");
  const auto layout = layout_of(p5en, 4);
  for (double bytes : {8.0, 1048576.0, 1073741824.0}) {
    const auto row = row_at(layout, Op::all_reduce, bytes);
    const auto cost = collective_cost(layout, Op::all_reduce, bytes);
    INFO(bytes);
    CHECK(row.algorithm == cost.algorithm);
    CHECK(row.time_s == Approx(cost.time_s + tuning::kOperationOverhead_s).epsilon(1e-9));
  }
}

TEST_CASE("NVLS needs its efficiency in the catalog: without it the tuner leaves NVLS out and says why", "[collectives][blackwell]") {
  using Catch::Matchers::Contains;
  auto dir = fmsim::test::write_temp("{}", "placeholder").parent_path();
  for (const char* file : {"gpus.json", "instances.json", "networks.json", "storage.json"}) {
    std::filesystem::copy_file(std::filesystem::path(FMSIM_TEST_CATALOG_DIR) / file, dir / file);
  }
  auto doc = fmsim::config::load_json_file(dir / "networks.json").root;
  doc["interconnects"]["nvlink4"].erase("nvls_efficiency");
  std::ofstream(dir / "networks.json") << doc.dump();
  const auto catalog = fmsim::hardware::Catalog::load(dir);
  const auto cluster = fmsim::topology::build_cluster_graph(
      fmsim::topology::load_cluster(fmsim::test::source_dir() / "topologies" / "p5-2node.json", catalog));
  const auto layout = layout_of(cluster, 8);
  CHECK(row_at(layout, Op::all_reduce, 4 * kGiB).algorithm == Algorithm::ring);
  CHECK_THROWS_WITH(row_at(layout, Op::all_reduce, 4 * kGiB, Algorithm::nvls), Contains("no nvls_efficiency"));
}

TEST_CASE("a communicator spans NVLink domains evenly or make_layout refuses it", "[collectives][blackwell]") {
  // 8 racks of 72 GB200: the GPUs of one rack, or 8 of each of two racks, are even; 72 of one rack and 1 of
  // the next are not, and the predicate says so before make_layout would throw.
  auto rack = fmsim::test::shipped_cluster("dgx-gb200-nvl72-8rack-ib.json");
  std::vector<int> one_rack(72), two_racks, uneven(73);
  for (int g = 0; g < 72; ++g) one_rack[g] = g;
  for (int g = 0; g < 8; ++g) two_racks.insert(two_racks.end(), {g, 72 + g});
  for (int g = 0; g < 73; ++g) uneven[g] = g;
  CHECK(fmsim::collectives::spans_domains_evenly(rack, one_rack));
  CHECK(fmsim::collectives::spans_domains_evenly(rack, two_racks));
  CHECK_FALSE(fmsim::collectives::spans_domains_evenly(rack, uneven));
  CHECK_NOTHROW(make_layout(rack, two_racks));
  CHECK_THROWS_WITH(make_layout(rack, uneven), Catch::Contains("unevenly over NVLink domains"));
}
