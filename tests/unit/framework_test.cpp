// Software stacks (framework.hpp): each mechanism a stack selects, moved in isolation on one scenario, moves
// the step the way its closed form says: unfused attention by its score passes over HBM, FlashAttention-2
// by its lower efficiency, an unfused element-wise chain by its extra bytes, torch.compile back to the fused
// step, the eager host path only where the kernels are shorter than their issue, FSDP2 by its copies,
// DeepSpeed ZeRO-3 by one gather per parameter tensor, torch op-level checkpointing by the ops it runs
// again. Stack files: the shipped ones load, defaults fill only what the scenario leaves out, and bad
// names and releases are refused with the known ones listed.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/framework.hpp"
#include "fmsim/workload/moe_host.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"
#include "workload/trace_builder_internal.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

struct Shape {
  int layers = 2, seq = 4096, mbs = 1, nodes = 1;
  std::string sharding = "optim";
  std::string recompute = "none";
  nlohmann::json model = nlohmann::json::object();
};

/// Llama 3 8B layers on p5 (8 H100 per node), data parallel over every GPU, one micro-batch per step.
Scenario scenario(const Shape& shape) {
  nlohmann::json model = {{"base", "llama3-8b"}, {"num_hidden_layers", shape.layers}};
  model.merge_patch(shape.model);
  const int gpus = 8 * shape.nodes;
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", shape.nodes}}},
      {"model", model},
      {"parallelism", {{"micro_batch_size", shape.mbs}, {"global_batch_size", gpus * shape.mbs},
                       {"data_parallel_sharding_strategy", shape.sharding}}},
      {"training", {{"seq_length", shape.seq}, {"precision", "bf16"}, {"recompute_granularity", shape.recompute}}}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

Trace trace_of(const Scenario& s) {
  auto cluster = topology::build_cluster_graph(s.cluster);
  return build_trace(s, topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed), false);
}

double step_s(const Scenario& s) {
  auto cluster = topology::build_cluster_graph(s.cluster);
  return training::simulate_step(trace_of(s), cluster).step_time_s;
}

std::vector<TraceNode> named(const Trace& t, const std::string& name) {
  std::vector<TraceNode> out;
  for (const auto& n : t.nodes) {
    if (n.rank == t.ranks.front() && n.name == name) out.push_back(n);
  }
  return out;
}

double hbm_s(const Scenario& s, double bytes) { return bytes / (s.cluster.gpu.hbm_bandwidth_Bps * s.cluster.gpu.hbm_achievable_fraction); }

Framework all_unfused() {
  Framework f;
  f.name = "test";
  f.fusions = Fusions{false, false, false, false, false, false};
  return f;
}

}  // namespace

TEST_CASE("stacks: unfused attention materialises the scores; its passes cost their bytes over HBM", "[workload][framework]") {
  const Scenario fused = scenario({});
  Scenario unfused = fused, dropout = fused;
  unfused.framework.attention = AttentionKernel::unfused;
  dropout.framework.attention = AttentionKernel::unfused;
  dropout.framework.attention_dropout = true;
  const Trace t = trace_of(dropout);
  // One pass over the scores of one rank: 32 heads x micro-batch 1 x 4096^2 x 2 bytes.
  const double scores = 32.0 * 4096 * 4096 * 2;
  REQUIRE(named(t, "attn.softmax").size() == 2);
  CHECK(named(t, "attn.softmax")[0].bytes == Approx(2 * scores));
  CHECK(named(t, "attn.dropout")[0].bytes == Approx(2 * scores + scores / 2));
  CHECK(named(t, "attn.bwd.softmax_bwd")[0].bytes == Approx(3 * scores));
  const auto qk = named(t, "attn.qk");
  REQUIRE(qk.size() == 2);
  CHECK(qk[0].m == 4096);
  CHECK(qk[0].n == 4096);  // the whole square: the causal mask is applied, not skipped
  CHECK(qk[0].k == 128);
  CHECK(qk[0].repeat == 32);
  CHECK(named(t, "attn.fwd").empty());
  // The dropout's forward and backward passes, alone on the critical path: (2.5 + 2.5) x scores per layer.
  const double with_dropout = step_s(dropout), without = step_s(unfused);
  const double expected = 2 * (hbm_s(dropout, 5 * scores) + 2 * compute::kMemoryKernelOverhead_s);
  CHECK(with_dropout - without == Approx(expected).epsilon(0.02));
  CHECK(without > step_s(fused));
}

