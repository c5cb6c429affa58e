// Serving across nodes and wide expert parallelism (issue 26): grouped expert GEMMs, TP groups that span
// whole NVLink domains, redundant experts, the domain-aware dispatch, two-batch overlap, and one-batch
// iteration probes.
#include <catch2/catch.hpp>

#include <cmath>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/inference/iteration_probe.hpp"
#include "fmsim/inference/serving_constants.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "fmsim/workload/moe_routing.hpp"
#include "serving_test_support.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::inference;

namespace {

ServeScenario load(const std::string& model, int nodes, const std::string& serving) {
  const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / "p5-16node.json").string() +
                           R"(", "nodes": )" + std::to_string(nodes) + R"(}, "model": ")" + model + R"(", "serving": )" + serving +
                           R"(, "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
  return load_serve_scenario(test::write_temp(json, "serve.json"), {}, test::catalog());
}

std::string refusal(const std::string& model, int nodes, const std::string& serving) {
  try {
    const auto s = load(model, nodes, serving);
    const ServingPlan plan(s);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

BatchShape decode(int sequences, double context);

/// Both halves' collectives of a decode batch priced without overlap (each half alone, attention aside).
double without_halves_communication(const ReplicaModel& model, int sequences);

BatchShape decode(int sequences, double context) { return test::decode_batch(sequences, context); }

double without_halves_communication(const ReplicaModel& model, int sequences) {
  return model.breakdown(decode((sequences + 1) / 2, 2000)).communication_s + model.breakdown(decode(sequences / 2, 2000)).communication_s;
}

}  // namespace

TEST_CASE("a grouped GEMM shares the SMs' waves among its groups and reads every group's operands") {
  const auto& gpu = test::catalog().gpu("H100-SXM");
  const compute::ComputeModel model(gpu);
  const auto fp8 = compute::MathPrecision::fp8;
  // One group is one GEMM.
  const compute::GemmShape shape{1408, 3072, 8192};
  CHECK(model.grouped_gemm_s(1, shape, fp8) == Approx(model.gemm_s(shape, fp8)));
  // 1408 x 3072 in 128 x 256 tiles is 11 x 12 = 132 tiles, one wave on the H100's 132 SMs: G groups of it
  // are G waves, so (compute-bound) the grouped kernel costs G GEMMs' work plus one fixed overhead.
  REQUIRE(gpu.sm_count == 132);
  const double one = model.gemm_s(shape, fp8) - compute::kGemmFixedOverhead_s;
  for (int g : {2, 5, 16}) {
    CHECK(model.grouped_gemm_s(g, shape, fp8) - compute::kGemmFixedOverhead_s == Approx(g * one).epsilon(1e-9));
  }
  // Decode-sized experts (8 rows each): 32 groups of 4 tiles fit one wave, so the kernel is bound by
  // reading the 32 experts' weights, far below 32 GEMMs one after another.
  const compute::GemmShape skinny{8, 512, 7168};
  const double bytes = 32 * ((8.0 * 7168 + 7168.0 * 512) * 1.0 + 8.0 * 512 * 2.0);
  const double read = bytes / (gpu.hbm_bandwidth_Bps * gpu.hbm_achievable_fraction);
  CHECK(model.grouped_gemm_s(32, skinny, fp8) == Approx(read + compute::kGemmFixedOverhead_s));
  CHECK(model.grouped_gemm_s(32, skinny, fp8) < 0.3 * 32 * model.gemm_s(skinny, fp8));
}

TEST_CASE("a TP group larger than a node spans whole nodes and all-reduces over the network") {
  // Llama-3.1-70B at TP 16 on two p5 nodes: both nodes' GPUs, and a decode step's two all-reduces per
  // layer priced on that 16-GPU, 2-node layout.
  const auto s = load("llama3.3-70b", 2, R"({"precision": "fp8", "tensor_parallel_size": 16, "cuda_graph_batch_sizes": []})");
  const ServingPlan plan(s);
  REQUIRE(plan.replicas()[0].gpus.size() == 16);
  CHECK(plan.nodes_used() == 2);
  const auto layout = collectives::make_layout(plan.cluster(), plan.replicas()[0].gpus);
  CHECK(layout.island_ranks.size() == 2);
  const int layers = s.model.layers;
  for (int sequences : {1, 64, 256}) {
    const double bytes = sequences * static_cast<double>(s.model.hidden) * 2.0;
    const double expected = 2.0 * layers * collectives::collective_cost(layout, collectives::Op::all_reduce, bytes).time_s;
    CHECK(plan.model(0).breakdown(decode(sequences, 1000)).communication_s == Approx(expected));
  }
  // Over the network the all-reduces cost more than inside one node (TP 8 on one p5).
  const auto node = load("llama3.3-70b", 1, R"({"precision": "fp8", "tensor_parallel_size": 8, "cuda_graph_batch_sizes": []})");
  const ServingPlan one_node(node);
  CHECK(plan.model(0).breakdown(decode(256, 1000)).communication_s > one_node.model(0).breakdown(decode(256, 1000)).communication_s);
  // Groups span whole domains: 12 is refused with the reason.
  CHECK_THAT(refusal("deepseek-v3", 2, R"({"tensor_parallel_size": 12, "data_parallel_attention": true})"), Catch::Contains("not a multiple of it"));
}

TEST_CASE("redundant experts add their copies' weights and let EP divide the physical experts") {
  // DeepSeek-V3 over 72 GPUs: 256 experts do not split over 72 ranks; 256 + 32 = 288 do (4 each).
  const std::string ep72 = R"({"precision": "fp8", "tensor_parallel_size": 72, "enable_expert_parallel": true,
      "data_parallel_attention": true, "max_num_seqs": 4096, "max_num_batched_tokens": 4096, "cuda_graph_batch_sizes": [])";
  CHECK_THAT(refusal("deepseek-v3", 9, ep72 + "}"), Catch::Contains("does not divide the 256 experts"));
  CHECK(refusal("deepseek-v3", 9, ep72 + R"(, "num_redundant_experts": 32})").empty());
  CHECK_THAT(refusal("deepseek-v3", 9, R"({"tensor_parallel_size": 8, "num_redundant_experts": 8})"),
             Catch::Contains("needs enable_expert_parallel"));
  // Weights per GPU grow by the copies' share: 16 extra experts over 16 ranks is one expert per rank
  // and MoE layer, 3 x 7168 x 2048 FP8 parameters each.
  const std::string ep16 = R"({"precision": "fp8", "tensor_parallel_size": 16, "enable_expert_parallel": true,
      "data_parallel_attention": true, "cuda_graph_batch_sizes": []})";
  const auto base = load("deepseek-v3", 2, ep16);
  const auto more = load("deepseek-v3", 2, ep16.substr(0, ep16.size() - 1) + R"(, "num_redundant_experts": 16})");
  const ServingPlan base_plan(base), more_plan(more);
  const double moe_layers = base.model.moe_layers();
  CHECK(more_plan.model(0).memory().weight_bytes_per_gpu - base_plan.model(0).memory().weight_bytes_per_gpu ==
        Approx(moe_layers * 3.0 * 7168 * 2048 * 1.0));
}

