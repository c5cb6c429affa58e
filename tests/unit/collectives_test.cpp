#include <catch2/catch.hpp>

#include "fmsim/collectives/benchmark.hpp"
#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/topology/placement.hpp"
#include "test_support.hpp"

using namespace fmsim::collectives;
using fmsim::topology::PlacementPolicy;
using Catch::Matchers::Contains;

namespace {

CommLayout layout_of(const fmsim::topology::ClusterGraph& cluster, int gpus) {
  return make_layout(cluster, fmsim::topology::place_ranks(cluster, gpus, PlacementPolicy::packed));
}

BenchmarkResult sweep(const CommLayout& layout, Op op, std::optional<Algorithm> algorithm = std::nullopt,
                      std::optional<Protocol> protocol = std::nullopt) {
  BenchmarkRequest request;
  request.op = op;
  request.algorithm = algorithm;
  request.protocol = protocol;
  request.sizes_bytes = size_sweep(1024, 16.0 * 1024 * 1024 * 1024, 4);
  return run_benchmark(layout, request);
}

}  // namespace

TEST_CASE("nccl-tests bus bandwidth factors", "[collectives]") {
  CHECK(busbw_factor(Op::all_reduce, 16) == Approx(2.0 * 15 / 16));
  CHECK(busbw_factor(Op::all_gather, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(Op::alltoall, 8) == Approx(7.0 / 8));
  CHECK(busbw_factor(Op::broadcast, 8) == 1.0);
}

TEST_CASE("size sweeps follow nccl-tests and reject bad ranges", "[collectives]") {
  auto sizes = size_sweep(8, 64, 2);
  CHECK(sizes == std::vector<double>{8, 16, 32, 64});
  CHECK_THROWS_AS(size_sweep(64, 8, 2), fmsim::InputError);
  CHECK_THROWS_AS(size_sweep(8, 64, 1), fmsim::InputError);
}

TEST_CASE("a layout groups ranks by NVLink domain", "[collectives]") {
  auto gb200 = fmsim::test::shipped_cluster("p6e-gb200-4x72.json");
  auto layout = layout_of(gb200, 288);
  CHECK(layout.islands == 4);
  CHECK(layout.ranks_per_island == 72);
  CHECK(layout.nodes_per_island == 18);
  auto p5 = fmsim::test::shipped_cluster("p5-16node.json");
  CHECK(layout_of(p5, 16).islands == 2);
  // 12 GPUs would put 8 in one domain and 4 in the next.
  CHECK_THROWS_WITH(layout_of(p5, 12), Contains("unevenly"));
}

TEST_CASE("ring traffic per rank is the textbook volume", "[collectives]") {
  auto p5 = fmsim::test::shipped_cluster("p5-16node.json");
  auto layout = layout_of(p5, 64);
  const auto& ring = algorithm_model(Algorithm::ring);
  CHECK(ring.shape(Op::all_reduce, layout).nvlink_bytes_per_rank == Approx(2.0 * 63 / 64));
  CHECK(ring.shape(Op::all_gather, layout).net_bytes_per_island == Approx(63.0 / 64));
  // Pairwise alltoall: each island sends everything not addressed to itself.
  const auto& pairwise = algorithm_model(Algorithm::pairwise);
  CHECK(pairwise.shape(Op::alltoall, layout).net_bytes_per_island == Approx(8.0 * 56 / 64));
}

TEST_CASE("a double binary tree is as slow as its busiest node", "[collectives]") {
  // Each tree carries S/2 up and back down, so a node moves S/2 per tree edge it touches. Two nodes: each
  // is root in one tree and leaf in the other (1 edge + 1 edge: S). Three: the trees are chains
  // (0-2-1 and its shift 1-0-2), and the middle of one is an end of the other (2 + 1 edges: 1.5 S). From
  // four up some node is inner with two children in one tree and a leaf in the other (3 + 1: 2 S), where
  // the average over nodes, 2 (I-1)/I S, stays below 2 S.
  CHECK(double_binary_tree_bytes_per_island(2) == Approx(1.0));
  CHECK(double_binary_tree_bytes_per_island(3) == Approx(1.5));
  for (int islands : {4, 5, 8, 16, 31, 64, 128, 1000}) {
    INFO(islands);
    CHECK(double_binary_tree_bytes_per_island(islands) == Approx(2.0));
    CHECK(double_binary_tree_bytes_per_island(islands) > 2.0 * (islands - 1) / islands);
  }
  auto p5 = fmsim::test::shipped_cluster("p5-16node.json");
  CHECK(algorithm_model(Algorithm::nvls_tree).shape(Op::all_reduce, layout_of(p5, 64)).net_bytes_per_island == Approx(2.0));
  CHECK(algorithm_model(Algorithm::tree).shape(Op::all_reduce, layout_of(p5, 16)).net_bytes_per_island == Approx(1.0));
}

TEST_CASE("hardware limits become clear errors", "[collectives]") {
  auto a100 = fmsim::test::shipped_cluster("p4de-2node.json");
  auto single = layout_of(a100, 8);
  CHECK_THROWS_WITH(sweep(single, Op::all_reduce, Algorithm::nvls), Contains("NVLink SHARP"));
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  CHECK_THROWS_WITH(sweep(layout_of(p5, 16), Op::alltoall, Algorithm::ring), Contains("ring does not implement alltoall"));
  CHECK_THROWS_WITH(sweep(layout_of(p5, 8), Op::all_reduce, Algorithm::tree), Contains("more than one NVLink domain"));
}

TEST_CASE("time grows with size and busbw stays under the bottleneck", "[collectives]") {
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  auto two_nodes = layout_of(p5, 16);
  auto one_node = layout_of(p5, 8);
  for (Op op : {Op::all_reduce, Op::all_gather, Op::reduce_scatter, Op::alltoall, Op::broadcast, Op::sendrecv}) {
    for (const auto* layout : {&two_nodes, &one_node}) {
      INFO(to_string(op) << " on " << layout->ranks << " GPUs");
      auto result = sweep(*layout, op);
      for (std::size_t i = 1; i < result.rows.size(); ++i) CHECK(result.rows[i].time_s >= result.rows[i - 1].time_s);
      for (const auto& row : result.rows) CHECK(row.time_s > 0);
    }
  }
  // A ring's busbw is bounded by its slowest hop: 400 GB/s of EFA per node, 450 GB/s of NVLink per GPU.
  for (const auto& row : sweep(two_nodes, Op::all_reduce, Algorithm::ring).rows) CHECK(row.busbw_GBps <= 400.0);
  for (const auto& row : sweep(one_node, Op::all_gather, Algorithm::ring).rows) CHECK(row.busbw_GBps <= 450.0);
  // NVLS reduces in the switch: its all_reduce busbw may pass the NVLink rate, never 2x it.
  for (const auto& row : sweep(one_node, Op::all_reduce, Algorithm::nvls).rows) CHECK(row.busbw_GBps <= 900.0);
}

TEST_CASE("NVLS-tree network chunks each pay a fixed cost", "[collectives]") {
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  const auto layout = layout_of(p5, 16);
  // A 512 KiB chunk on a p5 GPU's 4 x 100 Gb/s rail at 0.82 of line rate, plus 4 us.
  const double wire_s = 524288.0 / (50e9 * tuning::kNetworkEfficiency);
  const double factor = (wire_s + tuning::kNvlsTreeNetChunkOverhead_s) / wire_s;
  const auto nvls_tree = algorithm_model(Algorithm::nvls_tree).shape(Op::all_reduce, layout);
  CHECK(net_chunk_factor(nvls_tree, layout) == Approx(factor));
  // The source of the constant: 64 KiB chunks reach 0.371 of the busbw of 512 KiB ones (nccl PR #1112).
  const double small_s = 65536.0 / (50e9 * tuning::kNetworkEfficiency);
  CHECK((small_s / (small_s + tuning::kNvlsTreeNetChunkOverhead_s)) / (wire_s / (wire_s + tuning::kNvlsTreeNetChunkOverhead_s)) ==
        Approx(0.371).epsilon(0.03));
  // Rings pay none (their 0.82 share is measured with their own chunks).
  CHECK(net_chunk_factor(algorithm_model(Algorithm::ring).shape(Op::all_reduce, layout), layout) == 1.0);
  // 16 GiB over two nodes: each GPU sends S/8 at the stretched rate and that bounds the time.
  auto rows = sweep(layout, Op::all_reduce, Algorithm::nvls_tree).rows;
  const double network_bound_s = rows.back().size_bytes / 8 / (50e9 * tuning::kNetworkEfficiency) * factor;
  CHECK(rows.back().time_s == Approx(network_bound_s).epsilon(0.01));
}

TEST_CASE("large ring all_reduce reaches the calibrated bottleneck", "[collectives]") {
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  auto rows = sweep(layout_of(p5, 16), Op::all_reduce, Algorithm::ring, Protocol::simple).rows;
  // 16 GiB: latency is negligible, so busbw = the EFA share NCCL achieves, 0.82 x 400 GB/s.
  CHECK(rows.back().busbw_GBps == Approx(fmsim::collectives::tuning::kNetworkEfficiency * 400.0).epsilon(0.01));
}

TEST_CASE("the tuner picks NVLS only where it pays, as measured", "[collectives]") {
  // calibration coll-h100-8gpu-nvls-gpu-count-sweep: NVLS helps from 5 GPUs up, not at 2-4.
  auto p5 = fmsim::test::shipped_cluster("p5-2node.json");
  for (int gpus : {2, 3, 4, 5, 6, 7, 8}) {
    BenchmarkRequest request;
    request.sizes_bytes = {4294967296.0};
    auto row = run_benchmark(layout_of(p5, gpus), request).rows.at(0);
    INFO(gpus << " GPUs: " << to_string(row.algorithm));
    CHECK((row.algorithm == Algorithm::nvls) == (gpus >= 5));
  }
}

TEST_CASE("small ring messages keep only some of a p5 GPU's EFA NICs busy", "[collectives]") {
  auto p5 = fmsim::test::shipped_cluster("p5-16node.json");
  auto layout = layout_of(p5, 16);
  REQUIRE(layout.nics_per_gpu == 4);
  REQUIRE(layout.striped_rails);
  // 16 channels over 8 GPUs = 2 messages in flight per GPU; each uses ceil(m / 128 KiB) NICs, rounded
  // down to a divisor of 4 (aws-ofi-nccl threshold scheduler).
  CHECK(tuning::rail_use(layout, 4096, 16) == Approx(0.5));
  CHECK(tuning::rail_use(layout, 131072, 16) == Approx(0.5));
  CHECK(tuning::rail_use(layout, 131073, 16) == Approx(1.0));   // 2 stripes x 2 channels
  CHECK(tuning::rail_use(layout, 4096, 8) == Approx(0.25));     // one channel per GPU, one NIC of four
  CHECK(tuning::rail_use(layout, 393216, 8) == Approx(0.5));    // 3 stripes round down to 2
  CHECK(tuning::rail_use(layout, 524288, 8) == Approx(1.0));
  // Ring all_reduce on 2 nodes: a step of one channel is S / (16 ranks x 16 channels); the network time
  // of a 16 MiB operation is therefore twice that of full striping, and from 64 MiB it is not slowed.
  const auto& ring = algorithm_model(Algorithm::ring);
  CHECK(ring.rail_use(Op::all_reduce, layout, 16.0 * 1024 * 1024) == Approx(0.5));
  CHECK(ring.rail_use(Op::all_reduce, layout, 64.0 * 1024 * 1024) == Approx(1.0));
  // One NIC per GPU (DGX H100 on InfiniBand): nothing to stripe.
  auto dgx = fmsim::test::shipped_cluster("dgx-h100-8node-ib.json");
  auto ib = layout_of(dgx, 16);
  CHECK_FALSE(ib.striped_rails);
  CHECK(tuning::rail_use(ib, 4096, 16) == 1.0);
}