TEST_CASE("stacks: FlashAttention-2 runs attention at FA2's efficiency", "[workload][framework]") {
  const auto& h100 = test::catalog().gpu("H100-SXM");
  const compute::ComputeModel model(h100);
  const double flops = 1e13;
  for (bool backward : {false, true}) {
    const double fa3 = model.attention_s(flops, backward, 0) - compute::kGemmFixedOverhead_s;
    const double fa2 = model.attention_s(flops, backward, 0, 0, true) - compute::kGemmFixedOverhead_s;
    const double ratio = backward ? 0.535 / compute::kFlash2HopperBackward : 0.663 / compute::kFlash2HopperForward;
    CHECK(fa2 / fa3 == Approx(ratio));
  }
  // Ampere's fused kernel is FA2 already.
  const compute::ComputeModel a100(test::catalog().gpu("A100-SXM4-80GB"));
  CHECK(a100.attention_s(flops, false, 0, 0, true) == Approx(a100.attention_s(flops, false, 0)));
  Scenario fa2 = scenario({});
  fa2.framework.attention = AttentionKernel::flash2;
  const Trace t = trace_of(fa2);
  REQUIRE(!named(t, "attn.fwd").empty());
  CHECK(named(t, "attn.fwd")[0].attention_flash2);
  CHECK(step_s(fa2) > step_s(scenario({})));
}

TEST_CASE("stacks: an unfused norm costs its extra passes; torch.compile fuses it back", "[workload][framework]") {
  const Scenario fused = scenario({});
  Scenario norm = fused;
  norm.framework.fusions.norm = false;
  const Trace t = trace_of(norm);
  const double elements = 4096.0 * 4096;  // tokens x hidden of one rank (no sequence parallelism)
  CHECK(named(t, "norm1")[0].bytes == Approx(4 * elements + 32 * elements));
  // Per layer: norm1 and norm2 forward (+32 bytes per element each), their backward (+48 each).
  const double extra = 2 * (2 * 32 + 2 * 48) * elements;
  CHECK(step_s(norm) - step_s(fused) == Approx(hbm_s(fused, extra)).epsilon(0.02));
  // Nothing fused, then torch.compile: the element-wise chains are one kernel each again.
  Scenario eager = fused, compiled = fused;
  eager.framework = all_unfused();
  compiled.framework = all_unfused();
  compiled.framework.torch_compile = true;
  CHECK(step_s(eager) > step_s(norm));
  CHECK(step_s(compiled) == Approx(step_s(fused)).epsilon(1e-9));
}

TEST_CASE("stacks: unfused cross-entropy and SwiGLU cost their extra bytes", "[workload][framework]") {
  const Scenario fused = scenario({});
  Scenario loss = fused, act = fused;
  loss.framework.fusions.cross_entropy = false;
  act.framework.fusions.bias_activation = false;
  const double tokens = 4096, vocab = padded_vocab(fused.model.vocab, 1), ffn = fused.model.ffn;
  CHECK(step_s(loss) - step_s(fused) == Approx(hbm_s(fused, (10 + 14) * tokens * vocab)).epsilon(0.02));
  // SwiGLU forward 10 against 6 bytes per FFN element, backward 18 against 12, on each of 2 layers.
  CHECK(step_s(act) - step_s(fused) == Approx(hbm_s(fused, 2 * (4 + 6) * tokens * ffn)).epsilon(0.02));
}

