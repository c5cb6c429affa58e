// Engine behaviour outside the GEMMs and attention (issue 26): CUDA-graph padding of decode batches,
// the sampler over the vocabulary, host time per iteration / sequence / streamed token with and without
// the overlap scheduler, the engine defaults and the KV share of free memory.
#include <catch2/catch.hpp>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/inference/serving_constants.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "serving_test_support.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::inference;

namespace {

ServeScenario load(const std::string& serving, const std::string& arrival = R"("arrival": "offline")") {
  const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / "p5-2node.json").string() +
                           R"(", "nodes": 1}, "model": "llama3.1-8b", "serving": )" + serving + R"(, "workload": {)" + arrival +
                           R"(, "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
  return load_serve_scenario(test::write_temp(json, "serve.json"), {}, test::catalog());
}

BatchShape decode(int sequences) { return test::decode_batch(sequences, 1000.0); }

}  // namespace

TEST_CASE("a CUDA graph pads a decode batch up to the next captured size; prefill iterations are not padded") {
  EngineOptions e;
  e.cuda_graph_padding = true;
  e.cuda_graph_batch_sizes = {1, 2, 4, 8, 16, 32};
  CHECK(cuda_graph_batch(e, 1) == 1);
  CHECK(cuda_graph_batch(e, 9) == 16);
  CHECK(cuda_graph_batch(e, 16) == 16);
  CHECK(cuda_graph_batch(e, 33) == 33);  // above the largest graph: eager, unpadded
  e.cuda_graph_padding = false;
  CHECK(cuda_graph_batch(e, 9) == 9);

  const auto s = load(R"({"precision": "fp8", "cuda_graph_padding": true, "cuda_graph_batch_sizes": [1, 2, 4, 8, 512]})");
  const ServingPlan plan(s);
  const ReplicaModel& model = plan.model(0);
  const auto padded = model.breakdown(decode(9));
  const auto full = model.breakdown(decode(512));
  CHECK(padded.padded_tokens == 512);
  // The GEMMs and norms run on the 512 padded rows; attention reads only the 9 real sequences' KV.
  CHECK(padded.gemm_s == Approx(full.gemm_s));
  CHECK(padded.memory_ops_s == Approx(full.memory_ops_s));
  CHECK(padded.attention_s < full.attention_s / 20);
  BatchShape mixed = decode(9);
  mixed.prefill_tokens = 16;
  mixed.prefill_sequences = 1;
  mixed.prefill_attention_pairs = 16 * 8.5;
  CHECK(model.breakdown(mixed).padded_tokens == 25);
}

TEST_CASE("the sampler reads and writes FP32 logits over the vocabulary for every sampled row") {
  const auto s = load(R"({"precision": "fp8", "cuda_graph_batch_sizes": []})");
  const ServingPlan plan(s);
  const ReplicaModel& model = plan.model(0);
  const compute::ComputeModel compute(s.cluster.gpu);
  for (int rows : {1, 64, 1024}) {
    CHECK(model.breakdown(decode(rows)).sampling_s == Approx(compute.memory_s(2.0 * rows * s.model.vocab * kLogitBytes)));
  }
}

TEST_CASE("host time per sequence adds to the iteration without overlap and hides behind the GPU with it") {
  const std::string base = R"("precision": "fp8", "cuda_graph_batch_sizes": [], "iteration_overhead": "1ms", "host_time_per_sequence": "20us")";
  const auto serial = load("{" + base + R"(, "overlap_scheduler": false})");
  const auto overlapped = load("{" + base + R"(, "overlap_scheduler": true})");
  const auto none = load(R"({"precision": "fp8", "cuda_graph_batch_sizes": [], "iteration_overhead": "0s"})");
  const ServingPlan ps(serial), po(overlapped), pn(none);
  for (int rows : {1, 32, 256}) {
    const double gpu = pn.model(0).iteration_s(decode(rows));
    const double host = 1e-3 + 20e-6 * rows;
    // Closed forms: serial = GPU + host; overlapped = max(GPU, host).
    CHECK(ps.model(0).iteration_s(decode(rows)) == Approx(gpu + host));
    CHECK(po.model(0).iteration_s(decode(rows)) == Approx(std::max(gpu, host)));
  }
  // A host-bound engine: per-sequence time above the GPU's per-token time caps the step rate.
  const auto bound = load(R"({"precision": "fp8", "cuda_graph_batch_sizes": [], "iteration_overhead": "0s", "host_time_per_sequence": "1ms", "overlap_scheduler": true})");
  const ServingPlan pb(bound);
  CHECK(pb.model(0).iteration_s(decode(100)) == Approx(0.1));
}

TEST_CASE("streamed tokens cost a response each; an off-line batch pays one per finished request") {
  const std::string base = R"("precision": "fp8", "cuda_graph_batch_sizes": [], "iteration_overhead": "0s", "response_time_per_token": "10us")";
  const auto streaming = load("{" + base + "}", R"("arrival": "poisson", "rate": "1/s")");
  const auto batch = load("{" + base + "}");
  CHECK(streaming.pools[0].engine.stream_tokens);   // online clients stream by default
  CHECK_FALSE(batch.pools[0].engine.stream_tokens); // off-line: each request's output once
  BatchShape shape = decode(100);
  shape.finishing_rows = 3;
  const ServingPlan ps(streaming), pb(batch);
  const auto a = ps.model(0).breakdown(shape), b = pb.model(0).breakdown(shape);
  CHECK(a.overhead_s == Approx(100 * 10e-6));
  CHECK(b.overhead_s == Approx(3 * 10e-6));
  CHECK(a.total_s() - b.total_s() == Approx(97 * 10e-6));
}

