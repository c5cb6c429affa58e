// Serving engines' MoE kernels (issue 26, moe_backend.hpp): the fixed cost per MoE block and the weight
// streaming floor of TensorRT-LLM's CUTLASS and TRTLLM-Gen backends and vLLM's Triton kernel, against the
// published module latencies they come from; engine defaults; refusals.
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/inference/moe_backend.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::inference;

namespace {

ServeScenario load(const std::string& topology, const std::string& model, const std::string& serving) {
  const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / topology).string() +
                           R"(", "nodes": 1}, "model": ")" + model + R"(", "serving": )" + serving +
                           R"(, "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
  return load_serve_scenario(test::write_temp(json, "serve.json"), {}, test::catalog());
}

BatchShape decode(int sequences, double context) {
  BatchShape b;
  b.decode_tokens = sequences;
  b.decode_context_tokens = context * sequences;
  b.sampled_rows = sequences;
  return b;
}

BatchShape prefill(int tokens) {
  BatchShape b;
  b.prefill_tokens = tokens;
  b.prefill_attention_pairs = static_cast<double>(tokens) * tokens / 2;
  b.prefill_sequences = 1;
  b.sampled_rows = 1;
  return b;
}

/// The GEMM part of one iteration of Qwen3-30B-A3B (48 MoE layers) on one GPU with a backend.
double gemm_s(const std::string& topology, const std::string& backend, const BatchShape& batch, const std::string& precision = "fp8") {
  const auto s = load(topology, "qwen3-30b-a3b", R"({"engine": "tensorrt_llm", "max_num_batched_tokens": 16384, "precision": ")" + precision +
                                                           R"(", "moe_backend": ")" + backend + R"("})");
  const ServingPlan plan(s);
  return plan.model(0).breakdown(batch).gemm_s;
}

}  // namespace

TEST_CASE("a MoE backend adds its fixed cost, slows its GEMMs' tiles and floors them at its weight-streaming rate") {
  const MoeBackendCosts cutlass = moe_backend_costs(MoeBackend::cutlass);
  const double w = 793e6, bw = 8e12;
  // Weight-bound: the stream floor binds.
  const compute::GemmParts small{10e-6, 20e-6, 3e-6};
  CHECK(moe_grouped_gemm_s(cutlass, small, w, bw) == Approx(3e-6 + w / (bw * cutlass.weight_stream_fraction)));
  // Compute-bound: the tiles at the backend's slowdown bind.
  const compute::GemmParts big{5e-3, 1e-3, 3e-6};
  CHECK(moe_grouped_gemm_s(cutlass, big, w, bw) == Approx(3e-6 + cutlass.gemm_slowdown * 5e-3));
  // A block: the fixed cost once, each GEMM on its own.
  CHECK(moe_experts_s(cutlass, {small, big}, {w, w}, bw) ==
        Approx(cutlass.fixed_s + moe_grouped_gemm_s(cutlass, small, w, bw) + moe_grouped_gemm_s(cutlass, big, w, bw)));
  // The ideal grouped GEMM is the dense model's: max(compute, memory) + overhead.
  CHECK(moe_experts_s(moe_backend_costs(MoeBackend::grouped_gemm), {small}, {w}, bw) == Approx(small.total_s()));
  // More bandwidth never slows the block; nothing to run costs nothing.
  CHECK(moe_experts_s(cutlass, {small}, {w}, 2 * bw) < moe_experts_s(cutlass, {small}, {w}, bw));
  CHECK(moe_experts_s(cutlass, {compute::GemmParts{}}, {0.0}, bw) == 0.0);
}

TEST_CASE("the backends reproduce TensorRT-LLM's published B200 module latencies (blog 24, DeepSeek-V3 at TP 8, NVFP4)") {
  // Per-rank routed experts: 256 x 3 x 7168 x 256 NVFP4 values with one FP8 scale per 16.
  const double bytes_per_expert = 3.0 * 7168 * 256 * (0.5 + 1.0 / 16);
  const double b200_Bps = test::catalog().gpu("B200").hbm_bandwidth_Bps;
  // One token: 8 active experts; 384 tokens: all 256. The GEMMs' own time is negligible beside the stream.
  struct Row { MoeBackend backend; double experts; double measured_s; };
  for (const Row& row : {Row{MoeBackend::cutlass, 8, 96.77e-6}, Row{MoeBackend::cutlass, 256, 368.12e-6}, Row{MoeBackend::cutlass, 256, 351.98e-6},
                         Row{MoeBackend::trtllm_gen, 8, 26.78e-6}, Row{MoeBackend::trtllm_gen, 256, 186.92e-6}, Row{MoeBackend::trtllm_gen, 256, 172.17e-6}}) {
    const compute::GemmParts negligible{0.1e-6, 0.1e-6, 0};
    const double modelled = moe_experts_s(moe_backend_costs(row.backend), {negligible}, {row.experts * bytes_per_expert}, b200_Bps);
    CHECK(modelled == Approx(row.measured_s).epsilon(0.07));
  }
}