TEST_CASE("stacks: Megatron runs its eager RoPE where the fused kernel cannot take YaRN's attention factor", "[workload][framework]") {
  // GPT-OSS's rope_scaling (yarn, factor 32) on Llama 3 8B layers: attention factor 0.1 ln 32 + 1.
  Shape yarn;
  yarn.model = {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}}}};
  const Scenario fused = scenario({});
  const Scenario eager = scenario(yarn);
  CHECK(eager.model.rope_attention_factor == Approx(1.0 + 0.1 * std::log(32.0)));
  CHECK(fused.model.rope_attention_factor == 1.0);
  const double tokens = 4096, width = fused.model.q_dim() + fused.model.kv_dim();  // Q and K columns
  const Trace t = trace_of(eager);
  // Forward 24 bytes per element of Q and K against the fused kernel's 4; backward 26 against 4.
  CHECK(named(t, "rope")[0].bytes == Approx(24 * tokens * width));
  CHECK(named(t, "rope.bwd")[0].bytes == Approx(26 * tokens * width));
  CHECK(step_s(eager) - step_s(fused) == Approx(hbm_s(fused, 2 * (20 + 22) * tokens * width)).epsilon(0.02));
  // A stack whose fused RoPE applies the factor runs it fused again.
  Scenario factor_fused = eager;
  factor_fused.framework.fusions.rope_attention_factor = true;
  CHECK(named(trace_of(factor_fused), "rope")[0].bytes == Approx(4 * tokens * width));
  // DeepSeek's mscale / mscale_all_dim cancel: no factor, nothing unfused.
  Shape deepseek;
  deepseek.model = {{"rope_scaling", {{"type", "yarn"}, {"factor", 40.0}, {"mscale", 1.0}, {"mscale_all_dim", 1.0}}}};
  CHECK(scenario(deepseek).model.rope_attention_factor == Approx(1.0));
  Shape given;
  given.model = {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 8.0}, {"attention_factor", 1.2}}}};
  CHECK(scenario(given).model.rope_attention_factor == Approx(1.2));
  // An mscale_all_dim of 0 is not given (HF's `if mscale and mscale_all_dim`): 0.1 ln(factor) + 1.
  Shape zero;
  zero.model = {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 32.0}, {"mscale", 1.0}, {"mscale_all_dim", 0}}}};
  CHECK(scenario(zero).model.rope_attention_factor == Approx(1.0 + 0.1 * std::log(32.0)));
  Shape bad;
  bad.model = {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", -2.0}}}};
  CHECK_THROWS_WITH(scenario(bad), Catch::Contains("rope_scaling/factor") && Catch::Contains("positive"));
}

TEST_CASE("stacks: a clamped gated activation costs its split, clamps and concatenation", "[workload][framework]") {
  Shape clamped;
  clamped.model = {{"swiglu_limit", 7.0}};
  const Scenario plain = scenario({});
  const Scenario clamp = scenario(clamped);
  CHECK(clamp.model.activation_clamp == 7.0);
  const double tokens = 4096, ffn = plain.model.ffn;
  // Per element of FC1's output (2 x FFN): forward 8 bytes, backward 10, on each of 2 layers.
  CHECK(named(trace_of(clamp), "act")[0].bytes == Approx(named(trace_of(plain), "act")[0].bytes + 8 * tokens * 2 * ffn));
  CHECK(step_s(clamp) - step_s(plain) == Approx(hbm_s(plain, 2 * (8 + 10) * tokens * 2 * ffn)).epsilon(0.02));
  // Transformer Engine's op fuser clamps inside its fused activation.
  Scenario fuser = clamp;
  fuser.training.te_op_fuser = true;
  CHECK(step_s(fuser) == Approx(step_s(plain)).epsilon(1e-9));
  Shape bad;
  bad.model = {{"swiglu_limit", "seven"}};
  CHECK_THROWS_WITH(scenario(bad), Catch::Contains("swiglu_limit") && Catch::Contains("number"));
}


TEST_CASE("GPT-OSS: the shipped model file's YaRN factor and clamp reach its MoE layers' trace", "[workload][framework]") {
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
      {"model", {{"base", "gpt-oss-120b"}, {"num_hidden_layers", 2}, {"layer_types", {"sliding_attention", "full_attention"}}}},
      {"parallelism", {{"expert_model_parallel_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", 8}}},
      {"training", {{"seq_length", 4096}, {"precision", "bf16"}, {"moe_load_imbalance", 1.0},
                    {"recompute_granularity", "selective"}, {"recompute_modules", {"moe_act"}}}}};
  const Scenario s = scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
  CHECK(s.model.rope_attention_factor == Approx(1.0 + 0.1 * std::log(32.0)));  // HF rope_scaling: yarn, factor 32
  CHECK(s.model.activation_clamp == 7.0);                                      // HF swiglu_limit
  const Trace t = trace_of(s);
  // Megatron's eager RoPE: 24 bytes per element of Q and K.
  CHECK(named(t, "rope")[0].bytes == Approx(24.0 * 4096 * (s.model.q_dim() + s.model.kv_dim())));
  // Per MoE layer: 4,096 tokens x top-4 rows on each of EP 8 ranks, FC1 output 2 x 2,880 wide (balanced).
  const double fc1_elements = 4096.0 * 4 * 2 * 2880;
  REQUIRE(!named(t, "moe.act.clamp").empty());
  CHECK(named(t, "moe.act.clamp")[0].bytes == Approx(8 * fc1_elements));
  // Backward: the clamps' gradients and the split's concatenation (10), and the recomputed forward's (8).
  CHECK(named(t, "moe.act.clamp.bwd")[0].bytes == Approx((10 + 8) * fc1_elements));
  // Transformer Engine's op fuser clamps inside its fused activation: no clamp nodes.
  doc["training"]["use_transformer_engine_op_fuser"] = true;
  CHECK(named(trace_of(scenario_from_json(doc, "test.json", test::source_dir(), test::catalog())), "moe.act.clamp").empty());
}

