// Megatron-Core's EP all-to-all overlap (overlap_moe_expert_parallel_comm): the pipeline order gains a
// warm-up forward, and each steady-state step issues a forward and a backward layer together so that
// every all-to-all sits beside the other pass's compute (MLM schedule_layer_1f1b). No simulation here.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "fmsim/compute/compute_model.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

Scenario moe_scenario(bool overlap, bool delay_wgrad, const nlohmann::json& more_training = nlohmann::json::object()) {
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 2}}},
      {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 4}}},
      {"parallelism", {{"pipeline_model_parallel_size", 2}, {"virtual_pipeline_model_parallel_size", 2},
                       {"expert_model_parallel_size", 8}, {"global_batch_size", 32}}},
      {"training", {{"seq_length", 2048}, {"overlap_moe_expert_parallel_comm", overlap}, {"delay_wgrad_compute", delay_wgrad}}}};
  doc["training"].update(more_training);
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

Trace moe_trace(bool overlap, bool delay_wgrad, const nlohmann::json& more_training = nlohmann::json::object()) {
  Scenario s = moe_scenario(overlap, delay_wgrad, more_training);
  std::vector<int> rank_gpu(16);
  for (int i = 0; i < 16; ++i) rank_gpu[i] = i;
  return build_trace(s, rank_gpu, false);
}

/// Qwen3-30B-A3B (128 experts, top-8, hidden 2048; 2 layers) at EP `ep` on `nodes` p5 nodes, one micro-batch
/// per rank; `training` adds keys (the dispatcher and its backend).
Scenario qwen_ep_scenario(int nodes, int ep, int seq, const nlohmann::json& training) {
  nlohmann::json doc = {
      {"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", nodes}}},
      {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 2}}},
      {"parallelism", {{"expert_model_parallel_size", ep}, {"global_batch_size", 8 * nodes}}},
      {"training", {{"seq_length", seq}}}};
  doc["training"].update(training);
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

/// The scenario's trace with rank i on GPU i.
Trace packed_trace(const Scenario& s) {
  std::vector<int> rank_gpu(s.parallelism.world());
  for (std::size_t i = 0; i < rank_gpu.size(); ++i) rank_gpu[i] = static_cast<int>(i);
  return build_trace(s, rank_gpu, false);
}

/// Names of rank 0's nodes on one stream, in issue order.
std::vector<std::string> stream_of(const Trace& trace, const std::string& stream) {
  std::vector<std::string> names;
  for (const auto& n : trace.nodes) {
    if (n.rank == 0 && n.stream == stream && n.name.rfind("moe.", 0) == 0) names.push_back(n.name);
  }
  return names;
}

}  // namespace

TEST_CASE("the all-to-all overlap adds one warm-up forward to the pipeline order", "[workload]") {
  for (int vp : {1, 2}) {
    for (int rank = 0; rank < 2; ++rank) {
      const auto plain = pipeline_order(2, vp, 4, rank), overlapped = pipeline_order(2, vp, 4, rank, 1);
      REQUIRE(overlapped.size() == plain.size());
      auto warmup = [](const std::vector<PipelinePass>& order) {
        std::size_t k = 0;
        while (k < order.size() && order[k].forward) ++k;
        return k;
      };
      CHECK(warmup(overlapped) == std::min(warmup(plain) + 1, static_cast<std::size_t>(4 * vp + 1)));
      // The steady state alternates forward, backward; each forward (run together with the backward
      // after it) belongs to another micro-batch. Warm-up and cool-down passes are not steady.
      std::size_t steady = 0;
      for (std::size_t i = 0; i < overlapped.size(); ++i) {
        if (!overlapped[i].steady) continue;
        ++steady;
        if (!overlapped[i].forward) continue;
        REQUIRE(i + 1 < overlapped.size());
        CHECK_FALSE(overlapped[i + 1].forward);
        CHECK(overlapped[i + 1].steady);
        CHECK_FALSE((overlapped[i].microbatch == overlapped[i + 1].microbatch && overlapped[i].chunk == overlapped[i + 1].chunk));
      }
      const std::size_t total = 4 * vp, warmups = std::min<std::size_t>((vp == 1 ? 2 - rank - 1 : 2 * (2 - rank - 1) + (vp - 1) * 2) + 1, total);
      CHECK(steady == 2 * (total - warmups));
    }
  }
}

