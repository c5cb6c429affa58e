// The host side of a MoE block (moe_host.hpp): the eager issue of its kernels and the dropless
// dispatcher's device-to-host sync once per layer and forward pass. Closed forms for the op counts, the
// trace's host stream, and the step: the mechanism slows a MoE step, and a micro-batch-1 step (short
// kernels, the host binds) more than a larger micro-batch's per token.
#include <catch2/catch.hpp>

#include <algorithm>

#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/moe_host.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

Scenario qwen_scenario(int mbs, const std::string& dispatcher = "alltoall") {
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
      {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 4}}},
      {"parallelism", {{"expert_model_parallel_size", 8}, {"micro_batch_size", mbs}, {"global_batch_size", 32}}},
      {"training", {{"seq_length", 4096}, {"precision", "fp8"}, {"moe_token_dispatcher_type", dispatcher}}}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

struct Run {
  Trace trace;
  double step_s = 0;
};

Run simulate(const Scenario& s, bool host_time) {
  auto cluster = topology::build_cluster_graph(s.cluster);
  auto rank_gpu = topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed);
  Run run{build_trace(s, rank_gpu, false), 0};
  if (!host_time) {
    for (auto& n : run.trace.nodes) {
      if (n.stream == "host") n.duration_s = 0;
    }
  }
  run.step_s = training::simulate_step(run.trace, cluster).step_time_s;
  return run;
}

}  // namespace

TEST_CASE("MoE host op counts: closed forms", "[workload][moe]") {
  // Experts forward, alltoall, 16 local experts, FP8: two TE grouped linears, the activation, the sort
  // by expert and back; per expert FC1 and FC2 GEMMs and their input quantisations.
  const auto fwd = moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 16, true);
  CHECK(fwd.te_modules == 2);
  CHECK(fwd.eager_ops == 3);
  CHECK(fwd.expert_launches == 16 * 4);
  CHECK(fwd.seconds() == Approx(kMoeEagerHostScale * (2 * kTeModuleHost_s + 3 * kEagerOpHost_s + 64 * kExpertGemmLaunchHost_s)));
  // One local expert: no reorder by expert with the alltoall dispatcher.
  CHECK(moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 1, false).eager_ops == 1);
  // A MoE layer's attention: three TE modules and three eager ops.
  CHECK(attention_host_ops().seconds() == Approx(kMoeEagerHostScale * (3 * kTeModuleHost_s + 3 * kEagerOpHost_s)));
  // Backward: dgrad and wgrad per expert and GEMM, one gradient quantisation each.
  CHECK(moe_host_ops(MoeStep::experts, true, MoeDispatcher::alltoall, 16, true).expert_launches == 16 * 6);
  CHECK(moe_host_ops(MoeStep::experts, true, MoeDispatcher::alltoall, 16, false).expert_launches == 16 * 4);
  // Host time grows linearly with the local experts (one cuBLAS launch each in TE's grouped GEMM).
  const double one = moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 2, false).seconds();
  const double two = moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 4, false).seconds();
  const double three = moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 6, false).seconds();
  CHECK(three - two == Approx(two - one));
  CHECK(two - one == Approx(kMoeEagerHostScale * 2 * 2 * kExpertGemmLaunchHost_s));
  // The flex dispatcher permutes inside its kernels: no host permute before its dispatch.
  CHECK(moe_host_ops(MoeStep::route, false, MoeDispatcher::flex, 16, true).eager_ops <
        moe_host_ops(MoeStep::route, false, MoeDispatcher::alltoall, 16, true).eager_ops);
  // Which dispatchers stop the host: dropless alltoall with EP or several local experts; flex with EP.
  CHECK(moe_dispatch_syncs_host(MoeDispatcher::alltoall, 8, 16));
  CHECK(moe_dispatch_syncs_host(MoeDispatcher::alltoall, 1, 8));
  CHECK_FALSE(moe_dispatch_syncs_host(MoeDispatcher::alltoall, 1, 1));
  CHECK(moe_dispatch_syncs_host(MoeDispatcher::flex, 8, 16));
  CHECK_FALSE(moe_dispatch_syncs_host(MoeDispatcher::flex, 1, 8));
}

