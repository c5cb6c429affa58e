// Serving a hybrid Mamba/attention model (inference/hybrid_serving.hpp): the Mamba state per sequence and
// the KV cache of the attention layers only, by hand for Nemotron 3 Nano; a decode step's state update and a
// prompt chunk's scan in the iteration; the state's blocks charged per sequence; the refusals.
#include <catch2/catch.hpp>

#include <fstream>

#include <nlohmann/json.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "fmsim/workload/ssd_scan.hpp"
#include "serve_test_support.hpp"

using namespace fmsim;
using namespace fmsim::inference;

namespace {

ServeScenario load(const std::string& serving, const std::string& model = "nemotron-3-nano") {
  return test::serve_scenario("p5en-128node.json", 1, model, serving);
}

std::string refusal(const std::string& serving) {
  try {
    const auto s = load(serving);
    const ServingPlan plan(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("hybrid serving: Mamba state per sequence and KV of the attention layers only, by hand for Nemotron 3 Nano") {
  // 23 Mamba layers (64 heads x 64, state 128, 8 groups, conv 4), 6 attention layers (2 KV heads x 128).
  const auto s = load(R"({"precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 2})");
  const ServingPlan plan(s);
  const ReplicaMemory& m = plan.model(0).memory();
  const double conv = (64 * 64 + 2 * 8 * 128) / 2.0 * 3 * 2;  // conv_dim / TP channels x 3 inputs, BF16
  const double ssm = 64 / 2.0 * 64 * 128 * 2;                 // heads / TP x P x N, BF16
  CHECK(m.mamba_state_bytes_per_sequence_per_gpu == Approx(23 * (conv + ssm)));
  CHECK(m.kv_bytes_per_token_per_gpu == Approx(6 * 2 * 1 * 128 * 1.0));  // K and V of 1 KV head per GPU, FP8
  CHECK(m.state_blocks_per_sequence == static_cast<long long>(std::ceil(23 * (conv + ssm) / (6 * 2 * 128.0 * 16))));
  // A whole sequence's state crosses in a prefill-to-decode move, unsharded.
  CHECK(plan.model(0).state_transfer_bytes_per_sequence() == Approx(2 * 23 * (conv + ssm)));
  // float32 SSM state: the SSM part doubles.
  const auto f32 = load(R"({"precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 2, "mamba_ssm_cache_dtype": "float32"})");
  const ServingPlan f32_plan(f32);
  CHECK(f32_plan.model(0).memory().mamba_state_bytes_per_sequence_per_gpu == Approx(23 * (conv + 2 * ssm)));
}

TEST_CASE("hybrid serving: TensorRT-LLM preallocates the states apart; a single group is replicated over TP") {
  // TensorRT-LLM's MambaCacheManager: max_num_seqs states outside the KV cache, no blocks per sequence.
  const auto vllm = load(R"({"precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 2, "max_num_seqs": 512})");
  const auto trt = load(R"({"engine": "tensorrt_llm", "precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 2,
                            "max_num_seqs": 512, "kv_cache_free_gpu_memory_fraction": 1.0})");
  const ServingPlan vllm_plan(vllm), trt_plan(trt);
  const ReplicaMemory& v = vllm_plan.model(0).memory();
  const ReplicaMemory& t = trt_plan.model(0).memory();
  CHECK(t.state_blocks_per_sequence == 0);
  CHECK(t.mamba_cache_bytes_per_gpu == Approx(512 * t.mamba_state_bytes_per_sequence_per_gpu));
  CHECK(v.mamba_cache_bytes_per_gpu == 0);
  CHECK(v.state_blocks_per_sequence > 0);
  // n_groups 1 (Granite 4.0-H style) at TP 2: each rank keeps B and C of the one group whole.
  auto config = nlohmann::json::parse(std::ifstream(test::source_dir() / "configs" / "models" / "nemotron-3-nano.json"));
  config["n_groups"] = 1;
  const std::string path = test::write_temp(config.dump(), "one-group.json").string();
  const auto one = load(R"({"precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 2})", path);
  const ServingPlan one_plan(one);
  const double conv = (64 * 64 / 2.0 + 2 * 1 * 128) * 3 * 2, ssm = 32.0 * 64 * 128 * 2;
  CHECK(one_plan.model(0).memory().mamba_state_bytes_per_sequence_per_gpu == Approx(23 * (conv + ssm)));
}