TEST_CASE("combined 1F1B issues each all-to-all beside the other pass's compute", "[workload]") {
  // Sequential passes: a layer's all-to-alls follow each other pass by pass.
  const auto plain = stream_of(moe_trace(false, false), "ep");
  REQUIRE(plain.size() >= 4);
  CHECK(plain[0] == "moe.dispatch");
  CHECK(plain[1] == "moe.combine");
  // Combined: the steady state interleaves the backward's combine gradient, the forward's dispatch, the
  // backward's dispatch gradient and the forward's combine, the order of MLM schedule_layer_1f1b.
  const Trace combined = moe_trace(true, true);
  const auto ep = stream_of(combined, "ep");
  REQUIRE(ep.size() == plain.size());  // the same all-to-alls, reordered
  const std::vector<std::string> step{"moe.combine.bwd", "moe.dispatch", "moe.dispatch.bwd", "moe.combine"};
  bool found = false;
  for (std::size_t i = 0; i + step.size() <= ep.size() && !found; ++i) {
    found = std::equal(step.begin(), step.end(), ep.begin() + static_cast<long>(i));
  }
  CHECK(found);
  // With delay_wgrad_compute the experts' weight gradients leave their backward: they follow the FC1
  // data gradient (issued once the dispatch gradient may start) instead of each data gradient.
  auto next_after = [](const std::vector<std::string>& names, const std::string& name) {
    std::vector<std::string> next;
    for (std::size_t i = 0; i + 1 < names.size(); ++i) {
      if (names[i] == name) next.push_back(names[i + 1]);
    }
    return next;
  };
  const auto delayed = stream_of(combined, "compute");
  REQUIRE_FALSE(next_after(delayed, "moe.fc2.dgrad").empty());
  for (const auto& n : next_after(delayed, "moe.fc2.dgrad")) CHECK(n == "moe.act.bwd");
  for (const auto& n : next_after(delayed, "moe.fc1.dgrad")) CHECK(n != "moe.fc1.wgrad");
  const auto undelayed = stream_of(moe_trace(true, false), "compute");
  for (const auto& n : next_after(undelayed, "moe.fc2.dgrad")) CHECK(n == "moe.fc2.wgrad");
}

TEST_CASE("the dispatcher reorders the received rows by local expert and back, in both passes", "[workload]") {
  // Qwen3-30B-A3B at EP8: 16 local experts, so Megatron's sort_chunks_by_idxs runs after the dispatch
  // and before the combine, and again on the gradients: four passes per layer and micro-batch, each
  // reading and writing the rank's routed rows (tokens x top-k x hidden x 2 bytes), at perfect balance.
  const Trace trace = moe_trace(false, false, {{"moe_load_imbalance", 1.0}});
  const auto compute = stream_of(trace, "compute");
  const auto count = [&](const std::string& name) { return std::count(compute.begin(), compute.end(), name); };
  const auto experts = count("moe.fc1");  // one per layer and micro-batch
  REQUIRE(experts > 0);
  for (const char* name : {"moe.sort_chunks", "moe.sort_chunks.combine", "moe.sort_chunks.combine_bwd", "moe.sort_chunks.bwd"}) {
    INFO(name);
    CHECK(count(name) == experts);
  }
  const double routed_bytes = 2048.0 * 8 * 2048 * 2;  // seq 2048, top-8, hidden 2048, BF16
  for (const auto& n : trace.nodes) {
    if (n.rank == 0 && n.name.rfind("moe.sort_chunks", 0) == 0) CHECK(n.bytes == Approx(2 * routed_bytes));
  }
  // The reorders sit with the experts on the compute stream, after the dispatch and before the combine.
  for (std::size_t i = 0; i + 1 < compute.size(); ++i) {
    if (compute[i] == "moe.sort_chunks") CHECK(compute[i + 1] == "moe.fc1");
  }
}

