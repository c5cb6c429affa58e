// Model, parallelism, memory, pipeline schedule and compute model: checks against published figures and
// closed forms (no simulation here).
#include <catch2/catch.hpp>

#include <map>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/low_precision.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

ModelSpec preset(const std::string& name) { return load_model(name, test::source_dir() / "configs" / "models"); }

Scenario make_scenario(const nlohmann::json& parallelism, const nlohmann::json& training, const nlohmann::json& model,
                       int nodes = 8, const std::string& instance = "p5.48xlarge") {
  nlohmann::json doc = {{"cluster", {{"instance_type", instance}, {"nodes", nodes}}},
                        {"model", model},
                        {"parallelism", parallelism},
                        {"training", training}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

}  // namespace

TEST_CASE("parameter counts match the published model sizes", "[workload]") {
  // Meta, NVIDIA, Mistral, DeepSeek and Qwen model cards / papers (Llama 2: the checkpoints' exact counts,
  // 6,738,415,616 / 13,015,864,320 / 68,976,648,192).
  const std::map<std::string, double> published = {
      {"llama3-8b", 8.03e9},         {"llama3-70b", 70.6e9},     {"llama3.1-405b", 405.9e9},
      {"mixtral-8x7b", 46.7e9},      {"mixtral-8x22b", 140.6e9}, {"deepseek-v3", 671e9},
      {"qwen3-30b-a3b", 30.5e9},     {"qwen3-235b-a22b", 235e9}, {"nemotron-4-340b", 341e9},
      {"gpt3-175b", 175e9},          {"gpt-oss-120b", 116.8e9},  {"llama2-7b", 6.74e9},
      {"llama2-13b", 13.02e9},       {"llama2-70b", 68.98e9}};
  for (const auto& [name, count] : published) {
    INFO(name);
    CHECK(count_parameters(preset(name)).total == Approx(count).epsilon(0.01));
  }
  // Active parameters of the MoE models (model cards): 12.9B, 37B, 3.3B, 22B.
  CHECK(count_parameters(preset("mixtral-8x7b")).active == Approx(12.9e9).epsilon(0.02));
  CHECK(count_parameters(preset("deepseek-v3")).active == Approx(37e9).epsilon(0.03));
  CHECK(count_parameters(preset("qwen3-30b-a3b")).active == Approx(3.3e9).epsilon(0.03));
  CHECK(count_parameters(preset("qwen3-235b-a22b")).active == Approx(22e9).epsilon(0.03));
  // Kimi K2 (moonshotai/Kimi-K2-Instruct config.json), counted by hand: 60 MoE layers of 384 routed experts
  // and one shared (3 matrices of 7168 x 2048 each, plus a 384 x 7168 router), one dense layer (3 x 7168 x
  // 18432), 61 MLA attention blocks (q_a 7168x1536, q_b 1536x64x192, kv_a 7168x576, kv_b 512x64x256, o
  // 8192x7168) with their norms (q_a 1536, kv_a 512, two 7168 layer norms), untied 163840 x 7168 embedding
  // and head, the final norm. The technical report (arXiv 2507.20534) rounds it to 1.04T and 32.6B active.
  {
    const double h = 7168, expert = 3 * h * 2048, router = 384 * h;
    const double attention = h * 1536 + 1536.0 * 64 * 192 + h * 576 + 512.0 * 64 * 256 + 64.0 * 128 * h + 1536 + 512 + 2 * h;
    const double total = 60 * (385 * expert + router) + 3 * h * 18432 + 61 * attention + 2 * 163840 * h + h;
    const double active = 60 * (9 * expert + router) + 3 * h * 18432 + 61 * attention + 2 * 163840 * h + h;
    CHECK(count_parameters(preset("kimi-k2")).total == Approx(total).epsilon(0.001));
    CHECK(count_parameters(preset("kimi-k2")).active == Approx(active).epsilon(0.001));
    CHECK(count_parameters(preset("kimi-k2")).active == Approx(32.6e9).epsilon(0.01));
  }
}

TEST_CASE("training FLOPs are 6 N per token plus the causal attention term", "[workload]") {
  const ModelSpec m = preset("llama3-70b");
  const int seq = 8192, vocab = padded_vocab(m.vocab, 4);
  const FlopsPerToken f = training_flops_per_token(m, seq, vocab);
  const ParameterCounts c = count_parameters(m);
  // Matmul parameters: everything but the input embedding and the norms (the LM head counted as logits).
  const double matmul_params = c.total - c.embedding - c.norms - c.output;
  CHECK(f.dense_matmul == Approx(6 * matmul_params).epsilon(1e-9));
  CHECK(f.logits == Approx(6.0 * m.hidden * vocab));
  CHECK(f.attention == Approx(6.0 * seq * m.heads * m.head_dim * m.layers));
  // Published Megatron-Bridge rows: model TFLOP/s / tokens/s = FLOPs per token (MEGATRON-NOTES.md section 1).
  CHECK(f.total() == Approx(719e12 / 1602).epsilon(0.01));
  const ModelSpec big = preset("llama3.1-405b");
  CHECK(training_flops_per_token(big, 8192, padded_vocab(big.vocab, 8)).total() == Approx(737e12 / 292).epsilon(0.01));
  const ModelSpec qwen = preset("qwen3-30b-a3b");
  CHECK(training_flops_per_token(qwen, 4096, padded_vocab(qwen.vocab, 1)).total() == Approx(121e12 / 5275).epsilon(0.02));
}

TEST_CASE("activation memory matches Korthikanti et al.'s per-layer formulas", "[workload]") {
  // An MHA model with a 4h GeLU MLP, BF16: 34 sbh / t with sequence parallelism, sbh (10 + 24/t) without.
  const nlohmann::json gpt = {{"hidden_size", 4096}, {"num_hidden_layers", 8},  {"num_attention_heads", 32},
                              {"intermediate_size", 16384}, {"vocab_size", 32000}, {"hidden_act", "gelu"}};
  const double s = 2048, b = 2, h = 4096, t = 4;
  auto with_sp = make_scenario({{"tensor_model_parallel_size", 4}, {"micro_batch_size", 2}, {"global_batch_size", 32},
                                {"sequence_parallel", true}}, {{"seq_length", 2048}}, gpt);
  CHECK(activation_bytes_per_layer(with_sp, 0) == Approx(34 * s * b * h / t));
  auto without_sp = make_scenario({{"tensor_model_parallel_size", 4}, {"micro_batch_size", 2}, {"global_batch_size", 32},
                                   {"sequence_parallel", false}}, {{"seq_length", 2048}}, gpt);
  CHECK(activation_bytes_per_layer(without_sp, 0) == Approx(s * b * h * (10 + 24 / t)));
  auto full = make_scenario({{"tensor_model_parallel_size", 4}, {"micro_batch_size", 2}, {"global_batch_size", 32}},
                            {{"seq_length", 2048}, {"recompute_granularity", "full"}}, gpt);
  CHECK(activation_bytes_per_layer(full, 0) == Approx(2 * s * b * h / t));
}

TEST_CASE("selective recompute modules drop exactly the tensors they recompute", "[workload]") {
  // Same 4h GeLU model as above, BF16, TP4 with SP: 34 sbh/t kept without recompute. Recomputing the norms
  // drops both norm outputs (2 x 2 sbh/t); recomputing the MLP keeps only its input, dropping the norm
  // output, FC1's output and FC2's input (2 sbh/t + 2 x 2 x 4 sbh/t).
  const nlohmann::json gpt = {{"hidden_size", 4096}, {"num_hidden_layers", 8},  {"num_attention_heads", 32},
                              {"intermediate_size", 16384}, {"vocab_size", 32000}, {"hidden_act", "gelu"}};
  const double sbh_t = 2048.0 * 2 * 4096 / 4;
  const nlohmann::json par = {{"tensor_model_parallel_size", 4}, {"micro_batch_size", 2}, {"global_batch_size", 32},
                              {"sequence_parallel", true}};
  auto with = [&](const nlohmann::json& modules) {
    return activation_bytes_per_layer(
        make_scenario(par, {{"seq_length", 2048}, {"recompute_granularity", "selective"}, {"recompute_modules", modules}}, gpt), 0);
  };
  CHECK(with({"core_attn"}) == Approx(34 * sbh_t));
  CHECK(with({"layernorm"}) == Approx(30 * sbh_t));
  CHECK(with({"mlp"}) == Approx((34 - 2 - 16) * sbh_t));
  CHECK(with({"layernorm", "mlp"}) == Approx((34 - 4 - 16) * sbh_t));
  // MoE: recomputing the experts' activation drops FC2's input, rows x expert_ffn x 2 bytes.
  const nlohmann::json moe_model = {{"hidden_size", 2048}, {"num_hidden_layers", 4}, {"num_attention_heads", 16},
                                    {"num_key_value_heads", 4}, {"intermediate_size", 6144}, {"vocab_size", 32000},
                                    {"num_local_experts", 16}, {"num_experts_per_tok", 4}, {"moe_intermediate_size", 768}};
  const nlohmann::json moe_par = {{"expert_model_parallel_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", 64}};
  auto moe = [&](const nlohmann::json& training) {
    return activation_bytes_per_layer(make_scenario(moe_par, training, moe_model, 1), 0);
  };
  const double rows = 4096.0 * 4;  // tokens x top-k
  CHECK(moe({{"seq_length", 4096}}) - moe({{"seq_length", 4096}, {"recompute_granularity", "selective"},
                                           {"recompute_modules", {"moe_act"}}}) == Approx(rows * 768 * 2));
  // The list needs selective recompute and names Megatron modules fmsim models.
  CHECK_THROWS_WITH(make_scenario(par, {{"recompute_modules", {"layernorm"}}}, gpt), Catch::Matchers::Contains("selective"));
  CHECK_THROWS_WITH(make_scenario(par, {{"recompute_granularity", "selective"}, {"recompute_modules", {"shared_experts"}}}, gpt),
                    Catch::Matchers::Contains("\"shared_experts\" is not modelled"));
}

TEST_CASE("weights, gradients and optimizer state follow the distributed-optimizer table", "[workload]") {
  // Megatron dist_optimizer.md: bf16 params and grads, distributed: 4 + 12/d bytes per parameter.
  const nlohmann::json model = {{"hidden_size", 4096}, {"num_hidden_layers", 8}, {"num_attention_heads", 32},
                                {"intermediate_size", 11008}, {"vocab_size", 32000}};
  auto s = make_scenario({{"tensor_model_parallel_size", 2}, {"global_batch_size", 64}}, {{"seq_length", 1024}}, model);
  const MemoryReport r = estimate_memory(s);
  const double d = s.parallelism.dp;  // 32
  const ModelSpec& m = s.model;
  const double local = (count_parameters(m).total - count_parameters(m).output - count_parameters(m).embedding +
                        2.0 * padded_vocab(m.vocab, 2) * m.hidden) / 2;  // TP-sharded, padded vocabulary
  CHECK(r.peak.weights_bytes == Approx(2 * local).epsilon(0.01));
  CHECK(r.peak.gradients_bytes == Approx(2 * local).epsilon(0.01));
  CHECK(r.peak.optimizer_bytes == Approx(12 * local / d).epsilon(0.01));
  CHECK_FALSE(r.oom);
}

TEST_CASE("1F1B and interleaved schedules run every pass once, in Megatron's order", "[workload]") {
  for (int vp : {1, 2, 4}) {
    for (int rank = 0; rank < 4; ++rank) {
      const auto order = pipeline_order(4, vp, 8, rank);
      REQUIRE(order.size() == 2u * 8 * vp);
      std::map<std::pair<int, int>, int> forward_at;
      int warmup = 0;
      while (warmup < static_cast<int>(order.size()) && order[warmup].forward) ++warmup;
      CHECK(warmup == std::min(vp == 1 ? 4 - rank - 1 : 2 * (4 - rank - 1) + (vp - 1) * 4, 8 * vp) + 1);
      for (std::size_t i = 0; i < order.size(); ++i) {
        auto key = std::make_pair(order[i].microbatch, order[i].chunk);
        if (order[i].forward) {
          CHECK(forward_at.count(key) == 0);
          forward_at[key] = static_cast<int>(i);
        } else {
          REQUIRE(forward_at.count(key) == 1);  // backward after its forward
        }
      }
      CHECK(forward_at.size() == 8u * vp);
    }
  }
}

TEST_CASE("pipeline layouts split the layers as Megatron does", "[workload]") {
  const auto layout = stage_layers(80, 40, false, false, "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL");
  REQUIRE(layout.size() == 40u);
  CHECK(layout.front() == std::make_pair(0, 2));
  CHECK(layout[35].second - layout[35].first == 3);
  CHECK(layout.back() == std::make_pair(79, 80));
  const auto accounted = stage_layers(126, 64, true, true);
  CHECK(accounted.front().second == 1);
  CHECK(accounted.back().second - accounted.back().first == 1);
  CHECK(accounted[1].second - accounted[1].first == 2);
  CHECK_THROWS_AS(stage_layers(80, 40, false, false, "Et|tL"), InputError);
}

TEST_CASE("impossible strategies are rejected with the reason", "[workload]") {
  auto expect = [](const nlohmann::json& par, const std::string& fragment) {
    try {
      make_scenario(par, {{"seq_length", 4096}}, "llama3-8b", 2);
      FAIL("accepted");
    } catch (const InputError& error) {
      CHECK_THAT(error.what(), Catch::Contains(fragment));
    }
  };
  expect({{"tensor_model_parallel_size", 3}, {"global_batch_size", 16}}, "not divisible by TP x PP x CP");
  expect({{"tensor_model_parallel_size", 16}, {"global_batch_size", 16}}, "key/value heads");
  expect({{"global_batch_size", 17}}, "multiple of micro_batch_size");
  expect({{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", 2}, {"global_batch_size", 24}},
         "not a multiple of pipeline_model_parallel_size");
  expect({{"expert_model_parallel_size", 2}, {"global_batch_size", 16}}, "mixture-of-experts");
}

TEST_CASE("GEMM times reproduce the H100 and GB200 cuBLASLt microbenchmarks", "[compute]") {
  // Calibration cases hw-azure-nd_h100_v5-microbench and hw-azure-nd-gb200-v6-microbench (FP8).
  struct Point {
    std::string gpu;
    double m, n, k, tflops, tolerance;
  };
  const std::vector<Point> points = {{"H100-SXM", 16384, 16384, 16384, 1377.3, 0.02}, {"H100-SXM", 8192, 8192, 8192, 1290.1, 0.08},
                                     {"H100-SXM", 4096, 4096, 4096, 1216.9, 0.08},    {"H100-SXM", 2048, 2048, 2048, 1011.3, 0.08},
                                     {"H100-SXM", 6144, 12288, 12288, 1351.4, 0.05},  {"H100-SXM", 802816, 192, 768, 663.8, 0.20},
                                     {"H200-SXM", 16384, 16384, 16384, 1366.3, 0.02}, {"GB200", 16384, 16384, 16384, 2906.9, 0.02},
                                     {"GB200", 4096, 4096, 4096, 2834.6, 0.10},
                                     // Small GEMMs: one wave of 128-row tiles on Hopper (no 64-row tiles).
                                     {"H100-SXM", 1024, 1024, 1024, 274.1, 0.12},     {"H100-SXM", 1024, 2145, 1024, 410.7, 0.08},
                                     {"H200-SXM", 1024, 1024, 1024, 290.8, 0.08}};
  for (const auto& p : points) {
    INFO(p.gpu << " " << p.m << "x" << p.n << "x" << p.k);
    // One GPU alone at the microbenchmark's clock (sustained_clock_fraction is relative to it).
    hardware::GpuSpec gpu = test::catalog().gpu(p.gpu);
    gpu.sustained_clock_fraction = 1.0;
    compute::ComputeModel model(gpu);
    const compute::GemmShape shape{p.m, p.n, p.k};
    const double tflops = shape.flops() / model.gemm_s(shape, compute::MathPrecision::fp8) / 1e12;
    CHECK(tflops == Approx(p.tflops).epsilon(p.tolerance));
  }
  compute::ComputeModel h100(test::catalog().gpu("H100-SXM"));
  // Each output tile pays gemm_tile_k_overhead K elements of work beyond its K loop: at fixed M and N
  // (one shape of DeepGEMM's H800 table, whole waves either way) throughput at depth K scales as K / (K + K0).
  const double k0 = test::catalog().gpu("H100-SXM").gemm_tile_k_overhead;
  REQUIRE(k0 > 0);
  auto tflops_at = [&](double k) {
    const compute::GemmShape shape{4096, 7168, k};
    return shape.flops() / (h100.gemm_s(shape, compute::MathPrecision::fp8) - compute::kGemmFixedOverhead_s);
  };
  CHECK(tflops_at(2048) / tflops_at(16384) == Approx((2048 / (2048 + k0)) / (16384 / (16384 + k0))).epsilon(1e-9));
  // Fewer SMs (an overlapped communication kernel) never makes a GEMM faster; more bytes never make a kernel faster.
  CHECK(h100.gemm_s({8192, 8192, 8192}, compute::MathPrecision::fp8, 16) > h100.gemm_s({8192, 8192, 8192}, compute::MathPrecision::fp8));
  CHECK(h100.memory_s(2e9) > h100.memory_s(1e9));
  CHECK(h100.memory_s(2.9e9) == Approx(1e-3).epsilon(0.05));  // STREAM ~2.9-3.0 TB/s
}

TEST_CASE("attention efficiency follows cuDNN's causal curve over sequence length on Hopper", "[compute]") {
  // Transformer Engine runs cuDNN's fused attention on Hopper and later. cuDNN-frontend's
  // sdpa_benchmark_training on H200 (cuDNN 9.19, Llama 3.1's 64 heads / 8 KV heads, head dim 128, causal
  // forward, TFLOPS): 2k 484, 4k 591, 8k 644, 16k 673, 32k 688. The curve (its e_max from FlashAttention-3
  // on H100, which the H100 training rows were calibrated with) runs 5-8 % below this newer cuDNN, evenly:
  // the shape over sequence length is what the causal and span terms set.
  const std::vector<std::pair<double, double>> causal_tflops{{2048, 484}, {4096, 591}, {8192, 644}, {16384, 673}, {32768, 688}};
  const double peak_tflops = test::catalog().gpu("H200-SXM").bf16_dense_flops / 1e12;
  double previous = 0, lowest = 10, highest = 0;
  for (const auto& [seq, measured] : causal_tflops) {
    const double predicted = compute::attention_efficiency(90, false, seq / 2) * peak_tflops;
    INFO("seq " << seq << ": " << predicted << " TFLOPS against " << measured);
    CHECK(std::abs(predicted / measured - 1) < 0.10);
    CHECK(predicted > previous);  // longer loops amortise the fixed cost
    previous = predicted;
    lowest = std::min(lowest, predicted / measured);
    highest = std::max(highest, predicted / measured);
  }
  CHECK(highest / lowest < 1.05);
  // No span: the long-sequence asymptote; the backward keeps FA3's backward/forward ratio.
  CHECK(compute::attention_efficiency(90, false, 0) > compute::attention_efficiency(90, false, 1e6) - 1e-3);
  CHECK(compute::attention_efficiency(90, true, 4096) / compute::attention_efficiency(90, false, 4096) == Approx(0.535 / 0.663));
  // The trace gives each attention kernel its causal span, split over the CP steps.
  for (int cp : {1, 2}) {
    auto s = make_scenario({{"context_parallel_size", cp}, {"global_batch_size", 8 / cp}}, {{"seq_length", 4096}},
                           nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 2}}, 1);
    std::vector<int> rank_gpu(8);
    for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
    int attention = 0;
    for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
      if (n.kernel != Kernel::attention_fwd && n.kernel != Kernel::attention_bwd) continue;
      CHECK(n.attention_span == Approx(2048.0 / cp));
      CHECK(n.attention_steps == cp);
      ++attention;
    }
    CHECK(attention > 0);
  }
}