TEST_CASE("hybrid serving: a decode step reads and writes each sequence's state; a prompt chunk runs the SSD scan") {
  const auto s = load(R"({"precision": "fp8", "kv_cache_dtype": "fp8", "tensor_parallel_size": 1})");
  const ServingPlan plan(s);
  const ReplicaModel& model = plan.model(0);
  const compute::ComputeModel gpu(s.cluster.gpu);
  // Sequence mixing of a decode step over a very short context: the KV reads vanish, the state update stays.
  BatchShape one;
  one.decode_tokens = 256;
  one.decode_context_tokens = 256;  // one token of KV each
  one.sampled_rows = 256;
  const double conv = 2.0 * 6144 * 3 * 2 + 2.0 * 6144 * 2;
  const double ssm = 2.0 * 64 * 64 * 128 * 2 + (3.0 * 64 * 64 + 2.0 * 8 * 128 + 64) * 2;
  const double update = 23 * (gpu.memory_s(256 * conv) + gpu.memory_s(256 * ssm));
  const double kv_read = 6 * gpu.memory_s(256 * model.memory().kv_bytes_per_token_per_gpu / 6);
  CHECK(model.breakdown(one).attention_s == Approx(update + kv_read).epsilon(1e-9));
  // Twice the sequences: twice the state traffic (HBM-bound, launch cost aside).
  BatchShape two = one;
  two.decode_tokens = two.sampled_rows = 512;
  two.decode_context_tokens = 512;
  CHECK(model.breakdown(two).attention_s > 1.9 * model.breakdown(one).attention_s);
  // A prompt chunk: the scan's five forward kernels over its tokens in each Mamba layer, beside attention.
  BatchShape chunk;
  chunk.prefill_tokens = 4096;
  chunk.prefill_attention_pairs = 4096.0 * 4097 / 2;
  chunk.prefill_sequences = 1;
  chunk.sampled_rows = 1;
  double scan = 0;
  for (const auto& k : workload::ssd_forward_kernels(s.model.hybrid.mamba, 1)) scan += workload::ssd_kernel_s(gpu, k, 4096, false);
  const double conv1d = gpu.memory_s(2.0 * 4096 * 6144 * 2);
  // The 6 attention layers' flash attention: 32 heads x (128 + 128) per query-key pair.
  const double flash = gpu.attention_s(2.0 * chunk.prefill_attention_pairs * 32 * 2 * 128, false, chunk.prefill_attention_pairs / 4096);
  CHECK(model.breakdown(chunk).attention_s == Approx(23 * (scan + conv1d) + 6 * flash).epsilon(1e-9));
  // At this shape chunk_scan is bound by its matrix products at the Triton rate, not by its bytes.
  const auto kernels = workload::ssd_forward_kernels(s.model.hybrid.mamba, 1);
  const auto& chunk_scan = kernels.back();
  REQUIRE(chunk_scan.name == "ssd.chunk_scan");
  CHECK(workload::ssd_kernel_s(gpu, chunk_scan, 4096, false) == Approx(2e-6 + 4096 * chunk_scan.flops_per_token / 95e12));
  CHECK(workload::ssd_kernel_s(gpu, chunk_scan, 4096, false) > gpu.memory_s(4096 * chunk_scan.bytes_per_token));
}

TEST_CASE("hybrid serving: what it does not model is refused with the reason") {
  CHECK(refusal(R"({"tensor_parallel_size": 8, "precision": "fp8"})").empty());  // 8 divides 64 heads and 8 groups
  CHECK_THAT(refusal(R"({"pipeline_parallel_size": 2})"), Catch::Contains("pipeline_parallel_size > 1 is not modelled"));
  CHECK_THAT(refusal(R"({"tensor_parallel_size": 2, "data_parallel_attention": true, "enable_expert_parallel": true})"),
             Catch::Contains("data_parallel_attention is not modelled"));
  CHECK_THAT(refusal(R"({"enable_prefix_caching": true})"), Catch::Contains("a Mamba layer's state is per sequence"));
  CHECK_THAT(refusal(R"({"speculative": {"method": "eagle", "num_speculative_tokens": 2, "acceptance_rate": 0.7}})"),
             Catch::Contains("speculative decoding of a hybrid target"));
  // Without attention layers there is no KV pool to take the Mamba state from.
  auto config = nlohmann::json::parse(std::ifstream(test::source_dir() / "configs" / "models" / "nemotron-3-nano.json"));
  config["hybrid_override_pattern"] = "MEMEMEME";
  config["num_hidden_layers"] = 8;
  const std::string path = test::write_temp(config.dump(), "mamba-only.json").string();
  std::string message;
  try {
    const auto s = load(R"({"precision": "fp8"})", path);
    const ServingPlan plan(s);
  } catch (const InputError& e) {
    message = e.what();
  }
  CHECK_THAT(message, Catch::Contains("without attention layers"));
}