TEST_CASE("the flex dispatcher sends a token once per NVLink domain and fuses the permutations", "[workload]") {
  // Qwen3-30B-A3B (128 experts, top-8) at EP16 over two p5 nodes: 64 experts per node. A token misses a
  // node's experts with probability C(64, 8) / C(128, 8); the alltoall dispatcher sends 8 x 1/2 copies
  // across, DeepEP 1 x P(hit), so the dispatch carries 2 P(hit) / 8 of the alltoall bytes.
  auto trace_with = [](const std::string& dispatcher, int nodes, int ep) {
    return packed_trace(qwen_ep_scenario(nodes, ep, 2048, {{"moe_token_dispatcher_type", dispatcher}}));
  };
  auto dispatch_bytes = [](const Trace& t) {
    for (const auto& n : t.nodes) {
      if (n.name == "moe.dispatch") return n.comm_bytes;
    }
    return -1.0;
  };
  double missed = 1.0;
  for (int i = 0; i < 8; ++i) missed *= (64.0 - i) / (128.0 - i);
  const Trace alltoall = trace_with("alltoall", 2, 16), flex = trace_with("flex", 2, 16);
  CHECK(dispatch_bytes(flex) == Approx(dispatch_bytes(alltoall) * 2 * (1 - missed) / 8).epsilon(1e-6));
  // Inside one NVLink domain the kernels send a token once to each GPU holding one of its experts (16
  // experts per GPU at EP8): 8 x P(a GPU is hit) / 8 of the alltoall dispatcher's per-expert copies.
  double gpu_missed = 1.0;
  for (int i = 0; i < 8; ++i) gpu_missed *= (112.0 - i) / (128.0 - i);
  CHECK(dispatch_bytes(trace_with("flex", 1, 8)) ==
        Approx(dispatch_bytes(trace_with("alltoall", 1, 8)) * (1 - gpu_missed)).epsilon(1e-6));
  // Permutations: flex permutes once after the dispatch and once before the combine (no permutation
  // before the dispatch, no unpermutation after the combine, no chunk sort): two passes per direction
  // against the alltoall dispatcher's four.
  auto passes = [](const Trace& t) {
    int count = 0;
    for (const auto& n : t.nodes) {
      const bool reorder = n.name.rfind("moe.permute", 0) == 0 || n.name.rfind("moe.unpermute", 0) == 0 ||
                           n.name.rfind("moe.sort_chunks", 0) == 0;
      if (n.rank == 0 && reorder) ++count;
    }
    return count;
  };
  CHECK(passes(alltoall) == 2 * passes(flex));
  const auto compute = stream_of(flex, "compute");
  for (std::size_t i = 0; i + 1 < compute.size(); ++i) {
    if (compute[i] == "moe.permute") CHECK(compute[i + 1] == "moe.fc1");
  }
}

