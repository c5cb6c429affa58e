// MLA's projections in the backward pass (layer_ops.cpp mla_backward): each low-rank GEMM of the forward
// (Q down and up, KV down and up) gets a data and a weight gradient of its own shape, so the backward's
// projection FLOPs are exactly twice the forward's; the dense QKV formula (hidden x (Q + K + V)) it used
// before counted DeepSeek-V3's at 6.8 times that.
#include <catch2/catch.hpp>

#include <string>

#include "fmsim/topology/placement.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }
bool ends_with(const std::string& s, const std::string& p) { return s.size() >= p.size() && s.compare(s.size() - p.size(), p.size(), p) == 0; }

}  // namespace

TEST_CASE("MLA backward: projection FLOPs are twice the forward's, shape by shape", "[workload][mla]") {
  nlohmann::json doc = {{"cluster", {{"instance_type", "p5.48xlarge"}, {"nodes", 1}}},
                        {"model", {{"base", "deepseek-v3"}, {"num_hidden_layers", 2}, {"first_k_dense_replace", 1},
                                   {"n_routed_experts", 64}, {"num_nextn_predict_layers", 0}}},
                        {"parallelism", {{"expert_model_parallel_size", 8}, {"global_batch_size", 8}}},
                        {"training", {{"seq_length", 1024}, {"precision", "bf16"}}}};
  const Scenario s = scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
  auto cluster = topology::build_cluster_graph(s.cluster);
  const Trace trace = build_trace(s, topology::place_ranks(cluster, 8, s.placement, s.seed), false);
  double forward = 0, backward = 0, dense_qkv = 0;
  for (const auto& n : trace.nodes) {
    if (n.rank != 0 || !starts_with(n.name, "mla.") || ends_with(n.name, ".recompute")) continue;
    (ends_with(n.name, ".dgrad") || ends_with(n.name, ".wgrad") ? backward : forward) += n.flops;
  }
  for (const auto& n : trace.nodes) {
    if (n.rank == 0 && starts_with(n.name, "qkv")) dense_qkv += n.flops;
  }
  REQUIRE(forward > 0);
  CHECK(backward == Approx(2 * forward));
  CHECK(dense_qkv == 0);  // no dense QKV GEMM in an MLA model
  // Closed form per token and layer: 2 x (h (q_lora + kv_lora + rope) + q_lora q + kv_lora heads (nope + v)).
  const auto& m = s.model;
  const auto& a = m.mla_shape;
  const double per_token = 2.0 * (m.hidden * (a.q_lora_rank + a.kv_lora_rank + a.qk_rope_head_dim) +
                                  a.q_lora_rank * m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) +
                                  a.kv_lora_rank * m.heads * (a.qk_nope_head_dim + a.v_head_dim));
  const double tokens = 1024.0 * s.parallelism.micro_batch * s.parallelism.microbatches;
  CHECK(forward == Approx(per_token * tokens * m.layers));
}