TEST_CASE("attention below head dim 128 runs at cuDNN's published lower efficiency", "[compute]") {
  // FlashAttention-3 paper (Shah et al. 2024), H100 SXM5, BF16, seq 16k, cuDNN series: forward 413 TFLOPS at
  // head dim 64 against 595 at 128, backward 433 against 518.
  CHECK(compute::attention_head_dim_factor(false, 64) == Approx(413.0 / 595.0).epsilon(0.01));
  CHECK(compute::attention_head_dim_factor(true, 64) == Approx(433.0 / 518.0).epsilon(0.01));
  // 128 is the curve's own head dim; where it is not known nothing changes; above it the forward keeps its
  // rate and the backward slows (attention_kernel_test.cpp).
  CHECK(compute::attention_head_dim_factor(false, 192) == 1.0);
  for (bool backward : {false, true}) {
    CHECK(compute::attention_head_dim_factor(backward, 128) == 1.0);
    CHECK(compute::attention_head_dim_factor(backward, 0) == 1.0);
    // Up to 128 a wider head never runs a pair slower per FLOP.
    CHECK(compute::attention_head_dim_factor(backward, 96) > compute::attention_head_dim_factor(backward, 64));
  }
  // The kernel time scales by the factor's inverse (less the fixed launch cost).
  compute::ComputeModel h100(test::catalog().gpu("H100-SXM"));
  const double flops = 1e12, t128 = h100.attention_s(flops, false, 2048, 0, false, 128) - compute::kGemmFixedOverhead_s;
  const double t64 = h100.attention_s(flops, false, 2048, 0, false, 64) - compute::kGemmFixedOverhead_s;
  CHECK(t64 / t128 == Approx(1.0 / compute::attention_head_dim_factor(false, 64)).epsilon(1e-9));
  // FlashAttention-2 (and Ampere, whose fused kernel it is) keeps its own curve: the factor is cuDNN's on Hopper+.
  CHECK(h100.attention_s(flops, false, 2048, 0, true, 64) == h100.attention_s(flops, false, 2048, 0, true, 128));
  compute::ComputeModel a100(test::catalog().gpu("A100-SXM4-80GB"));
  CHECK(a100.attention_s(flops, false, 2048, 0, false, 64) == a100.attention_s(flops, false, 2048, 0, false, 128));
  // A head dim below 1 (bad input the readers refuse) still gives a finite time.
  CHECK(std::isfinite(h100.attention_s(flops, false, 2048, 0, false, 1e-300)));
  // The trace carries each model's head dim: GPT-OSS 64; DeepSeek-V3's MLA the mean of its Q/K (192) and V (128).
  CHECK(preset("gpt-oss-120b").attention_head_dim() == 64.0);
  CHECK(preset("deepseek-v3").attention_head_dim() == 160.0);
  auto s = make_scenario({{"expert_model_parallel_size", 8}, {"global_batch_size", 8}}, {{"seq_length", 1024}},
                         nlohmann::json{{"base", "gpt-oss-120b"}, {"num_hidden_layers", 2}, {"layer_types", {"sliding_attention", "full_attention"}}}, 1);
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  int attention = 0;
  for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
    if (n.kernel != Kernel::attention_fwd && n.kernel != Kernel::attention_bwd) continue;
    CHECK(n.attention_head_dim == 64.0);
    ++attention;
  }
  CHECK(attention > 0);
}