TEST_CASE("engines default to their own MoE kernels; the scenario may name another") {
  const auto trtllm = load("p5-16node.json", "qwen3-30b-a3b", R"({"engine": "tensorrt_llm"})");
  CHECK(trtllm.pools.at(0).engine.moe_backend == MoeBackend::cutlass);
  const auto vllm = load("p5-16node.json", "qwen3-30b-a3b", R"({"engine": "vllm"})");
  CHECK(vllm.pools.at(0).engine.moe_backend == MoeBackend::triton);
  const auto named = load("p5-16node.json", "qwen3-30b-a3b", R"({"engine": "vllm", "moe_backend": "grouped_gemm"})");
  CHECK(named.pools.at(0).engine.moe_backend == MoeBackend::grouped_gemm);
}

TEST_CASE("a decode iteration pays each backend's fixed cost once per MoE block, and the slower stream where weights bind") {
  // Qwen3-30B-A3B on one H100, FP8, batch 1: 8 of 128 experts active per layer, weight-bound.
  const BatchShape one = decode(1, 1000);
  const double ideal = gemm_s("p5-16node.json", "grouped_gemm", one);
  const double cutlass = gemm_s("p5-16node.json", "cutlass", one);
  const double triton = gemm_s("p5-16node.json", "triton", one);
  const int moe_layers = 48;
  CHECK(cutlass - ideal >= moe_layers * kCutlassMoeFixed_s);
  CHECK(triton - ideal >= moe_layers * kTritonMoeFixed_s);
  // Batch 256: every expert active (604 MB of FP8 weights per layer), the CUTLASS stream at 0.37 of HBM binds:
  // the iteration's GEMMs take at least 48 x (fixed + stream) and at most that plus the ideal backend's GEMMs.
  const double h100_Bps = test::catalog().gpu("H100-SXM").hbm_bandwidth_Bps;
  const double per_layer_bytes = 128 * 3.0 * 2048 * 768;
  const double floor = moe_layers * (kCutlassMoeFixed_s + per_layer_bytes / (h100_Bps * kCutlassMoeWeightStreamFraction));
  const double full = gemm_s("p5-16node.json", "cutlass", decode(256, 1000));
  CHECK(full >= floor);
  CHECK(full <= floor + gemm_s("p5-16node.json", "grouped_gemm", decode(256, 1000)));
}

TEST_CASE("TRTLLM-Gen streams faster than CUTLASS and never costs more, at any batch on Blackwell") {
  for (const BatchShape& batch : {decode(1, 500), decode(64, 2000), decode(1024, 2000), prefill(8192)}) {
    CHECK(gemm_s("p6-b200-64node.json", "trtllm_gen", batch, "fp4") <= gemm_s("p6-b200-64node.json", "cutlass", batch, "fp4"));
    CHECK(gemm_s("p6-b200-64node.json", "grouped_gemm", batch, "fp4") <= gemm_s("p6-b200-64node.json", "trtllm_gen", batch, "fp4"));
  }
  // Large prefill is compute-bound: the CUTLASS GEMMs take their slowdown over the ideal ones, TRTLLM-Gen
  // less; the iteration's other GEMMs are the same.
  const double ideal = gemm_s("p6-b200-64node.json", "grouped_gemm", prefill(16384), "fp4");
  const double cutlass = gemm_s("p6-b200-64node.json", "cutlass", prefill(16384), "fp4");
  const double gen = gemm_s("p6-b200-64node.json", "trtllm_gen", prefill(16384), "fp4");
  // (Not in the ratio of the slowdowns: the ideal FC2, with its BF16 output over 128 experts, is bound
  // by HBM rather than by its tiles.)
  const double cutlass_gemms = cutlass - ideal - 48 * kCutlassMoeFixed_s, gen_gemms = gen - ideal - 48 * kTrtllmGenMoeFixed_s;
  CHECK(gen_gemms > 0);
  CHECK(cutlass_gemms > 2 * gen_gemms);
}

TEST_CASE("a MoE backend the GPU cannot run, or an unknown one, is refused with the reason") {
  try {
    const auto s = load("p5-16node.json", "qwen3-30b-a3b", R"({"engine": "tensorrt_llm", "moe_backend": "trtllm_gen"})");
    FAIL("TRTLLM-Gen on H100 was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("Blackwell") && Catch::Contains("moe_backend") && Catch::Contains("SM90"));
  }
  try {
    const auto s = load("p5-16node.json", "qwen3-30b-a3b", R"({"moe_backend": "marlin"})");
    FAIL("an unknown backend was accepted");
  } catch (const InputError& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("moe_backend") && Catch::Contains("cutlass") && Catch::Contains("marlin"));
  }
  // A dense model has no MoE block: any backend is accepted and changes nothing.
  const auto dense = load("p5-16node.json", "llama3.1-8b", R"({"engine": "tensorrt_llm", "moe_backend": "trtllm_gen"})");
  CHECK(dense.pools.at(0).engine.moe_backend == MoeBackend::trtllm_gen);
}