TEST_CASE("HybridEP sends the routing probabilities with each token; flex kernels run below NCCL inside a domain", "[workload]") {
  // Qwen3-30B-A3B (128 experts, top-8, hidden 2048) on p5 nodes. HybridEP's forward dispatch and the
  // dispatch's backward carry an FP32 row of the destination domain's experts with every (token, GPU) copy:
  // 128 / EP x 8 GPUs per domain x 4 B per 2048 x 2 B of token. Inside one domain both flex backends run at
  // 0.73 of NCCL's all-to-all bandwidth (DeepEP hybrid-ep README's Torch-API tables): the node keeps its real
  // bytes and carries the share, which the cost models divide by.
  struct Coll {
    double bytes, share;
  };
  auto nodes_of = [](const std::string& backend, int nodes, int ep) {
    const Scenario s = qwen_ep_scenario(nodes, ep, 2048, {{"moe_token_dispatcher_type", "flex"}, {"moe_flex_dispatcher_backend", backend}});
    std::map<std::string, Coll> out;
    for (const auto& n : packed_trace(s).nodes) {
      if (n.rank == 0 && n.comm_bytes > 0 && n.name.rfind("moe.", 0) == 0 && !out.count(n.name)) out[n.name] = {n.comm_bytes, n.comm_bandwidth_share};
    }
    return out;
  };
  const auto deepep = nodes_of("deepep", 1, 8), hybridep = nodes_of("hybridep", 1, 8);
  const double probabilities = 1.0 + 4.0 * (128 / 8) * 8 / (2048.0 * 2);  // 1.125
  CHECK(hybridep.at("moe.dispatch").bytes == Approx(deepep.at("moe.dispatch").bytes * probabilities).epsilon(1e-6));
  CHECK(hybridep.at("moe.dispatch.bwd").bytes == Approx(deepep.at("moe.dispatch.bwd").bytes * probabilities).epsilon(1e-6));
  CHECK(hybridep.at("moe.combine").bytes == Approx(deepep.at("moe.combine").bytes).epsilon(1e-6));
  CHECK(hybridep.at("moe.combine.bwd").bytes == Approx(deepep.at("moe.combine.bwd").bytes).epsilon(1e-6));
  for (const auto* nodes : {&deepep, &hybridep}) {
    for (const char* name : {"moe.dispatch", "moe.combine", "moe.dispatch.bwd", "moe.combine.bwd"}) {
      INFO(name);
      CHECK(nodes->at(name).share == Approx(0.73));
    }
  }
  // Across two domains the network binds: the probability rows (8 experts per GPU at EP16), NCCL's bandwidth.
  const auto deepep2 = nodes_of("deepep", 2, 16), hybridep2 = nodes_of("hybridep", 2, 16);
  CHECK(hybridep2.at("moe.dispatch").bytes == Approx(deepep2.at("moe.dispatch").bytes * (1.0 + 4.0 * 8 * 8 / 4096)).epsilon(1e-6));
  CHECK(hybridep2.at("moe.dispatch.bwd").bytes == Approx(deepep2.at("moe.dispatch.bwd").bytes * (1.0 + 4.0 * 8 * 8 / 4096)).epsilon(1e-6));
  CHECK(hybridep2.at("moe.combine").bytes == Approx(deepep2.at("moe.combine").bytes).epsilon(1e-6));
  CHECK(hybridep2.at("moe.combine.bwd").bytes == Approx(deepep2.at("moe.combine.bwd").bytes).epsilon(1e-6));
  CHECK(hybridep2.at("moe.dispatch").share == 1.0);
  CHECK(deepep2.at("moe.combine").share == 1.0);
}

TEST_CASE("a collective's bandwidth share prices its bytes at that share of NCCL's bandwidth", "[workload]") {
  // The flex dispatcher's all-to-alls inside one node carry share 0.73: the replayed step is slower than the
  // same trace at share 1, the exposed EP time grows, and the share survives the JSON trace format.
  const Scenario s = qwen_ep_scenario(1, 8, 4096, {{"moe_token_dispatcher_type", "flex"}, {"moe_flex_dispatcher_backend", "hybridep"}});
  auto cluster = topology::build_cluster_graph(s.cluster);
  auto rank_gpu = topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed);
  Trace shared = build_trace(s, rank_gpu, false);
  Trace full = shared;
  int flex_nodes = 0;
  for (auto& n : full.nodes) {
    if (n.comm_bandwidth_share != 1.0) {
      CHECK(n.comm_bandwidth_share == Approx(0.73));
      ++flex_nodes;
      n.comm_bandwidth_share = 1.0;
    }
  }
  CHECK(flex_nodes > 0);
  const auto slow = training::simulate_step(shared, cluster), fast = training::simulate_step(full, cluster);
  CHECK(slow.step_time_s > fast.step_time_s);
  const Trace back = trace_from_json(trace_to_json(shared), "t.json");
  REQUIRE(back.nodes.size() == shared.nodes.size());
  for (std::size_t i = 0; i < back.nodes.size(); ++i) CHECK(back.nodes[i].comm_bandwidth_share == shared.nodes[i].comm_bandwidth_share);
  CHECK(training::simulate_step(back, cluster).step_time_s == Approx(slow.step_time_s));
}