TEST_CASE("FP8 attention: FP8 nodes in FP8 layers, a window's backward over the whole causal span, the refusals", "[workload]") {
  const nlohmann::json model{{"base", "gpt-oss-120b"}, {"num_hidden_layers", 2}, {"layer_types", {"sliding_attention", "full_attention"}}};
  const nlohmann::json par{{"expert_model_parallel_size", 8}, {"global_batch_size", 8}};
  const nlohmann::json fp8{{"seq_length", 4096}, {"precision", "fp8"}, {"fp8_dot_product_attention", true}};
  auto on = [](const std::string& instance, const nlohmann::json& parallelism, const nlohmann::json& training, const nlohmann::json& m) {
    return make_scenario(parallelism, training, m, 1, instance);
  };
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  struct Pass {
    std::vector<double> spans, flops;
    std::vector<bool> fp8;
  };
  auto passes = [&](const Scenario& s) {
    std::map<std::string, Pass> by_name;  // attn.fwd / attn.bwd -> per layer in trace order, rank 0
    for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
      if (n.rank != 0 || (n.kernel != Kernel::attention_fwd && n.kernel != Kernel::attention_bwd)) continue;
      auto& p = by_name[n.name];
      p.spans.push_back(n.attention_span);
      p.flops.push_back(n.flops);
      p.fp8.push_back(n.fp8);
    }
    return by_name;
  };
  const auto with = passes(on("p6-b200.48xlarge", par, fp8, model));
  nlohmann::json plain = fp8;
  plain["fp8_dot_product_attention"] = false;
  const auto without = passes(on("p6-b200.48xlarge", par, plain, model));
  // Forward: layer 0's window (about 128 keys per query) either way; backward: FP8's runs the causal span.
  REQUIRE(with.at("attn.fwd").spans.size() == 2);
  CHECK(with.at("attn.fwd").spans == without.at("attn.fwd").spans);
  CHECK(with.at("attn.fwd").flops == without.at("attn.fwd").flops);
  CHECK(without.at("attn.fwd").spans[0] < 128);
  const auto& bwd = with.at("attn.bwd");  // backward runs the layers in reverse: the windowed layer last
  REQUIRE(bwd.spans.size() == 2);
  CHECK(bwd.spans[1] == Approx(bwd.spans[0]));  // the windowed layer's backward spans what the full layer's does
  CHECK(bwd.flops[1] == Approx(bwd.flops[0]));  // and executes its FLOPs
  CHECK(without.at("attn.bwd").spans[1] < 128);
  CHECK(without.at("attn.bwd").flops[1] < bwd.flops[1] / 10);
  for (const auto& [name, pass] : with)
    for (bool f : pass.fp8) CHECK(f);
  for (const auto& [name, pass] : without)
    for (bool f : pass.fp8) CHECK_FALSE(f);
  // A layer kept in BF16 keeps BF16 attention (and its window in the backward).
  nlohmann::json first_bf16 = fp8;
  first_bf16["first_last_layers_bf16"] = true;
  first_bf16["num_layers_at_start_in_bf16"] = 1;
  first_bf16["num_layers_at_end_in_bf16"] = 0;
  const auto mixed = passes(on("p6-b200.48xlarge", par, first_bf16, model));
  CHECK(mixed.at("attn.fwd").fp8 == std::vector<bool>{false, true});
  CHECK(mixed.at("attn.bwd").fp8 == std::vector<bool>{true, false});
  CHECK(mixed.at("attn.bwd").spans[1] < 128);
  // Refused, each with the reason: without FP8 layers, on a stack without cuDNN's fused attention, on MLA's
  // wide heads, with a window below Blackwell, and with core attention recomputed through Megatron's checkpoint.
  nlohmann::json bf16 = fp8;
  bf16["precision"] = "bf16";
  CHECK_THROWS_WITH(on("p6-b200.48xlarge", par, bf16, model), Catch::Matchers::Contains("only with precision = \"fp8\""));
  nlohmann::json flash2 = fp8;
  flash2["framework"] = "torchtitan";
  const nlohmann::json dense{{"base", "llama3-8b"}, {"num_hidden_layers", 2}};
  CHECK_THROWS_WITH(on("p6-b200.48xlarge", {{"global_batch_size", 8}}, flash2, dense), Catch::Matchers::Contains("FP8 attention is cuDNN's fused kernel"));
  CHECK_THROWS_WITH(on("p6-b200.48xlarge", par, fp8, nlohmann::json{{"base", "deepseek-v3"}, {"num_hidden_layers", 2}}),
                    Catch::Matchers::Contains("modelled up to 128"));
  CHECK_THROWS_WITH(on("p5.48xlarge", par, fp8, model), Catch::Matchers::Contains("sliding-window layers"));
  CHECK_NOTHROW(on("p5.48xlarge", {{"global_batch_size", 8}}, fp8, dense));  // no window: Hopper's FP8 attention
  nlohmann::json recompute = fp8;
  recompute["recompute_granularity"] = "selective";
  recompute["recompute_modules"] = {"core_attn"};
  CHECK_THROWS_WITH(on("p6-b200.48xlarge", par, recompute, model), Catch::Matchers::Contains("tensor_parallel.checkpoint"));
}

