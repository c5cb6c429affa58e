// MXFP8's block-scaled GEMMs against per-tensor FP8: the trace marks them, the replay prices them at the
// GPU's gemm_mxfp8_rate, the catalog figure is checked, and Blackwell Ultra's GEMM efficiency reproduces
// Transformer Engine's published B300 GEMM timings (benchmarks/calibration/te_gemm_b300.py).
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "fmsim/compute/compute_model.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/scenario.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;
using Catch::Matchers::Contains;

namespace {

Scenario fp8_scenario(const std::string& recipe) {
  nlohmann::json doc = {{"cluster", {{"instance_type", "dgx-b200"}, {"nodes", 1}}},
                        {"model", {{"base", "llama3-8b"}, {"num_hidden_layers", 2}}},
                        {"parallelism", {{"global_batch_size", 8}}},
                        {"training", {{"precision", "fp8"}, {"fp8_recipe", recipe}}}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

int block_scaled_gemms(const Trace& trace) {
  int n = 0;
  for (const auto& node : trace.nodes) n += node.kernel == Kernel::gemm && node.fp8_block_scaled;
  return n;
}

int fp8_gemms(const Trace& trace) {
  int n = 0;
  for (const auto& node : trace.nodes) n += node.kernel == Kernel::gemm && node.fp8;
  return n;
}

}  // namespace

TEST_CASE("MXFP8 GEMMs are block-scaled in the trace; per-tensor FP8 ones are not", "[lowprecision][mxfp8]") {
  const Trace mx = build_trace(fp8_scenario("mxfp8"), {0, 1, 2, 3, 4, 5, 6, 7}, false);
  const Trace cs = build_trace(fp8_scenario("tensorwise"), {0, 1, 2, 3, 4, 5, 6, 7}, false);
  REQUIRE(fp8_gemms(mx) > 0);
  CHECK(block_scaled_gemms(mx) == fp8_gemms(mx));  // forward, data- and weight-gradient GEMMs alike
  CHECK(block_scaled_gemms(cs) == 0);
}

TEST_CASE("a block-scaled GEMM runs at the GPU's gemm_mxfp8_rate of a per-tensor FP8 one", "[lowprecision][mxfp8]") {
  const hardware::GpuSpec gpu = test::catalog().gpu("GB300");
  REQUIRE(gpu.gemm_mxfp8_rate == Approx(0.951));
  TraceNode node;
  node.kernel = Kernel::gemm;
  node.m = node.n = node.k = 8192;
  node.fp8 = true;
  node.bytes = 1e9;  // the quantization of its input: memory-bound, not scaled
  const double memory = compute::ComputeModel(gpu).memory_s(node.bytes);
  const double per_tensor = training::compute_node_s(node, gpu);
  node.fp8_block_scaled = true;
  CHECK(training::compute_node_s(node, gpu) - memory == Approx((per_tensor - memory) / 0.951));
  // Hopper has no MXFP8: its figure stays 1.
  CHECK(test::catalog().gpu("H100-SXM").gemm_mxfp8_rate == 1.0);
}

TEST_CASE("Blackwell Ultra's GEMM efficiency reproduces Transformer Engine's B300 GEMM timings", "[lowprecision][mxfp8]") {
  // TransformerEngine docs/examples/gemm_profiling/gemm_profiling.rst, B300, pre-quantized: the 12 GEMMs of a
  // layer (M = 15,872 tokens, hidden 4096, FFN 16384) take 6.812 ms in per-tensor FP8 and 7.161 ms in MXFP8.
  const compute::ComputeModel b300(test::catalog().gpu("B300"));
  const double m = 15872, h = 4096, f = 16384;
  const double forward[4][3] = {{m, 3 * h, h}, {m, h, h}, {m, f, h}, {m, h, f}};
  double fp8_s = 0;
  for (const auto& g : forward) {
    fp8_s += b300.gemm_s({g[0], g[1], g[2]}, compute::MathPrecision::fp8);  // forward
    fp8_s += b300.gemm_s({g[0], g[2], g[1]}, compute::MathPrecision::fp8);  // data gradient
    fp8_s += b300.gemm_s({g[1], g[2], g[0]}, compute::MathPrecision::fp8);  // weight gradient
  }
  const double clock = test::catalog().gpu("B300").sustained_clock_fraction;  // the benchmark ran one GPU
  CHECK(fp8_s * clock == Approx(6.812e-3).epsilon(0.01));
  CHECK(fp8_s * clock / test::catalog().gpu("B300").gemm_mxfp8_rate == Approx(7.161e-3).epsilon(0.01));
}

TEST_CASE("gemm_mxfp8_rate is a fraction, and only for GPUs with MXFP8 tensor cores", "[catalog][mxfp8]") {
  auto dir = test::write_temp("{}", "placeholder").parent_path();
  for (const char* file : {"gpus.json", "instances.json", "networks.json", "storage.json"}) {
    std::filesystem::copy_file(std::filesystem::path(FMSIM_TEST_CATALOG_DIR) / file, dir / file, std::filesystem::copy_options::overwrite_existing);
  }
  const auto original = config::load_json_file(dir / "gpus.json").root;
  auto doc = original;
  doc["gpus"]["H100-SXM"]["gemm_mxfp8_rate"] = {{"value", 0.95}, {"source", "x"}};
  std::ofstream(dir / "gpus.json") << doc.dump();
  CHECK_THROWS_WITH(hardware::Catalog::load(dir), Contains("gemm_mxfp8_rate") && Contains("sm_version 100"));
  doc = original;
  doc["gpus"]["B200"]["gemm_mxfp8_rate"]["value"] = 1.2;
  std::ofstream(dir / "gpus.json") << doc.dump();
  CHECK_THROWS_WITH(hardware::Catalog::load(dir), Contains("gemm_mxfp8_rate"));
}