TEST_CASE("stacks: the eager host path binds only where kernels are shorter than their issue", "[workload][framework]") {
  // A tiny model at a short sequence: each layer's kernels take microseconds, its issue tens of them.
  Shape tiny;
  tiny.seq = 256;
  tiny.model = {{"hidden_size", 256}, {"intermediate_size", 512}, {"num_attention_heads", 4}, {"num_key_value_heads", 4},
                {"vocab_size", 1024}};
  Scenario graphed = scenario(tiny), eager = graphed;
  eager.framework = all_unfused();
  eager.framework.graphs = GraphCoverage::none;
  eager.framework.host_launch = HostLaunch::eager;
  Scenario fused_eager = graphed;  // the same kernels as `graphed`, issued one by one
  fused_eager.framework.graphs = GraphCoverage::none;
  fused_eager.framework.host_launch = HostLaunch::eager;
  // Per layer: attention half 1 + 1 + 2 + 1 + 1 = 6 kernels, MLP half 1 + 1 + 2 + 1 = 5; backward twice that.
  const double host_per_layer = (6 + 5) * 3 * kEagerOpHost_s;
  const double graphed_s = step_s(graphed), fused_eager_s = step_s(fused_eager);
  CHECK(fused_eager_s > graphed_s);
  CHECK(fused_eager_s >= 2 * host_per_layer);
  CHECK(step_s(eager) > fused_eager_s);  // unfused chains: more kernels to issue
  // Llama 3 8B layers at 4,096 tokens: the host runs ahead, the step does not move.
  Scenario big = scenario({}), big_eager = big;
  big_eager.framework.graphs = GraphCoverage::none;
  big_eager.framework.host_launch = HostLaunch::eager;
  CHECK(step_s(big_eager) == Approx(step_s(big)).epsilon(0.005));
  // Through TE modules: 3 modules and 2 ops for attention, 2 and 2 for the MLP.
  Scenario te = big;
  te.framework.graphs = GraphCoverage::none;
  const Trace t = trace_of(te);
  REQUIRE(!named(t, "host.attention").empty());
  CHECK(named(t, "host.attention")[0].duration_s == Approx(3 * kTeModuleHost_s + 2 * kEagerOpHost_s));
  CHECK(named(t, "host.mlp")[0].duration_s == Approx(2 * kTeModuleHost_s + 2 * kEagerOpHost_s));
}

TEST_CASE("stacks: FSDP2 gathers per block and copies the gathered and reduced buffers", "[workload][framework]") {
  Shape shape;
  shape.sharding = "optim_grads_params";
  const Scenario megatron = scenario(shape);
  Scenario fsdp = megatron;
  fsdp.framework.dp_engine = DataParallelEngine::fsdp2;
  const Trace t = trace_of(fsdp);
  const auto counts = count_parameters(fsdp.model);
  const double layer = layer_parameters(fsdp.model, counts, 0);
  const auto copies = named(t, "param.copy_out");
  REQUIRE(copies.size() == 4);  // each of 2 layers, forward and backward
  CHECK(copies[1].bytes == Approx(2 * 2 * layer));
  REQUIRE(named(t, "grad.copy_in").size() >= 2);
  CHECK(named(t, "grad.copy_in")[0].bytes >= Approx((2 + 2) * layer));
  CHECK(step_s(fsdp) > step_s(megatron));
}