TEST_CASE("backward FP8 GEMMs pay the split accumulator on Hopper only", "[compute]") {
  const compute::GemmShape shape{8192, 8192, 8192};
  const auto fp8 = compute::MathPrecision::fp8;
  compute::ComputeModel h100(test::catalog().gpu("H100-SXM"));
  compute::ComputeModel b200(test::catalog().gpu("B200"));
  // Compute-bound: the tensor-core part (time less the fixed overhead) grows by the fast-accumulation
  // speedup, 1.15 (pytorch/ao #2377: 1.1-1.2x); BF16 and Blackwell have no fast mode.
  const double fast = h100.gemm_s(shape, fp8) - compute::kGemmFixedOverhead_s;
  const double split = h100.gemm_s(shape, fp8, 0, true) - compute::kGemmFixedOverhead_s;
  CHECK(split / fast == Approx(1.15).epsilon(1e-9));
  CHECK(h100.gemm_s(shape, compute::MathPrecision::bf16, 0, true) == h100.gemm_s(shape, compute::MathPrecision::bf16));
  CHECK(b200.gemm_s(shape, fp8, 0, true) == b200.gemm_s(shape, fp8));
  // The trace marks exactly the FP8 data- and weight-gradient GEMMs.
  auto s = make_scenario({{"tensor_model_parallel_size", 2}, {"sequence_parallel", true}, {"global_batch_size", 8}},
                         {{"seq_length", 2048}, {"precision", "fp8"}}, nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 2}}, 1);
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  int backward = 0, forward = 0;
  for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
    if (n.kernel != Kernel::gemm || !n.fp8) continue;
    const bool is_backward = n.name.find(".dgrad") != std::string::npos || n.name.find(".wgrad") != std::string::npos;
    INFO(n.name);
    CHECK(n.fp8_split_accumulator == is_backward);
    (is_backward ? backward : forward) += 1;
  }
  CHECK(backward == 2 * forward);  // per linear layer: one forward, one dgrad and one wgrad
}

