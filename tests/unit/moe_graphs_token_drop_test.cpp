// Token dropping (moe_expert_capacity_factor, moe_pad_expert_input_to_capacity) and the CUDA-graph scope
// (cuda_graph_impl, cuda_graph_scope) as they act on a MoE layer (moe_options.cpp, moe_ops.cpp):
// capacity scales the experts' rows and the routed bytes; drop-and-pad and full-iteration graphs remove
// the dispatcher's device-to-host sync; captured pieces cost one graph replay on the host; bad
// combinations are refused naming the key.
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/moe_host.hpp"
#include "fmsim/workload/moe_routing.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

nlohmann::json qwen_doc(int mbs, nlohmann::json training = nlohmann::json::object()) {
  nlohmann::json t = {{"seq_length", 4096}, {"precision", "fp8"}};
  t.update(training);
  return {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
          {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 4}}},
          {"parallelism", {{"expert_model_parallel_size", 8}, {"micro_batch_size", mbs}, {"global_batch_size", 32}}},
          {"training", t}};
}

Scenario scenario_of(const nlohmann::json& doc) { return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog()); }

struct Built {
  Trace trace;
  double step_s = 0;
};

Built build(const nlohmann::json& doc) {
  const Scenario s = scenario_of(doc);
  auto cluster = topology::build_cluster_graph(s.cluster);
  Built b{build_trace(s, topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed), false), 0};
  b.step_s = training::simulate_step(b.trace, cluster).step_time_s;
  return b;
}

int count(const Trace& t, const std::string& name) {
  int n = 0;
  for (const auto& node : t.nodes) n += node.rank == 0 && node.name == name;
  return n;
}

double first_flops(const Trace& t, const std::string& name) {
  for (const auto& node : t.nodes) {
    if (node.rank == 0 && node.name == name) return node.flops;
  }
  return -1;
}

double host_seconds(const Trace& t) {
  double s = 0;
  for (const auto& node : t.nodes) {
    if (node.rank == 0 && node.stream == "host" && node.name != "moe.d2h_sync") s += node.duration_s;
  }
  return s;
}

}  // namespace

TEST_CASE("token drop: padded capacity scales the experts' rows; drop-and-pad needs no host sync", "[workload][moe]") {
  const Built dropless = build(qwen_doc(1, {{"moe_load_imbalance", 1.0}}));
  const Built padded = build(qwen_doc(1, {{"moe_expert_capacity_factor", 1.5}, {"moe_pad_expert_input_to_capacity", true}}));
  const Built dropping = build(qwen_doc(1, {{"moe_expert_capacity_factor", 0.5}}));
  // Expert FC1 FLOPs: rows x capacity factor when padded; at most the balanced share when not padded.
  const double base = first_flops(dropless.trace, "moe.fc1");
  REQUIRE(base > 0);
  CHECK(first_flops(padded.trace, "moe.fc1") == Approx(1.5 * base));
  CHECK(first_flops(dropping.trace, "moe.fc1") == Approx(0.5 * base));
  // Megatron's cuda_sync_point stays "no_sync" with drop and pad; dropless and unpadded dropping sync.
  const int microbatches = scenario_of(qwen_doc(1)).parallelism.microbatches;
  CHECK(count(dropless.trace, "moe.d2h_sync") == 4 * microbatches);
  CHECK(count(padded.trace, "moe.d2h_sync") == 0);
  CHECK(count(dropping.trace, "moe.d2h_sync") == 4 * microbatches);
  // Capacity factor 1 with padding: the same work as dropless under balanced routing, without the sync.
  const Built pad1 = build(qwen_doc(1, {{"moe_expert_capacity_factor", 1.0}, {"moe_pad_expert_input_to_capacity", true}}));
  CHECK(first_flops(pad1.trace, "moe.fc1") == Approx(base));
  CHECK(pad1.step_s <= dropless.step_s);
}

TEST_CASE("expert load imbalance: every rank waits for the busiest, which random routing already skews", "[workload][moe]") {
  using fmsim::workload::expected_max_standard_normal;
  using fmsim::workload::random_routing_imbalance;
  // E[max] of n standard normals: 1/sqrt(pi) for two, and the published values for 8, 64 and 72 (by an
  // independent integration).
  CHECK(expected_max_standard_normal(1) == 0.0);
  CHECK(expected_max_standard_normal(2) == Approx(0.5641896).epsilon(1e-4));
  CHECK(expected_max_standard_normal(8) == Approx(1.4236003).epsilon(1e-4));
  CHECK(expected_max_standard_normal(64) == Approx(2.3437335).epsilon(1e-4));
  CHECK(expected_max_standard_normal(72) == Approx(2.3878522).epsilon(1e-4));
  // A rank's share of R x m routed rows is binomial: relative deviation sqrt((1 - 1/R) / m).
  CHECK(random_routing_imbalance(1, 1000) == 1.0);
  CHECK(random_routing_imbalance(8, 4096 * 8) == Approx(1.0 + 1.4236003 * std::sqrt((1 - 1 / 8.0) / (4096 * 8))).epsilon(1e-6));
  CHECK(random_routing_imbalance(72, 256 * 8) > random_routing_imbalance(72, 4096 * 8));  // decode batches skew more
  // The experts' rows scale with the imbalance: by default what random routing gives at EP 8 for the
  // rank's 4,096 tokens x top-8; an explicit 1.3 is 1.3 x the balanced rows.
  const double balanced = first_flops(build(qwen_doc(1, {{"moe_load_imbalance", 1.0}})).trace, "moe.fc1");
  const double random = first_flops(build(qwen_doc(1)).trace, "moe.fc1");
  const double skewed = first_flops(build(qwen_doc(1, {{"moe_load_imbalance", 1.3}})).trace, "moe.fc1");
  CHECK(random == Approx(balanced * random_routing_imbalance(8, 4096.0 * 8)));
  CHECK(skewed == Approx(1.3 * balanced));
  // Dropping caps the busiest expert at its capacity: 1.1 of the balanced share, under a 1.3 skew.
  CHECK(first_flops(build(qwen_doc(1, {{"moe_load_imbalance", 1.3}, {"moe_expert_capacity_factor", 1.1}})).trace, "moe.fc1") ==
        Approx(1.1 * balanced));
  // And a slower step, never a faster one.
  CHECK(build(qwen_doc(1, {{"moe_load_imbalance", 1.3}})).step_s > build(qwen_doc(1, {{"moe_load_imbalance", 1.0}})).step_s);
  // Below 1, or on a dense model: refused with the key.
  CHECK_THROWS_WITH(scenario_of(qwen_doc(1, {{"moe_load_imbalance", 0.9}})), Catch::Contains("moe_load_imbalance"));
  nlohmann::json dense = qwen_doc(1, {{"moe_load_imbalance", 1.2}});
  dense["model"] = "llama3-8b";
  dense["parallelism"] = {{"micro_batch_size", 1}, {"global_batch_size", 32}};
  CHECK_THROWS_WITH(scenario_of(dense), Catch::Contains("moe_load_imbalance"));
}