TEST_CASE("the dropless dispatcher syncs the host once per MoE layer and forward pass", "[workload][moe]") {
  const Scenario s = qwen_scenario(1);
  auto cluster = topology::build_cluster_graph(s.cluster);
  const Trace trace = build_trace(s, topology::place_ranks(cluster, 8, s.placement, s.seed), false);
  const int microbatches = s.parallelism.microbatches;
  int syncs = 0, dispatches = 0;
  for (const auto& n : trace.nodes) {
    if (n.rank != 0) continue;
    if (n.name == "moe.d2h_sync") {
      ++syncs;
      CHECK(n.stream == "host");
      CHECK(n.duration_s == Approx(kMoeD2hSync_s));
      REQUIRE(n.deps.size() == 1);
      CHECK(trace.nodes[n.deps[0]].name == "moe.permute");  // the host waits for the GPU's counts
    }
    if (n.name == "moe.dispatch") {
      ++dispatches;
      // The dispatch waits for the host's issue of it, which the sync precedes on the host stream.
      const bool host_dep = std::any_of(n.deps.begin(), n.deps.end(), [&](int d) { return trace.nodes[d].name == "host.moe.dispatch"; });
      CHECK(host_dep);
    }
  }
  CHECK(syncs == 4 * microbatches);
  CHECK(dispatches == syncs);
}

TEST_CASE("host issue and sync slow a MoE step, a micro-batch-1 step most", "[workload][moe]") {
  // Per token: the host's time per layer does not grow with the micro-batch, the GPU's does.
  const Run small_on = simulate(qwen_scenario(1), true), small_off = simulate(qwen_scenario(1), false);
  const Run large_on = simulate(qwen_scenario(4), true), large_off = simulate(qwen_scenario(4), false);
  CHECK(small_on.step_s > small_off.step_s);
  CHECK(large_on.step_s >= large_off.step_s);
  const double small_slowdown = small_on.step_s / small_off.step_s, large_slowdown = large_on.step_s / large_off.step_s;
  CHECK(small_slowdown > large_slowdown);
  // The flex dispatcher syncs too (after its dispatch).
  const Run flex_on = simulate(qwen_scenario(1, "flex"), true), flex_off = simulate(qwen_scenario(1, "flex"), false);
  CHECK(flex_on.step_s > flex_off.step_s);
}

TEST_CASE("Experts with biases: Megatron's per-expert FC2 bias add costs HBM traffic and host ops", "[workload][moe]") {
  // GPT-OSS (HF GptOssExperts: biased experts) with 4 layers at EP 8: 16 local experts of hidden 2880.
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
      {"model", {{"base", "gpt-oss-120b"}, {"num_hidden_layers", 4},
                 {"layer_types", {"sliding_attention", "full_attention", "sliding_attention", "full_attention"}}}},
      {"parallelism", {{"expert_model_parallel_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", 16}}},
      {"training", {{"seq_length", 4096}, {"precision", "bf16"}, {"moe_load_imbalance", 1.0}}}};
  const Scenario s = scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
  REQUIRE(s.model.moe.expert_bias);
  CHECK_FALSE(qwen_scenario(1).model.moe.expert_bias);
  const Run run = simulate(s, true);
  // Balanced routing: 4,096 tokens x top-4 rows on each rank, each of 2,880 elements; 28 bytes per element
  // forward (FP32 b x p, the add, the cat, the cast to BF16), 40 backward.
  const double elements = 4096.0 * 4 * 2880;
  int forward = 0, backward = 0;
  for (const auto& n : run.trace.nodes) {
    if (n.rank != 0) continue;
    if (n.name == "moe.fc2_bias") {
      CHECK(n.bytes == Approx(28.0 * elements));
      ++forward;
    } else if (n.name == "moe.fc2_bias.bwd") {
      CHECK(n.bytes == Approx(40.0 * elements));
      ++backward;
    }
  }
  CHECK(forward == 4 * 2);  // every layer of both micro-batches of rank 0
  CHECK(backward == 4 * 2);
  // Host: a multiply and an add per local expert forward, six ops per expert backward, plus a cat and a
  // cast, at a plain op's cost (no module Python around them).
  MoeHostOps ops;
  ops.plain_ops = 2.0 * 16 + 2;
  CHECK(ops.seconds() == Approx(34 * kEagerOpHost_s));
  double host_forward = -1, host_backward = -1;
  for (const auto& n : run.trace.nodes) {
    if (n.rank != 0) continue;
    if (n.name == "host.moe.experts" && host_forward < 0) host_forward = n.duration_s;
    if (n.name == "host.moe.experts.bwd" && host_backward < 0) host_backward = n.duration_s;
  }
  const auto eager_forward = moe_host_ops(MoeStep::experts, false, s.training.moe_dispatcher, 16, false);
  const auto eager_backward = moe_host_ops(MoeStep::experts, true, s.training.moe_dispatcher, 16, false);
  // GPT-OSS's clamped activation adds its split, two clamps and cat (backward three gradient ops) as plain
  // ops too (elementwise_fusion.cpp).
  CHECK(host_forward == Approx(eager_forward.seconds() + (34 + 4) * kEagerOpHost_s));
  CHECK(host_backward == Approx(eager_backward.seconds() + (6.0 * 16 + 2 + 3) * kEagerOpHost_s));
  // Transformer Engine's op fuser scales FC2's bias inside its grouped linear: no eager bias add.
  doc["training"]["use_transformer_engine_op_fuser"] = true;
  const Run fused = simulate(scenario_from_json(doc, "test.json", test::source_dir(), test::catalog()), true);
  CHECK(std::none_of(fused.trace.nodes.begin(), fused.trace.nodes.end(),
                     [](const TraceNode& n) { return n.name.rfind("moe.fc2_bias", 0) == 0; }));
  CHECK(fused.step_s < run.step_s);
}