TEST_CASE("an attention backward executes 2.5x its forward's FLOPs, the causal 4 b s^2 q / 2", "[workload]") {
  // Forward: QK^T and PV, 2 matmuls of 2 b s^2 q FLOPs each, halved by the causal mask. Backward: QK^T
  // again, dV, dP, dQ, dK, 5 matmuls (FlashAttention's benchmark counts bwd = 2.5 x fwd), the count the
  // efficiency constants are quoted on.
  const int seq = 2048;
  auto s = make_scenario({{"global_batch_size", 8}}, {{"seq_length", seq}}, nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 2}}, 1);
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  const double q_dim = 4096;  // Llama-3-8B: 32 heads x 128
  const double forward_flops = 4.0 * seq * double(seq) * q_dim / 2;
  int fwd = 0, bwd = 0;
  for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
    if (n.kernel == Kernel::attention_fwd) {
      CHECK(n.flops == Approx(forward_flops));
      ++fwd;
    }
    if (n.kernel == Kernel::attention_bwd) {
      CHECK(n.flops == Approx(2.5 * forward_flops));
      ++bwd;
    }
  }
  CHECK(fwd > 0);
  CHECK(bwd == fwd);
}

TEST_CASE("ring-exchange TP overlap runs a GEMM as TP chunks; bulk overlaps keep it whole", "[workload]") {
  // TE userbuffers (MEGATRON-NOTES.md section 4): AG->GEMM is a ring exchange of tp chunks of m/tp rows;
  // GEMM->RS is a ring exchange in FP8 and a 4-split pipeline in BF16; the backward's second input
  // all-gather and the dgrad reduce-scatter are bulk overlaps of the whole GEMM.
  const int tp = 4;
  for (const std::string precision : {"bf16", "fp8"}) {
    auto s = make_scenario({{"tensor_model_parallel_size", tp}, {"sequence_parallel", true}, {"global_batch_size", 8}},
                           {{"seq_length", 2048}, {"precision", precision}, {"tp_comm_overlap", true}},
                           nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 1}}, 1);
    std::vector<int> rank_gpu(8);
    for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
    std::map<std::string, int> chunks;
    std::map<std::string, double> rows;
    for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
      if (n.kernel == Kernel::gemm) chunks[n.name] = n.repeat, rows[n.name] = n.m * n.repeat;
    }
    INFO(precision);
    const double tokens = 2048;  // micro-batch 1, no CP: the gathered sequence
    for (const std::string ag_first : {"qkv", "fc1", "proj.dgrad", "fc2.dgrad"}) {
      CHECK(chunks[ag_first] == tp);
      CHECK(rows[ag_first] == tokens);  // the chunks cover the gathered rows exactly
    }
    for (const std::string rs_after : {"proj", "fc2"}) CHECK(chunks[rs_after] == (precision == "fp8" ? tp : 4));
    for (const std::string bulk : {"qkv.dgrad", "fc1.dgrad", "qkv.wgrad", "fc1.wgrad"}) CHECK(chunks[bulk] == 1);
  }
}