TEST_CASE("across NVLink domains the dispatch sends a token once per domain holding one of its experts") {
  // One domain: every copy; g domains: g P(hit) / k of them (moe_routing.hpp), here DeepSeek-V3's
  // group-limited routing (8 groups, top 4, top-8 of 256) over 2 nodes: each node holds 4 groups.
  const std::string ep16 = R"({"precision": "fp8", "tensor_parallel_size": 16, "enable_expert_parallel": true,
      "data_parallel_attention": true, "cuda_graph_batch_sizes": []})";
  const auto s = load("deepseek-v3", 2, ep16);
  REQUIRE(s.model.moe.router_groups == 8);
  REQUIRE(s.model.moe.router_group_topk == 4);
  CHECK(workload::domain_send_share(s.model.moe, 1) == 1.0);
  double hit = 0;  // a node holds j of the token's 4 chosen groups
  const double c84 = 70.0;
  const double ways[] = {0, 4.0 * 4 / c84, 6.0 * 6 / c84, 4.0 * 4 / c84, 1.0 / c84};  // C(4,j) C(4,4-j) / C(8,4)
  for (int j = 1; j <= 4; ++j) hit += ways[j] * (1.0 - workload::all_missed(128, j * 32, 8));
  CHECK(workload::domain_send_share(s.model.moe, 2) == Approx(2 * hit / 8));
  const ServingPlan plan(s);
  const auto layout = collectives::make_layout(plan.cluster(), plan.replicas()[0].gpus);
  const int tokens = 1024;
  // ... and the busiest of the 16 ranks receives what uniform random routing gives it over the mean.
  const double rows = std::ceil(tokens / 16.0) * 8 * (2 * hit / 8) * workload::random_routing_imbalance(16, tokens * 8 / 16.0);
  const auto& split = plan.model(0).moe_split(tokens);
  CHECK(split.dispatch_s == Approx(collectives::collective_cost(layout, collectives::Op::alltoall, rows * 7168 * 1.0).time_s));
  CHECK(split.combine_s == Approx(collectives::collective_cost(layout, collectives::Op::alltoall, rows * 7168 * 2.0).time_s));
}