TEST_CASE("group-limited routing lowers the flex dispatcher's cross-domain copies", "[workload]") {
  // DeepSeek-V3 (256 experts in 8 groups, top-8 from the best 4 groups) at EP64 over eight p5 nodes: one
  // group of 32 experts per node. A token's node set is its 4 chosen groups' nodes that it draws an
  // expert from: P(a node is hit) = P(its group is chosen) x (1 - C(96, 8) / C(128, 8)) = 1/2 x (...),
  // against 1 - C(224, 8) / C(256, 8) without the group limit.
  auto dispatch_bytes = [](const std::string& dispatcher, int groups) {
    nlohmann::json model = {{"base", "deepseek-v3"}, {"num_hidden_layers", 2}, {"first_k_dense_replace", 1}};
    if (groups > 0) model["n_group"] = groups;
    if (groups == 1) model["topk_group"] = 1;
    nlohmann::json doc = {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 8}}},
                          {"model", model},
                          {"parallelism", {{"expert_model_parallel_size", 64}, {"global_batch_size", 64}}},
                          {"training", {{"seq_length", 1024}, {"moe_token_dispatcher_type", dispatcher}}}};
    Scenario s = scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
    std::vector<int> rank_gpu(64);
    for (int i = 0; i < 64; ++i) rank_gpu[i] = i;
    for (const auto& n : build_trace(s, rank_gpu, false).nodes) {
      if (n.name == "moe.dispatch") return n.comm_bytes;
    }
    return -1.0;
  };
  auto missed = [](double pool, double held) {
    double p = 1.0;
    for (int i = 0; i < 8; ++i) p *= (pool - held - i) / (pool - i);
    return p;
  };
  const double alltoall = dispatch_bytes("alltoall", 0);
  CHECK(dispatch_bytes("alltoall", 1) == Approx(alltoall));  // one copy per expert either way
  // share = 8 nodes x P(hit) / 8 experts
  CHECK(dispatch_bytes("flex", 0) == Approx(alltoall * 0.5 * (1 - missed(128, 32))).epsilon(1e-6));
  CHECK(dispatch_bytes("flex", 1) == Approx(alltoall * (1 - missed(256, 32))).epsilon(1e-6));
  // At most topk_group = 4 nodes per token: at most half the alltoall dispatcher's 8 copies.
  CHECK(dispatch_bytes("flex", 0) <= 0.5 * alltoall);
}

TEST_CASE("moe_shared_expert_overlap runs the shared experts beside the all-to-alls", "[workload]") {
  // DeepSeek-V3 (one shared expert) at EP8 in one node, one MoE layer.
  auto trace_with = [](bool overlap) {
    nlohmann::json doc = {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
                          {"model", {{"base", "deepseek-v3"}, {"num_hidden_layers", 2}, {"first_k_dense_replace", 1}, {"num_nextn_predict_layers", 0}}},
                          {"parallelism", {{"expert_model_parallel_size", 8}, {"global_batch_size", 8}}},
                          {"training", {{"seq_length", 1024}, {"moe_shared_expert_overlap", overlap}}}};
    Scenario s = scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
    std::vector<int> rank_gpu(8);
    for (int i = 0; i < 8; ++i) rank_gpu[i] = i;
    return build_trace(s, rank_gpu, false);
  };
  const Trace serial = trace_with(false), overlapped = trace_with(true);
  auto shared_gemms = [](const Trace& t) {
    std::multiset<std::string> names;
    for (const auto& n : t.nodes) {
      if (n.rank == 0 && n.name.rfind("moe.shared_", 0) == 0) names.insert(n.name);
    }
    return names;
  };
  CHECK(shared_gemms(serial) == shared_gemms(overlapped));  // the same work, placed elsewhere
  CHECK(shared_gemms(serial).size() == 6);                   // FC1, FC2; backward dgrad and wgrad of each
  // No all-to-all waits for a shared-expert GEMM when overlapped; without the overlap the combine does.
  auto a2a_waits_for_shared = [](const Trace& t) {
    std::set<int> shared;
    for (const auto& n : t.nodes) {
      if (n.rank == 0 && n.name.rfind("moe.shared_", 0) == 0) shared.insert(n.id);
    }
    bool waits = false;
    for (const auto& n : t.nodes) {
      if (n.rank != 0 || n.type != NodeType::coll || n.category != Category::ep_comm) continue;
      for (int d : n.deps) waits = waits || shared.count(d) > 0;
    }
    return waits;
  };
  CHECK(a2a_waits_for_shared(serial));
  CHECK_FALSE(a2a_waits_for_shared(overlapped));
  // Forward: FC1 follows the permutation (beside the dispatch), FC2 follows the routed experts and their
  // reorder back (beside the combine).
  const auto compute = stream_of(overlapped, "compute");
  const auto at = [&](const std::string& name) { return std::find(compute.begin(), compute.end(), name) - compute.begin(); };
  CHECK(at("moe.shared_fc1") == at("moe.permute") + 1);
  CHECK(at("moe.shared_fc2") == at("moe.sort_chunks.combine") + 1);
  CHECK(at("moe.sort_chunks.combine") == at("moe.fc2") + 1);
  // A model without shared experts cannot ask for it.
  nlohmann::json doc = {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
                        {"model", {{"base", "qwen3-30b-a3b"}, {"num_hidden_layers", 2}}},
                        {"parallelism", {{"expert_model_parallel_size", 8}, {"global_batch_size", 8}}},
                        {"training", {{"seq_length", 1024}, {"moe_shared_expert_overlap", true}}}};
  CHECK_THROWS_WITH(scenario_from_json(doc, "test.json", test::source_dir(), test::catalog()),
                    Catch::Matchers::Contains("moe_shared_expert_overlap") && Catch::Matchers::Contains("shared experts"));
}

