// FP4 training (NVFP4 / MXFP4): quantization bytes, memory, GEMM rates and the checks, against closed forms
// and the GB200 cuBLASLt FP4 microbenchmark (no simulation here).
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/workload/low_precision.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/scenario.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

Scenario fp4_scenario(const std::string& instance, const nlohmann::json& training, int layers = 4) {
  nlohmann::json doc = {{"cluster", {{"instance_type", instance}, {"nodes", 1}}},
                        {"model", {{"base", "llama3-8b"}, {"num_hidden_layers", layers}}},
                        {"parallelism", {{"global_batch_size", 16}}},
                        {"training", training}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

std::vector<int> eight_gpus() { return {0, 1, 2, 3, 4, 5, 6, 7}; }

}  // namespace

TEST_CASE("FP4 recipes: quantization traffic, saved inputs and weight copies in closed form", "[lowprecision]") {
  TrainingOptions nvfp4;
  nvfp4.precision = Precision::fp4;
  // E2M1 is half a byte; NVFP4 adds one E4M3 scale per 16 elements, MXFP4 one E8M0 scale per 32.
  const double nv = 0.5 + 1.0 / 16, mx = 0.5 + 1.0 / 32;
  // NVFP4: amax read (2) + cast read (2) + row-wise and column-wise copies with scales.
  CHECK(quantize_bytes_per_element(nvfp4, 100) == Approx(2 + 2 + 2 * nv));
  CHECK(saved_gemm_input_bytes(nvfp4) == Approx(nv));
  CHECK(weight_bytes_per_parameter(nvfp4) == Approx(2 + 2 * nv));
  TrainingOptions mxfp4 = nvfp4;
  mxfp4.fp4_recipe = Fp4Recipe::mxfp4;  // block scales computed in the cast: no amax pass
  CHECK(quantize_bytes_per_element(mxfp4, 100) == Approx(2 + 2 * mx));
  CHECK(saved_gemm_input_bytes(mxfp4) == Approx(mx));
  // FP8 on Hopper: tensorwise 6, delayed 4, MXFP8 4 + 2/32; FP8 parameter gather drops the copy.
  TrainingOptions fp8;
  fp8.precision = Precision::fp8;
  CHECK(quantize_bytes_per_element(fp8, 90) == Approx(6.0));
  // Blackwell's FP8 GEMMs take non-TN layouts: per-tensor FP8 writes no transpose (TE v2.9 quantizer.cpp).
  CHECK(quantize_bytes_per_element(fp8, 100) == Approx(5.0));
  CHECK(quantize_bytes_per_element(fp8, 103) == Approx(5.0));
  TrainingOptions delayed = fp8;
  delayed.fp8_recipe = Fp8Recipe::delayed;
  CHECK(quantize_bytes_per_element(delayed, 90) == Approx(4.0));
  CHECK(quantize_bytes_per_element(delayed, 100) == Approx(3.0));
  TrainingOptions mxfp8 = fp8;
  mxfp8.fp8_recipe = Fp8Recipe::mxfp8;  // row-wise and column-wise copies on every GPU
  CHECK(quantize_bytes_per_element(mxfp8, 100) == Approx(4.0 + 2.0 / 32));
  CHECK(weight_bytes_per_parameter(fp8) == Approx(3.0));
  fp8.fp8_param_gather = true;
  CHECK(weight_bytes_per_parameter(fp8) == Approx(2.0));
  CHECK(param_gather_bytes_per_element(fp8) == 1.0);  // per-tensor FP8 parameters are gathered in FP8
  CHECK(param_gather_bytes_per_element(mxfp8) == 2.0);
  // MXFP8 parameters (Megatron-Bridge's preset): gathered as BF16 through the gradient buffer, cast to both
  // MXFP8 copies once per step (the first micro-batch), never again, whatever the transpose cache says;
  // the weights are the two copies with their scales. BF16 MXFP8 weights are quantized at each pass.
  mxfp8.disable_parameter_transpose_cache = true;
  CHECK(weight_cast_bytes_per_element(mxfp8, 100, false) == Approx(4.0 + 2.0 / 32));
  mxfp8.fp8_param_gather = true;
  CHECK(param_gather_bytes_per_element(mxfp8) == 2.0);
  CHECK(weight_cast_bytes_per_element(mxfp8, 100, true) == Approx(4.0 + 2.0 / 32));
  CHECK(weight_cast_bytes_per_element(mxfp8, 100, false) == 0.0);
  CHECK(weight_bytes_per_parameter(mxfp8) == Approx(2.0 * (1 + 1.0 / 32)));
  mxfp8.fine_tuning.workload = Workload::lora;  // frozen base weights keep their copies
  CHECK(weight_cast_bytes_per_element(mxfp8, 100, true) == 0.0);
  CHECK(precision_peak_flops(nvfp4, test::catalog().gpu("GB200")) == Approx(10e15));
  CHECK(precision_peak_flops(fp8, test::catalog().gpu("GB200")) == Approx(5e15));
}

TEST_CASE("an FP4 GEMM reproduces the GB200 cuBLASLt FP4 microbenchmark", "[lowprecision]") {
  // Calibration hw-azure-nd-gb200-v6-microbench, gemm_fp4_tflops: 16384^3 = 7627.6, 8192^3 = 7535.6.
  hardware::GpuSpec alone = test::catalog().gpu("GB200");
  alone.sustained_clock_fraction = 1.0;  // one GPU at the microbenchmark's clock
  compute::ComputeModel gb200(alone);
  for (const auto& [size, tflops] : std::vector<std::pair<double, double>>{{16384, 7627.6}, {8192, 7535.6}}) {
    const compute::GemmShape shape{size, size, size};
    INFO(size);
    CHECK(shape.flops() / gb200.gemm_s(shape, compute::MathPrecision::fp4) / 1e12 == Approx(tflops).epsilon(0.04));
  }
  // FP4 is faster than FP8 on the same GEMM, and FP8 than BF16.
  const compute::GemmShape big{8192, 8192, 8192};
  CHECK(gb200.gemm_s(big, compute::MathPrecision::fp4) < gb200.gemm_s(big, compute::MathPrecision::fp8));
}

TEST_CASE("FP4 training runs the layers' GEMMs in FP4 on Blackwell and is refused on Hopper", "[lowprecision]") {
  const nlohmann::json nvfp4{{"seq_length", 2048}, {"precision", "fp4"}, {"first_last_layers_bf16", true},
                             {"num_layers_at_start_in_bf16", 0}, {"num_layers_at_end_in_bf16", 1}};
  const Scenario s = fp4_scenario("dgx-b200", nvfp4);
  const Trace trace = build_trace(s, eight_gpus(), false);
  int fp4_qkv = 0, bf16_qkv = 0, fp8_gemms = 0;
  double fp4_qkv_bytes = 0;
  for (const auto& n : trace.nodes) {
    if (n.rank != 0 || n.kernel != Kernel::gemm) continue;
    fp8_gemms += n.fp8;
    if (n.name != "qkv") continue;
    if (n.fp4) {
      ++fp4_qkv;
      fp4_qkv_bytes = n.bytes / (n.m * n.k);
    } else {
      ++bf16_qkv;
    }
  }
  // 4 layers x 2 micro-batches: the last layer's QKV in BF16 (num_layers_at_end_in_bf16 = 1), none in FP8.
  CHECK(fp4_qkv == 6);
  CHECK(bf16_qkv == 2);
  CHECK(fp8_gemms == 0);
  CHECK(fp4_qkv_bytes == Approx(quantize_bytes_per_element(s.training, s.cluster.gpu.sm_version)));
  // Memory: FP4 layers keep their GEMM inputs in FP4 (less than FP8's bytes), the weights carry two
  // FP4 copies (more than FP8 with parameter gather, less than BF16 + one FP8 copy + ...).
  const Scenario fp8 = fp4_scenario("dgx-b200", {{"seq_length", 2048}, {"precision", "fp8"}, {"fp8_recipe", "mxfp8"}});
  CHECK(activation_bytes_per_layer(s, 0) < activation_bytes_per_layer(fp8, 0));
  CHECK(activation_bytes_per_layer(s, 3) > activation_bytes_per_layer(s, 0));  // the BF16 layer
  const auto mem4 = estimate_memory(s), mem8 = estimate_memory(fp8);
  CHECK(mem4.by_pipeline_rank.at(0).weights_bytes / mem8.by_pipeline_rank.at(0).weights_bytes == Approx((2 + 2 * (0.5 + 1.0 / 16)) / 3.0));

  // Hopper has no FP4 tensor cores; recipe keys need their precision.
  CHECK_THROWS_WITH(fp4_scenario("p5.48xlarge", {{"precision", "fp4"}}), Catch::Matchers::Contains("FP4 training needs Blackwell"));
  CHECK_THROWS_WITH(fp4_scenario("dgx-b200", {{"precision", "fp8"}, {"fp4_recipe", "nvfp4"}}),
                    Catch::Matchers::Contains("only with precision = \"fp4\""));
  CHECK_THROWS_WITH(fp4_scenario("dgx-b200", {{"precision", "fp4"}, {"fp8_param_gather", true}}),
                    Catch::Matchers::Contains("fp8_param_gather"));
  CHECK_THROWS_WITH(fp4_scenario("dgx-b200", {{"precision", "fp4"}, {"fp4_recipe", "int4"}}),
                    Catch::Matchers::Contains("nvfp4, mxfp4"));
}

TEST_CASE("the sustained clock scales tensor work (GEMM, attention) and leaves memory-bound kernels alone", "[lowprecision]") {
  hardware::GpuSpec reference = test::catalog().gpu("GB200");
  reference.sustained_clock_fraction = 1.0;
  hardware::GpuSpec throttled = reference;
  throttled.sustained_clock_fraction = 0.8;
  const compute::ComputeModel at_reference(reference), at_throttled(throttled);
  const compute::GemmShape big{16384, 16384, 16384};
  const double overhead = compute::kGemmFixedOverhead_s;
  CHECK((at_throttled.gemm_s(big, compute::MathPrecision::fp8) - overhead) ==
        Approx((at_reference.gemm_s(big, compute::MathPrecision::fp8) - overhead) / 0.8));
  CHECK((at_throttled.attention_s(1e15, false, 4096) - overhead) == Approx((at_reference.attention_s(1e15, false, 4096) - overhead) / 0.8));
  CHECK(at_throttled.memory_s(1e10) == Approx(at_reference.memory_s(1e10)));
  // The catalog's Blackwell figures: B200 and GB200 hold less than the microbenchmark's clock in training,
  // GB300 holds it; Hopper's efficiencies were measured under the same conditions (1).
  CHECK(test::catalog().gpu("GB200").sustained_clock_fraction < 1.0);
  CHECK(test::catalog().gpu("B200").sustained_clock_fraction < 1.0);
  CHECK(test::catalog().gpu("GB300").sustained_clock_fraction == 1.0);
  CHECK(test::catalog().gpu("H100-SXM").sustained_clock_fraction == 1.0);
}