TEST_CASE("engine tensorrt_llm sets TensorRT-LLM's defaults; kv_cache_free_gpu_memory_fraction sizes the KV cache") {
  const auto t = load(R"({"engine": "tensorrt_llm", "precision": "fp8"})");
  const EngineOptions& e = t.pools[0].engine;
  CHECK(e.kind == EngineKind::tensorrt_llm);
  CHECK(e.max_num_seqs == kTrtllmMaxBatchSize);
  CHECK(e.max_num_batched_tokens == kTrtllmMaxNumTokens);
  CHECK(e.block_size == kTrtllmTokensPerBlock);
  CHECK(e.guaranteed_no_evict);
  CHECK(e.overlap_scheduler);
  CHECK_FALSE(e.cuda_graph_padding);
  CHECK(e.kv_free_memory_fraction == Approx(kTrtllmFreeGpuMemoryFraction));
  const auto v = load(R"({"precision": "fp8"})");
  CHECK(v.pools[0].engine.kind == EngineKind::vllm);
  CHECK(v.pools[0].engine.cuda_graph_padding);
  CHECK(v.pools[0].engine.cuda_graph_batch_sizes.back() == kVllmCudaGraphMaxBatch);
  // KV = fraction x (HBM - weights - activations - runtime).
  const ServingPlan plan(t);
  const auto& m = plan.model(0).memory();
  const double free = t.cluster.gpu.hbm_bytes - m.weight_bytes_per_gpu - m.activation_bytes_per_gpu - m.reserve_bytes_per_gpu;
  CHECK(m.kv_bytes_per_gpu == Approx(kTrtllmFreeGpuMemoryFraction * free));
}

TEST_CASE("engine options refuse bad values with the key named") {
  auto message = [](const std::string& serving) {
    try {
      load(serving);
    } catch (const InputError& error) {
      return std::string(error.what());
    }
    return std::string("accepted");
  };
  CHECK_THAT(message(R"({"cuda_graph_batch_sizes": [8, 0]})"), Catch::Contains("cuda_graph_batch_sizes"));
  CHECK_THAT(message(R"({"cuda_graph_batch_sizes": 8})"), Catch::Contains("an array"));
  CHECK_THAT(message(R"({"kv_cache_free_gpu_memory_fraction": 1.5})"), Catch::Contains("kv_cache_free_gpu_memory_fraction"));
  CHECK_THAT(message(R"({"engine": "sglang"})"), Catch::Contains("engine"));
  CHECK_THAT(message(R"({"host_time_per_sequence": "-1us"})"), Catch::Contains("host_time_per_sequence"));
}

TEST_CASE("the expert all-to-all carries each rank's share of the batch and not the whole batch") {
  // Qwen3-30B-A3B (48 MoE layers, top-8, hidden 2048) on 8 H100 with EP 8 and DP attention: no TP
  // all-reduce; per MoE layer a dispatch and a combine, each rank sending its T / 8 tokens' 8 copies,
  // the dispatch in FP8 (1 byte, the expert GEMMs' input) and the combine in BF16 (2 bytes).
  const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / "p5-2node.json").string() +
                           R"(", "nodes": 1}, "model": "qwen3-30b-a3b", "serving": {"precision": "fp8", "tensor_parallel_size": 8,
                           "enable_expert_parallel": true, "data_parallel_attention": true, "cuda_graph_batch_sizes": [],
                           "expert_load_imbalance": 1},
                           "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
  const auto s = load_serve_scenario(test::write_temp(json, "moe.json"), {}, test::catalog());
  const ServingPlan plan(s);
  const auto layout = collectives::make_layout(plan.cluster(), plan.replicas()[0].gpus);
  for (int tokens : {64, 1000, 4096}) {
    const double rows = std::ceil(tokens / 8.0) * 8;
    const double expected = 48 * (collectives::collective_cost(layout, collectives::Op::alltoall, rows * 2048 * 1.0).time_s +
                                  collectives::collective_cost(layout, collectives::Op::alltoall, rows * 2048 * 2.0).time_s);
    CHECK(plan.model(0).breakdown(decode(tokens)).communication_s == Approx(expected));
  }
}

TEST_CASE("vLLM's batching limits follow its defaults for the GPU: large ones get 1024 sequences and 8192 tokens") {
  auto limits = [](const std::string& topology) {
    const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / topology).string() +
                             R"(", "nodes": 1}, "model": "llama3.1-8b", "serving": {},
                             "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
    const auto s = load_serve_scenario(test::write_temp(json, "limits.json"), {}, test::catalog());
    return std::make_pair(s.pools[0].engine.max_num_seqs, s.pools[0].engine.max_num_batched_tokens);
  };
  CHECK(limits("p5-2node.json") == std::make_pair(1024, 8192));    // H100 80 GB
  CHECK(limits("p5en-128node.json") == std::make_pair(1024, 8192)); // H200
  CHECK(limits("p4de-2node.json") == std::make_pair(256, 2048));   // A100 80 GB: excluded by name
}