TEST_CASE("two-batch overlap pairs each micro-batch's all-to-all with the other's compute") {
  const std::string serving = R"({"precision": "fp8", "tensor_parallel_size": 16, "enable_expert_parallel": true,
      "data_parallel_attention": true, "cuda_graph_batch_sizes": [], "max_num_batched_tokens": 65536, "max_num_seqs": 4096)";
  const auto plain = load("deepseek-v3", 2, serving + "}");
  const auto tbo = load("deepseek-v3", 2, serving + R"(, "two_batch_overlap": true})");
  const ServingPlan plain_plan(plain), tbo_plan(tbo);
  const ReplicaModel& m = tbo_plan.model(0);
  const double layers = m.moe_stage_layers();
  for (int sequences : {512, 2048}) {
    const BatchShape b = decode(sequences, 2000);
    const auto without = plain_plan.model(0).breakdown(b);
    const auto with = m.breakdown(b);
    // Attention (KV reads) is the same work split in two; the half batches' pieces pair up as
    // B's attention | A's dispatch, A's experts | B's dispatch, B's experts | A's combine, A's next
    // attention | B's combine, each pair costing its longer side. Decode holds no SMs for the transfer.
    CHECK(with.attention_s == Approx(without.attention_s));
    const auto& first = m.moe_split((sequences + 1) / 2);
    const auto& second = m.moe_split(sequences / 2);
    const double a = (first.attention_side_s + second.attention_side_s + without.attention_s / m.stage_layers()) / 2;
    const double e = (first.expert_side_s + second.expert_side_s) / 2;
    const double d = (first.dispatch_s + second.dispatch_s) / 2, c = (first.combine_s + second.combine_s) / 2;
    const double layer = std::max(a, d) + std::max(e, d) + std::max(e, c) + std::max(a, c);
    // The dense layers' own collectives stay exposed.
    const double dense = std::max(0.0, without_halves_communication(plain_plan.model(0), sequences) - layers * 2 * (d + c));
    CHECK(with.communication_s == Approx(dense + layers * (layer - 2 * (a + e))));
    CHECK(with.communication_s < without.communication_s);
  }
  // Prefill runs DeepEP's normal kernels, which hold 20 of the H100's 132 SMs: a compute piece that
  // overlaps a transfer runs that much slower while it does. Closed form from the half batch priced
  // without overlap: both halves' GEMMs and memory-bound kernels, the whole batch's attention, the dense
  // layers' collectives, and per MoE layer the four pairs.
  auto prefill_of = [](int tokens) {
    BatchShape b;
    b.prefill_tokens = tokens;
    b.prefill_sequences = tokens / 4096;
    b.prefill_attention_pairs = tokens * 2048.5;
    return b;
  };
  const auto half = plain_plan.model(0).breakdown(prefill_of(16384));
  const auto full = plain_plan.model(0).breakdown(prefill_of(32768));
  const auto& piece = m.moe_split(16384);
  const double a = piece.attention_side_s + full.attention_s / m.stage_layers() / 2, e = piece.expert_side_s;
  const double slow = 132.0 / (132.0 - kDeepepNormalKernelSms) - 1.0;
  double layer = 0;
  for (const auto& [x, y] : {std::pair{a, piece.dispatch_s}, std::pair{e, piece.dispatch_s}, std::pair{e, piece.combine_s},
                             std::pair{a, piece.combine_s}}) {
    layer += std::max(x + std::min(x, y) * slow, y);
  }
  const double dense_communication = 2 * half.communication_s - layers * 2 * (piece.dispatch_s + piece.combine_s);
  const double expected = 2 * (half.gemm_s + half.memory_ops_s) + full.attention_s + dense_communication + layers * (layer - 2 * (a + e));
  CHECK(m.breakdown(prefill_of(32768)).gpu_s() == Approx(expected));
  // Two-batch overlap needs expert parallelism.
  CHECK_THAT(refusal("deepseek-v3", 2, R"({"tensor_parallel_size": 16, "two_batch_overlap": true})"), Catch::Contains("needs enable_expert_parallel"));
}