TEST_CASE("selective MLP recompute runs the dense MLP forward again, with its TP collectives", "[workload]") {
  // Megatron checkpoints the MLP module: in backward its forward runs again whole, FC1 after the SP
  // all-gather of its input, the activation, FC2 before its reduce-scatter.
  const int tp = 2, layers = 2;
  auto s = make_scenario({{"tensor_model_parallel_size", tp}, {"sequence_parallel", true}, {"global_batch_size", 4}},
                         {{"seq_length", 2048}, {"recompute_granularity", "selective"}, {"recompute_modules", {"mlp"}}},
                         nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", layers}}, 1);
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  std::map<std::string, int> count;
  std::map<std::string, double> flops, comm_bytes;
  for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
    if (n.rank != 0) continue;
    ++count[n.name];
    flops[n.name] += n.flops;
    comm_bytes[n.name] += n.comm_bytes;
  }
  const int passes = layers * 4 / (8 / tp);  // layers x micro-batches per replica
  CHECK(count["fc1.recompute"] == passes);
  CHECK(count["fc2.recompute"] == passes);
  CHECK(flops["fc1.recompute"] == Approx(flops["fc1"]));
  CHECK(flops["fc2.recompute"] == Approx(flops["fc2"]));
  CHECK(count["fc1.recompute.ag"] == passes);
  CHECK(comm_bytes["fc1.recompute.ag"] == Approx(comm_bytes["fc1.ag"]));
  CHECK(count["fc2.recompute.rs"] == passes);
  CHECK(comm_bytes["fc2.recompute.rs"] == Approx(comm_bytes["fc2.rs"]));
}

TEST_CASE("mla_up_proj recompute keeps MLA's latents instead of Q, K, V and runs the up-projections again", "[workload]") {
  // DeepSeek-V3's attention at TP2: 128 heads of 192 query/key and 128 value dimensions, latents of
  // 1536 (Q) and 512 + 64 (KV, with the shared RoPE key). Per token the attention backward needs
  // Q, K, V: (128 x 192 x 2 + 128 x 128) / 2 elements on a TP rank; recompute keeps 1536 + 512 + 64.
  const nlohmann::json model{{"base", "deepseek-v3"}, {"num_hidden_layers", 4}, {"first_k_dense_replace", 4}, {"num_nextn_predict_layers", 0}};
  const nlohmann::json par{{"tensor_model_parallel_size", 2}, {"sequence_parallel", true}, {"global_batch_size", 4}};
  auto scenario = [&](const nlohmann::json& modules) {
    return make_scenario(par, {{"seq_length", 4096}, {"recompute_granularity", "selective"}, {"recompute_modules", modules}}, model, 1);
  };
  const double tokens = 4096;
  const double qkv = (128.0 * 192 * 2 + 128.0 * 128) / 2, latents = 1536 + 512 + 64;
  CHECK(activation_bytes_per_layer(scenario({"core_attn"}), 0) - activation_bytes_per_layer(scenario({"core_attn", "mla_up_proj"}), 0) ==
        Approx(2 * tokens * (qkv - latents)));
  // In backward the up-projections run again, with the forward's FLOPs, once per layer and micro-batch.
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  std::map<std::string, int> count;
  std::map<std::string, double> flops;
  for (const auto& n : build_trace(scenario({"mla_up_proj"}), rank_gpu, false).nodes) {
    if (n.rank != 0) continue;
    ++count[n.name];
    flops[n.name] += n.flops;
  }
  const int passes = 4 * 4 / (8 / 2);  // layers x micro-batches per replica
  CHECK(count["mla.kv_up.recompute"] == passes);
  CHECK(count["mla.q_up.recompute"] == passes);
  CHECK(flops["mla.kv_up.recompute"] == Approx(flops["mla.kv_up"]));
  CHECK(flops["mla.q_up.recompute"] == Approx(flops["mla.q_up"]));
  // Only models with latent attention have up-projections to recompute.
  CHECK_THROWS_WITH(make_scenario(par, {{"recompute_granularity", "selective"}, {"recompute_modules", {"mla_up_proj"}}},
                                  nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 2}}, 1),
                    Catch::Matchers::Contains("mla_up_proj needs a model with multi-head latent attention"));
}