TEST_CASE("stacks: DeepSpeed ZeRO-3 gathers every parameter tensor when its layer runs", "[workload][framework]") {
  Shape shape;
  shape.sharding = "optim_grads_params";
  shape.nodes = 4;
  const Scenario megatron = scenario(shape);
  Scenario ds = megatron;
  ds.framework.dp_engine = DataParallelEngine::deepspeed;
  const Trace t = trace_of(ds);
  // Llama layers: QKV, projection, FC1, FC2 and two RMSNorm scales = 6 tensors, per layer and pass; the
  // embedding and the output layer once per pass.
  CHECK(named(t, "param.ag").size() == 2 * (2 * 6 + 1));
  CHECK(named(t, "param.ag.again").empty());  // no recompute: nothing is used twice in the backward
  CHECK(step_s(ds) > step_s(megatron));
  // Full recompute: between a tensor's recomputed forward and its backward the layer uses every later tensor
  // twice; past stage3_max_reuse_distance it was released and is gathered again. Llama layer tensors in
  // forward order: norm1 4096, QKV 25.2M, projection 16.8M, norm2 4096, FC1 117.4M, FC2 58.7M elements.
  shape.recompute = "full";
  Scenario full = scenario(shape);
  full.framework.dp_engine = DataParallelEngine::deepspeed;
  CHECK(named(trace_of(full), "param.ag.again").empty());  // DeepSpeed's 1e9: every distance is below it
  full.framework.max_reuse_distance = 1e8;  // FC1 (2 x 58.7M after it) and everything before it exceed this
  CHECK(named(trace_of(full), "param.ag.again").size() == 2 * 5);
  const auto again = detail::tensors_gathered_again({10, 20, 30}, 55);  // distances 100, 60, 0
  REQUIRE(again.size() == 2);
  CHECK(again[0] == 20);
  CHECK(again[1] == 10);
}

TEST_CASE("stacks: torch op-level checkpointing runs wk, wo, w3 and the element-wise ops again", "[workload][framework]") {
  Shape shape;
  shape.recompute = "selective";
  Scenario none = scenario({}), sac = scenario(shape);
  sac.framework.selective_recompute = SelectiveRecompute::torch_op_sac;
  sac.training.recompute_modules = RecomputeModules{false, false, false, false, false, false};
  const Trace t = trace_of(sac);
  REQUIRE(named(t, "sac.wk").size() == 2);
  CHECK(named(t, "sac.wk")[0].n == 1024);       // 8 KV heads x 128
  CHECK(named(t, "sac.fc1_gate")[0].n == 14336);  // w3
  CHECK(named(t, "attn.recompute").empty());     // attention is saved
  double again = 0;
  for (const auto& n : t.nodes) {
    if (n.rank == t.ranks.front() && n.name.rfind("sac.", 0) == 0) again += training::compute_node_s(n, sac.cluster.gpu);
  }
  CHECK(step_s(sac) - step_s(none) == Approx(again).epsilon(0.02));
}

TEST_CASE("stacks: the shipped files load; defaults fill only what the scenario leaves out", "[workload][framework]") {
  const auto dir = test::source_dir() / "configs" / "stacks";
  for (const auto& name : stack_names(dir)) {
    const Framework f = load_framework(name, "test.json", dir);
    CHECK(f.name == name);
    CHECK(!f.source.empty());
  }
  CHECK(load_framework("torchtitan@2025-03", "test.json", dir).display_name == "torchtitan 2025-03");
  CHECK(load_framework("deepspeed", "test.json", dir).dp_engine == DataParallelEngine::deepspeed);
  CHECK(load_framework("megatron-lm@2021", "test.json", dir).attention == AttentionKernel::unfused);
  nlohmann::json doc = {{"training", {{"framework", "torchtitan"}, {"tp_comm_overlap", true}}}, {"parallelism", nlohmann::json::object()}};
  apply_framework_defaults(load_framework("torchtitan", "test.json", dir), doc);
  CHECK(doc["training"]["grad_reduce_in_fp32"] == true);
  CHECK(doc["training"]["tp_comm_overlap"] == true);  // the scenario's own value
  try {
    load_framework("pytorch-lightning", "s.json", dir);
    FAIL("accepted an unknown stack");
  } catch (const InputError& e) {
    const std::string what = e.what();
    CHECK(what.find("s.json: /training/framework = 'pytorch-lightning'") != std::string::npos);
    CHECK(what.find("known stacks: deepspeed, megascale") != std::string::npos);
  }
  try {
    load_framework("nemo@23.01", "s.json", dir);
    FAIL("accepted an unknown release");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("known releases: 24.07") != std::string::npos);
  }
  // The default scenario names no stack: current Megatron-Core.
  CHECK(framework_display_name(scenario({})) == "Megatron-Core current");
}