TEST_CASE("an iteration probe prices the batch it names and refuses what the engine's limits refuse") {
  const auto s = load("llama3.1-8b", 1, R"({"precision": "fp8", "tensor_parallel_size": 1, "max_num_seqs": 256, "max_num_batched_tokens": 8192})");
  const ServingPlan plan(s);
  const auto results = run_iteration_probes(plan, {parse_iteration_probe("decode:128@1000", "--iteration"),
                                                   parse_iteration_probe("prefill:8192@2048", "--iteration")});
  REQUIRE(results.size() == 2);
  CHECK(results[0].iteration_s == Approx(plan.model(0).breakdown(decode(128, 1000)).total_s()));
  CHECK(results[0].tokens_per_s == Approx(128 / results[0].iteration_s));
  CHECK(results[1].batch.prefill_sequences == 4);
  CHECK(results[1].batch.prefill_attention_pairs == Approx(8192 * 2049 / 2.0));
  CHECK(results[1].tokens_per_s_per_gpu == Approx(8192 / results[1].iteration_s));
  double sum = 0;
  for (const auto& [name, value] : named_parts(results[0].parts)) sum += value;
  CHECK(sum == Approx(results[0].iteration_s));
  for (const char* bad : {"decode", "decode:12", "decode:0@10", "decode:-1@10", "fill:8@8", "decode:8@1e3", "prefill:99999999999@8"}) {
    CHECK_THROWS_AS(parse_iteration_probe(bad, "--iteration"), InputError);
  }
  CHECK_THROWS_WITH(run_iteration_probes(plan, {parse_iteration_probe("decode:257@10", "--iteration")}), Catch::Contains("max_num_seqs"));
  CHECK_THROWS_WITH(run_iteration_probes(plan, {parse_iteration_probe("prefill:8193@10", "--iteration")}), Catch::Contains("max_num_batched_tokens"));
  CHECK_THROWS_WITH(run_iteration_probes(plan, {parse_iteration_probe("decode:256@10000000", "--iteration")}), Catch::Contains("KV cache"));
}

TEST_CASE("expert load imbalance in serving: the busiest expert-parallel rank paces the experts and the all-to-all") {
  // DeepGEMM's grouped GEMMs (SGLang's setup): with a backend's weight-streaming floor the weight-bound
  // batches below would take the floor on every rank, balanced or not.
  const std::string ep16 = R"({"precision": "fp8", "tensor_parallel_size": 16, "enable_expert_parallel": true, "moe_backend": "grouped_gemm",
      "data_parallel_attention": true, "cuda_graph_batch_sizes": [], "expert_load_imbalance": )";
  const auto even = load("deepseek-v3", 2, ep16 + "1}");
  const auto skewed = load("deepseek-v3", 2, ep16 + "1.5}");
  const auto random = load("deepseek-v3", 2, R"({"precision": "fp8", "tensor_parallel_size": 16, "enable_expert_parallel": true,
      "moe_backend": "grouped_gemm", "data_parallel_attention": true, "cuda_graph_batch_sizes": []})");
  const ServingPlan even_plan(even), skewed_plan(skewed), random_plan(random);
  const auto layout = collectives::make_layout(even_plan.cluster(), even_plan.replicas()[0].gpus);
  for (int tokens : {256, 2048}) {
    const auto& a = even_plan.model(0).moe_split(tokens);
    const auto& b = skewed_plan.model(0).moe_split(tokens);
    const auto& r = random_plan.model(0).moe_split(tokens);
    // The all-to-all carries 1.5 x the busiest rank's balanced rows; random routing, its own skew.
    const double rows = std::ceil(tokens / 16.0) * 8 * workload::domain_send_share(even.model.moe, 2);
    CHECK(a.dispatch_s == Approx(collectives::collective_cost(layout, collectives::Op::alltoall, rows * 7168).time_s));
    CHECK(b.dispatch_s == Approx(collectives::collective_cost(layout, collectives::Op::alltoall, 1.5 * rows * 7168).time_s));
    CHECK(b.expert_side_s > a.expert_side_s);
    CHECK(r.dispatch_s >= a.dispatch_s);
    CHECK(r.dispatch_s <= b.dispatch_s);
  }
  CHECK_THAT(refusal("deepseek-v3", 2, R"({"tensor_parallel_size": 16, "data_parallel_attention": true, "expert_load_imbalance": 1.2})"),
             Catch::Contains("expert_load_imbalance needs enable_expert_parallel"));
  CHECK_THAT(refusal("deepseek-v3", 2, ep16 + "0.5}"), Catch::Contains("expert_load_imbalance"));
}