TEST_CASE("combined 1F1B runs the compute beside an all-to-all on the SMs it leaves", "[workload]") {
  // The SM counts taken from rank 0's GEMM and attention nodes.
  auto taken = [](const Trace& trace) {
    std::set<int> values;
    for (const auto& n : trace.nodes) {
      if (n.rank != 0 || n.type != NodeType::comp) continue;
      if (n.kernel == Kernel::memory || n.kernel == Kernel::optimizer) {
        CHECK(n.sms_taken == 0);  // memory-bound kernels keep the HBM
        continue;
      }
      values.insert(n.sms_taken);
    }
    return values;
  };
  // Sequential passes (TP 1, so no TP overlap either): every kernel has the whole GPU.
  CHECK(taken(moe_trace(false, false)) == std::set<int>{0});
  // Combined 1F1B: the steady state's attention and experts run beside the other pass's all-to-alls
  // (NCCL's 16 send/recv CTAs); the warm-up and cool-down passes run alone.
  CHECK(taken(moe_trace(true, true)) == std::set<int>{0, compute::kNcclAllToAllSms});
  // The flex dispatcher holds Megatron-Core's moe_deepep_num_sms (20) or moe_hybridep_num_sms (16).
  CHECK(taken(moe_trace(true, true, {{"moe_token_dispatcher_type", "flex"}})) == std::set<int>{0, 20});
  CHECK(taken(moe_trace(true, true, {{"moe_token_dispatcher_type", "flex"}, {"moe_flex_dispatcher_backend", "hybridep"}})) ==
        std::set<int>{0, 16});
  CHECK(taken(moe_trace(true, true, {{"moe_token_dispatcher_type", "flex"}, {"moe_flex_dispatcher_backend", "hybridep"},
                                     {"moe_hybridep_num_sms", 32}})) == std::set<int>{0, 32});
  // A kernel on the SMs left runs slower in proportion: attention on half the H100's 132 SMs takes twice
  // as long (above the fixed launch cost).
  const compute::ComputeModel h100(test::catalog().gpu("H100-SXM"));
  const double whole = h100.attention_s(1e12, false, 2048) - compute::kGemmFixedOverhead_s;
  CHECK(h100.attention_s(1e12, false, 2048, 66) - compute::kGemmFixedOverhead_s == Approx(2 * whole));
  // Every SM held by the dispatcher is refused, with the key.
  REQUIRE_THROWS_WITH(moe_scenario(true, true, {{"moe_token_dispatcher_type", "flex"}, {"moe_deepep_num_sms", 132}}),
                      Catch::Contains("moe_deepep_num_sms") && Catch::Contains("132 SMs"));
  // The flex dispatcher's SM keys mean nothing to NCCL's all-to-all.
  REQUIRE_THROWS_WITH(moe_scenario(true, true, {{"moe_hybridep_num_sms", 24}}),
                      Catch::Contains("moe_hybridep_num_sms") && Catch::Contains("only with moe_token_dispatcher_type"));
}