TEST_CASE("a Grace host issues eager ops 2.75x slower; Transformer Engine modules keep their time", "[workload][moe]") {
  // The closed form: the factor scales the eager ops, the grouped GEMMs' launches and the plain ops.
  auto ops = moe_host_ops(MoeStep::experts, true, MoeDispatcher::alltoall, 16, true);
  ops.plain_ops = 5;
  const double x86 = ops.seconds();
  ops.eager_scale = 2.75;
  const double eager = kMoeEagerHostScale * (ops.eager_ops * kEagerOpHost_s + ops.expert_launches * kExpertGemmLaunchHost_s) +
                       ops.plain_ops * kEagerOpHost_s;
  CHECK(ops.seconds() - x86 == Approx(1.75 * eager));
  CHECK(moe_layer_attention_host_s({}, 2.75) - moe_layer_attention_host_s({}) == Approx(1.75 * kMoeEagerHostScale * 3 * kEagerOpHost_s));
  // The catalog: Grace-hosted instances carry the factor, x86 ones none.
  CHECK(test::catalog().instance("p6e-gb200.36xlarge").host_op_time_factor == 2.75);
  CHECK(test::catalog().instance("p6-b200.48xlarge").host_op_time_factor == 1.0);
  // The same MoE layers on a GB200 instance and on a B200 one: every host node of the experts step
  // takes the instance's factor on its eager part.
  auto scenario_on = [](const nlohmann::json& cluster, int gpus) {
    nlohmann::json doc = {
        {"cluster", cluster},
        {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 2}}},
        {"parallelism", {{"expert_model_parallel_size", 8}, {"micro_batch_size", 1}, {"global_batch_size", gpus}}},
        {"training", {{"seq_length", 4096}, {"precision", "bf16"}}}};
    return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
  };
  auto first_host = [](const Trace& t, const std::string& name) {
    for (const auto& n : t.nodes) {
      if (n.name == name) return n.duration_s;
    }
    return -1.0;
  };
  const Run grace = simulate(scenario_on({{"ultraserver_type", "u-p6e-gb200x72"}, {"ultraservers", 1}}, 72), true);
  const Run xeon = simulate(scenario_on({{"instance_type", "p6-b200.48xlarge"}, {"nodes", 1}}, 8), true);
  auto experts = moe_host_ops(MoeStep::experts, false, MoeDispatcher::alltoall, 16, false);
  CHECK(first_host(xeon.trace, "host.moe.experts") == Approx(experts.seconds()));
  experts.eager_scale = 2.75;
  CHECK(first_host(grace.trace, "host.moe.experts") == Approx(experts.seconds()));
  CHECK(first_host(grace.trace, "host.attention") == Approx(moe_layer_attention_host_s({}, 2.75)));
}