TEST_CASE("first_last_layers_bf16 runs the first and last layers' GEMMs in BF16; the FP8 recipe sets the quantization bytes",
          "[workload]") {
  const int layers = 4, microbatches = 2;
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", layers}};
  const nlohmann::json par{{"global_batch_size", 8 * microbatches}};
  auto trace_of = [&](const nlohmann::json& training) {
    std::vector<int> rank_gpu(8);
    for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
    return build_trace(make_scenario(par, training, model, 1), rank_gpu, false);
  };
  const nlohmann::json fp8{{"seq_length", 2048}, {"precision", "fp8"}};
  nlohmann::json ends_bf16 = fp8;
  ends_bf16["first_last_layers_bf16"] = true;
  // The forward QKV GEMMs in trace order: layers 0..3 of each micro-batch; layer 0 and 3 in BF16.
  std::vector<bool> qkv_fp8;
  for (const auto& n : trace_of(ends_bf16).nodes) {
    if (n.rank == 0 && n.name == "qkv") qkv_fp8.push_back(n.fp8);
  }
  REQUIRE(qkv_fp8.size() == static_cast<std::size_t>(layers * microbatches));
  for (int i = 0; i < layers * microbatches; ++i) {
    const int layer = i % layers;
    INFO("layer " << layer);
    CHECK(qkv_fp8[i] == (layer != 0 && layer != layers - 1));
  }
  nlohmann::json three_at_start = ends_bf16;
  three_at_start["num_layers_at_start_in_bf16"] = 3;
  three_at_start["num_layers_at_end_in_bf16"] = 0;
  const Scenario start3 = make_scenario(par, three_at_start, model, 1);
  CHECK_FALSE(start3.training.layer_in_fp8(2, layers));
  CHECK(start3.training.layer_in_fp8(3, layers));
  // A BF16 layer keeps its GEMM inputs in BF16: more activation memory than an FP8 layer.
  const Scenario ends = make_scenario(par, ends_bf16, model, 1);
  CHECK(activation_bytes_per_layer(ends, 0) > activation_bytes_per_layer(ends, 1));
  CHECK(activation_bytes_per_layer(ends, 1) == Approx(activation_bytes_per_layer(make_scenario(par, fp8, model, 1), 1)));
  // Quantizing a GEMM input: current (tensorwise) scaling reads it once more for the amax than delayed
  // scaling: 6 against 4 bytes per element. (The last micro-batch's QKV: the first one also quantizes
  // the weight, see the next test.)
  auto qkv_bytes = [&](const nlohmann::json& training) {
    double bytes = 0;
    for (const auto& n : trace_of(training).nodes) {
      if (n.name == "qkv") bytes = n.bytes / (n.m * n.k);
    }
    return bytes;
  };
  nlohmann::json delayed = fp8;
  delayed["fp8_recipe"] = "delayed";
  CHECK(qkv_bytes(fp8) == Approx(6.0));
  CHECK(qkv_bytes(delayed) == Approx(4.0));
}

TEST_CASE("Transformer Engine quantizes the FP8 weights once per step, or at every micro-batch without the transpose cache",
          "[workload]") {
  const int microbatches = 3;
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", 2}};
  const nlohmann::json par{{"global_batch_size", 8 * microbatches}};
  // Llama 3 8B's QKV weight: (4096 + 2 x 8 x 128) x 4096 elements; its input 2048 tokens x 4096.
  const double weight = (4096.0 + 2 * 8 * 128) * 4096, input = 2048.0 * 4096;
  auto qkv_bytes = [&](const nlohmann::json& training) {
    std::vector<int> rank_gpu(8);
    for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
    std::vector<double> bytes;  // the forward QKV of layer 0 in each micro-batch (layers 0, 1 in trace order)
    int seen = 0;
    for (const auto& n : build_trace(make_scenario(par, training, model, 1), rank_gpu, false).nodes) {
      if (n.rank == 0 && n.name == "qkv" && seen++ % 2 == 0) bytes.push_back(n.bytes);
    }
    return bytes;
  };
  const nlohmann::json fp8{{"seq_length", 2048}, {"precision", "fp8"}};
  // Cached: the first micro-batch quantizes input and weight (6 bytes per element under current scaling),
  // the others only their input.
  auto cached = qkv_bytes(fp8);
  REQUIRE(cached.size() == microbatches);
  CHECK(cached[0] == Approx(6.0 * (input + weight)));
  for (int mb = 1; mb < microbatches; ++mb) CHECK(cached[mb] == Approx(6.0 * input));
  // disable_parameter_transpose_cache: every micro-batch quantizes the weight again.
  nlohmann::json uncached = fp8;
  uncached["disable_parameter_transpose_cache"] = true;
  for (double b : qkv_bytes(uncached)) CHECK(b == Approx(6.0 * (input + weight)));
  // FP8 parameters are FP8 already: on Hopper only the transpose for the data-gradient GEMM (read 1 +
  // write 1 byte per element), made once per step whatever the cache flag says (TE rebuilds it only when
  // the optimizer step invalidated it); Blackwell's FP8 GEMMs take non-TN layouts and need none.
  nlohmann::json fp8_params = uncached;
  fp8_params["fp8_param_gather"] = true;
  const auto with_params = qkv_bytes(fp8_params);
  REQUIRE(with_params.size() == microbatches);
  CHECK(with_params[0] == Approx(6.0 * input + 2.0 * weight));
  for (int mb = 1; mb < microbatches; ++mb) CHECK(with_params[mb] == Approx(6.0 * input));
  const Scenario with_fp8_params = make_scenario(par, fp8_params, model, 1);
  CHECK(weight_cast_bytes_per_element(with_fp8_params.training, 90, true) == 2.0);
  CHECK(weight_cast_bytes_per_element(with_fp8_params.training, 90, false) == 0.0);
  CHECK(weight_cast_bytes_per_element(with_fp8_params.training, 100, true) == 0.0);
  CHECK(weight_cast_bytes_per_element(with_fp8_params.training, 103, true) == 0.0);
  // LoRA's frozen base weights keep their transpose: no cast at all.
  nlohmann::json lora = fp8_params;
  lora["workload"] = "lora";
  lora["lora"] = {{"rank", 16}, {"target_modules", {"linear_qkv"}}};
  CHECK(weight_cast_bytes_per_element(make_scenario(par, lora, model, 1).training, 90, true) == 0.0);
  // BF16 weights (no FP8 parameters) of frozen LoRA bases are cast as any BF16 weight.
  nlohmann::json lora_bf16_weights = lora;
  lora_bf16_weights.erase("fp8_param_gather");
  CHECK(weight_cast_bytes_per_element(make_scenario(par, lora_bf16_weights, model, 1).training, 90, false) == Approx(6.0));
  nlohmann::json bf16 = uncached;
  bf16["precision"] = "bf16";
  for (double b : qkv_bytes(bf16)) CHECK(b == 0.0);
  // Under TP comm overlap the GEMM runs in row chunks that share the weight: its TP shard is cast once.
  const nlohmann::json tp2{{"global_batch_size", 4 * microbatches}, {"tensor_model_parallel_size", 2}, {"sequence_parallel", true}};
  nlohmann::json overlapped = fp8;
  overlapped["tp_comm_overlap"] = true;
  std::vector<int> rank_gpu(8);
  for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
  bool found = false;
  for (const auto& n : build_trace(make_scenario(tp2, overlapped, model, 1), rank_gpu, false).nodes) {
    if (n.rank != 0 || n.name != "qkv") continue;
    REQUIRE(n.repeat == 2);
    CHECK(n.bytes == Approx(6.0 * (input + weight / 2)));
    found = true;
    break;
  }
  REQUIRE(found);
  // The casts cost time: the step without the cache is longer.
  auto step_s = [&](const nlohmann::json& training) {
    const Scenario s = make_scenario(par, training, model, 1);
    const auto cluster = topology::build_cluster_graph(s.cluster);
    return training::simulate_step(build_trace(s, topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed), false), cluster)
        .step_time_s;
  };
  CHECK(step_s(uncached) > step_s(fp8));
}