TEST_CASE("CUDA-graph scope: captured pieces replay as one launch; a full-iteration graph leaves no host", "[workload][moe]") {
  const Built eager = build(qwen_doc(1));
  const Built router = build(qwen_doc(1, {{"cuda_graph_impl", "transformer_engine"}, {"cuda_graph_scope", {"moe_router", "moe_preprocess"}}}));
  const Built attn = build(qwen_doc(1, {{"cuda_graph_impl", "transformer_engine"}, {"cuda_graph_scope", {"attn", "moe_router", "moe_preprocess"}}}));
  const Built full = build(qwen_doc(1, {{"cuda_graph_impl", "full_iteration"}}));
  // The attention half: 3 TE modules and 3 ops eagerly, one replay when captured.
  MoeHostOps replay;
  replay.eager_ops = kGraphReplayEagerOps;
  for (const auto& n : attn.trace.nodes) {
    if (n.rank == 0 && n.name == "host.attention") CHECK(n.duration_s == Approx(replay.seconds()));
  }
  // Each capture removes host time; a full-iteration graph removes all of it and the syncs.
  CHECK(host_seconds(router.trace) < host_seconds(eager.trace));
  CHECK(host_seconds(attn.trace) < host_seconds(router.trace));
  CHECK(host_seconds(full.trace) == 0.0);
  CHECK(count(full.trace, "moe.d2h_sync") == 0);
  // Less host never slows the step (micro-batch 1 is host-bound).
  CHECK(router.step_s <= eager.step_s);
  CHECK(attn.step_s <= router.step_s);
  CHECK(full.step_s <= attn.step_s);
  CHECK(full.step_s < eager.step_s);
  // The route step's closed form: 14 eager ops forward with the alltoall dispatcher, 6 of them the router.
  MoeHostOps eager_route;
  eager_route.eager_ops = 14;
  CHECK(graphed_moe_host_ops(CudaGraphScope{}, MoeStep::route, false, eager_route).eager_ops == 14);
  CudaGraphScope r;
  r.moe_router = true;
  CHECK(graphed_moe_host_ops(r, MoeStep::route, false, eager_route).eager_ops == kGraphReplayEagerOps + 8);
}

TEST_CASE("token drop and CUDA-graph settings: bad combinations are refused naming the key", "[workload][moe]") {
  auto refused = [](const nlohmann::json& training, const std::string& key) {
    try {
      scenario_of(qwen_doc(1, training));
    } catch (const InputError& e) {
      const std::string what = e.what();
      CHECK(what.find(key) != std::string::npos);
      return true;
    }
    return false;
  };
  CHECK(refused({{"moe_pad_expert_input_to_capacity", true}}, "moe_pad_expert_input_to_capacity"));
  CHECK(refused({{"moe_expert_capacity_factor", -1}}, "moe_expert_capacity_factor"));
  CHECK(refused({{"cuda_graph_scope", {"attn"}}}, "cuda_graph_scope"));  // no implementation
  CHECK(refused({{"cuda_graph_impl", "local"}, {"cuda_graph_scope", {"attention"}}}, "cuda_graph_scope"));
  CHECK(refused({{"cuda_graph_impl", "local"}, {"cuda_graph_scope", {"moe"}}}, "cuda_graph_scope"));  // dropless
  CHECK(refused({{"moe_expert_capacity_factor", 1.0}, {"moe_token_dispatcher_type", "flex"}}, "moe_expert_capacity_factor"));
  // The whole block may be captured when its shapes are static.
  CHECK_NOTHROW(scenario_of(qwen_doc(1, {{"cuda_graph_impl", "local"}, {"cuda_graph_scope", {"moe"}},
                                         {"moe_expert_capacity_factor", 1.0}, {"moe_pad_expert_input_to_capacity", true}})));
  // Megatron's None: dropless.
  CHECK_NOTHROW(scenario_of(qwen_doc(1, {{"moe_expert_capacity_factor", nullptr}})));
}