TEST_CASE("FP8 recipe and MoE dispatcher options are checked", "[workload]") {
  const nlohmann::json model{{"base", "llama3-8b"}, {"num_hidden_layers", 4}};
  const nlohmann::json par{{"global_batch_size", 8}};
  CHECK_THROWS_WITH(make_scenario(par, {{"precision", "fp8"}, {"fp8_recipe", "mxfp8"}}, model, 1),
                    Catch::Matchers::Contains("fp8_recipe") && Catch::Matchers::Contains("Blackwell"));
  CHECK_THROWS_WITH(make_scenario(par, {{"fp8_recipe", "delayed"}}, model, 1), Catch::Matchers::Contains("only with precision"));
  CHECK_THROWS_WITH(make_scenario(par, {{"precision", "fp8"}, {"fp8_recipe", "hybrid"}}, model, 1),
                    Catch::Matchers::Contains("tensorwise"));
  CHECK_THROWS_WITH(make_scenario(par, {{"precision", "fp8"}, {"num_layers_at_start_in_bf16", 2}}, model, 1),
                    Catch::Matchers::Contains("first_last_layers_bf16"));
  CHECK_THROWS_WITH(make_scenario(par, {{"moe_token_dispatcher_type", "flex"}}, model, 1),
                    Catch::Matchers::Contains("mixture-of-experts"));
  CHECK_THROWS_WITH(make_scenario(par, {{"moe_flex_dispatcher_backend", "deepep"}}, model, 1),
                    Catch::Matchers::Contains("only with moe_token_dispatcher_type"));
  // Group-limited routing: the groups divide the experts and the chosen groups hold the top-k.
  const nlohmann::json moe{{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 2}};
  const nlohmann::json moe_par{{"expert_model_parallel_size", 8}, {"global_batch_size", 8}};
  nlohmann::json bad = moe;
  bad["n_group"] = 3;
  CHECK_THROWS_WITH(make_scenario(moe_par, {}, bad, 1), Catch::Matchers::Contains("n_group") && Catch::Matchers::Contains("divisor"));
  bad["n_group"] = 64;
  bad["topk_group"] = 2;  // 2 groups of 2 experts cannot hold the top-8
  CHECK_THROWS_WITH(make_scenario(moe_par, {}, bad, 1), Catch::Matchers::Contains("topk_group"));
}

TEST_CASE("a symmetric trace has one rank per stage and round-trips through JSON", "[workload]") {
  auto s = make_scenario({{"tensor_model_parallel_size", 2}, {"pipeline_model_parallel_size", 2}, {"global_batch_size", 16}},
                         {{"seq_length", 2048}}, nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 4}}, 2);
  std::vector<int> rank_gpu(16);
  for (int i = 0; i < 16; ++i) rank_gpu[i] = i;
  Trace trace = build_trace(s, rank_gpu, false);
  CHECK(trace.ranks == std::vector<int>{0, 8});
  Trace back = trace_from_json(trace_to_json(trace), "trace.json");
  REQUIRE(back.nodes.size() == trace.nodes.size());
  CHECK(back.comms.size() == trace.comms.size());
  for (std::size_t i = 0; i < trace.nodes.size(); i += 97) {
    CHECK(back.nodes[i].name == trace.nodes[i].name);
    CHECK(back.nodes[i].deps == trace.nodes[i].deps);
    CHECK(back.nodes[i].flops == trace.nodes[i].flops);
  }
  // Attention nodes keep their span and CP steps through JSON.
  auto cp2 = make_scenario({{"context_parallel_size", 2}, {"global_batch_size", 4}}, {{"seq_length", 2048}},
                           nlohmann::json{{"base", "llama3-8b"}, {"num_hidden_layers", 2}}, 1);
  std::vector<int> eight(8);
  for (int i = 0; i < 8; ++i) eight[i] = i;
  const Trace with_cp = build_trace(cp2, eight, false);
  const Trace cp_back = trace_from_json(trace_to_json(with_cp), "trace.json");
  int attention = 0;
  for (std::size_t i = 0; i < with_cp.nodes.size(); ++i) {
    if (with_cp.nodes[i].kernel != Kernel::attention_fwd) continue;
    CHECK(cp_back.nodes[i].attention_steps == 2);
    CHECK(cp_back.nodes[i].attention_span == with_cp.nodes[i].attention_span);
    ++attention;
  }
  CHECK(attention > 0);
  // Conservation: every send has its receive.
  int sends = 0, receives = 0;
  for (const auto& n : trace.nodes) {
    sends += n.type == NodeType::send;
    receives += n.type == NodeType::recv;
  }
  CHECK(sends == receives);
  CHECK(sends == 2 * 4);  // 16 / (1 x DP 4) = 4 micro-batches: one activation and one gradient across the one boundary
  // The model FLOPs the trace carries equal Megatron's per-token figure x tokens.
  CHECK(trace.model_flops_per_step == Approx(training_flops_per_token(s.model, 2048, padded_vocab(s.model.vocab, 2)).total() * 16 * 2048));
}
