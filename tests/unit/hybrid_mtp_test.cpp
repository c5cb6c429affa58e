// Multi-token prediction of hybrid models (mtp_hybrid_override_pattern): parameters and Megatron's
// FLOP count of a tiny config by hand, the trace's MTP layers, and FP8/FP4 with first_last_layers_bf16
// over hybrid patterns.
#include <catch2/catch.hpp>

#include <string>
#include <utility>
#include <vector>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "hybrid_test_support.hpp"
#include "test_support.hpp"

using namespace fmsim;
using namespace fmsim::workload;

namespace {

/// The tiny hybrid model (hybrid_test_support.hpp) with 2 MTP depths of "*E".
nlohmann::json tiny_mtp_config() {
  nlohmann::json config = test::tiny_hybrid_config();
  config["num_nextn_predict_layers"] = 2;
  config["mtp_hybrid_override_pattern"] = "*E";
  return config;
}

Scenario scenario(const nlohmann::json& model, const nlohmann::json& training = {{"seq_length", 256}}) {
  nlohmann::json doc = {{"cluster", {{"instance_type", "p6-b200.48xlarge"}, {"nodes", 1}}},
                        {"model", model},
                        {"parallelism", {{"expert_model_parallel_size", 2}, {"global_batch_size", 8}}},
                        {"training", training}};
  return scenario_from_json(doc, "test.json", test::source_dir(), test::catalog());
}

std::string scenario_error(const nlohmann::json& model, const nlohmann::json& training = {{"seq_length", 256}}) {
  try {
    scenario(model, training);
  } catch (const fmsim::InputError& e) {
    return e.what();
  }
  return "";
}

/// Rank i on GPU i of the one 8-GPU node (a p6-b200: FP4 needs Blackwell).
std::vector<int> rank_gpu() {
  std::vector<int> ranks(8);
  for (int i = 0; i < 8; ++i) ranks[i] = i;
  return ranks;
}

int count_nodes(const Scenario& s, const std::string& name) {
  int n = 0;
  for (const auto& node : build_trace(s, rank_gpu(), false).nodes) n += node.rank == 0 && node.name == name ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("hybrid MTP: parameters per pattern letter by hand", "[hybrid][mtp]") {
  const ModelSpec m = model_from_hf_config(tiny_mtp_config(), "tiny.json");
  REQUIRE(m.mtp_layers == 2);
  const ParameterCounts c = count_parameters(m);
  // Per depth: eh_proj 2h x h (8,192), enorm + hnorm + final norm (3 x 64), then the pattern's layers
  // with their pre-norms: attention 12,288 + 64 and MoE 24,832 + 64 = 45,632.
  CHECK(c.mtp == 2 * (2.0 * 64 * 64 + 3 * 64 + (12288 + 64) + (24832 + 64)));  // 91,264
  CHECK(c.mtp_experts == 2 * (4.0 * 2 * 64 * 32));                               // the E letter's routed experts
  CHECK(c.total == 197240);  // the decoder's count is unchanged (MTP apart, as DeepSeek-V3's 671B + 14B)
  // mtp_use_repeated_layer: one set of MTP layers for every depth.
  nlohmann::json repeated = tiny_mtp_config();
  repeated["mtp_use_repeated_layer"] = true;
  const ParameterCounts once = count_parameters(model_from_hf_config(repeated, "tiny.json"));
  CHECK(once.mtp == c.mtp / 2);
  CHECK(once.mtp_experts == c.mtp_experts / 2);
}

TEST_CASE("hybrid MTP: Megatron's hybrid FLOPs count the MTP pattern once per depth, no eh_proj term", "[hybrid][mtp]") {
  const ModelSpec m = model_from_hf_config(tiny_mtp_config(), "tiny.json");
  ModelSpec plain = m;
  plain.mtp_layers = 0;
  const FlopsPerToken with = training_flops_per_token(m, 256, 1024), without = training_flops_per_token(plain, 256, 1024);
  // Per depth (x3 forward + backward): attention 4 q h + 4 kv h, core 4 q s/2; MoE 4 h ffn_e k + 4 h shared;
  // logits 2 h V. get_hybrid_layer_counts counts "*E" twice; hybrid_flops' logits term is (1 + 2) x 2 h V.
  const double attention = 3 * (4.0 * 64 * 64 + 4.0 * 32 * 64), core = 3 * 2.0 * 64 * 256;
  const double moe = 3 * (4.0 * 64 * 32 * 2 + 4.0 * 64 * 64);
  CHECK(with.dense_matmul - without.dense_matmul == 2 * (attention + moe));
  CHECK(with.attention - without.attention == 2 * core);
  CHECK(with.logits == 3 * 3 * 2.0 * 64 * 1024);
  CHECK(with.total() - without.total() == hybrid_mtp_flops_per_token(m, 256, 1024, 2).total());
}

TEST_CASE("hybrid MTP: each depth runs its pattern's layers in the trace", "[hybrid][mtp]") {
  nlohmann::json none = tiny_mtp_config();
  none["num_nextn_predict_layers"] = 0;
  const Scenario with = scenario(tiny_mtp_config()), without = scenario(none);
  // The decoder has one E and one * layer; 2 depths of "*E" add two of each per micro-batch.
  CHECK(count_nodes(with, "moe.dispatch") == 3 * count_nodes(without, "moe.dispatch"));
  CHECK(count_nodes(with, "attn.fwd") == 3 * count_nodes(without, "attn.fwd"));
  CHECK(count_nodes(with, "mamba.in_proj") == count_nodes(without, "mamba.in_proj"));  // no Mamba in "*E"
  CHECK(count_nodes(with, "mtp1.eh_proj") == count_nodes(without, "attn.fwd"));        // one per micro-batch
  // Memory: the MTP layers' parameters and activations are on the (only) stage.
  CHECK(estimate_memory(with).peak.total_bytes > estimate_memory(without).peak.total_bytes);
}

TEST_CASE("hybrid MTP: depths without an MTP pattern are refused", "[hybrid][mtp]") {
  nlohmann::json config = tiny_mtp_config();
  config.erase("mtp_hybrid_override_pattern");
  CHECK(scenario_error(config).find("/model/num_nextn_predict_layers = 2: a hybrid model's MTP depths run the layers of its MTP "
                                    "pattern") != std::string::npos);
  config["num_nextn_predict_layers"] = 0;
  CHECK(scenario_error(config, {{"seq_length", 256}, {"mtp_num_layers", 1}}).find("/training/mtp_num_layers = 1") != std::string::npos);
}

TEST_CASE("first_last_layers_bf16 over a hybrid pattern counts every letter as a layer", "[hybrid][fp4]") {
  // Megatron's MambaStack numbers every pattern letter as a layer (layer_number) and passes it to
  // get_fp8_context; is_first_last_bf16_layer compares it with num_layers (the pattern's length).
  nlohmann::json training = {{"seq_length", 256}, {"precision", "fp4"}, {"first_last_layers_bf16", true},
                             {"num_layers_at_start_in_bf16", 0}, {"num_layers_at_end_in_bf16", 2}};
  const Scenario s = scenario(tiny_mtp_config(), training);
  const TrainingOptions& t = s.training;
  CHECK(t.layer_in_fp8(0, 4));        // M
  CHECK(t.layer_in_fp8(1, 4));        // *
  CHECK_FALSE(t.layer_in_fp8(2, 4));  // -
  CHECK_FALSE(t.layer_in_fp8(3, 4));  // E
  CHECK_FALSE(t.layer_in_fp8(4, 4));  // MTP layers: as the last decoder layer
  bool fp4_in_proj = false, bf16_expert = false, fp4_expert = false;
  for (const auto& node : build_trace(s, rank_gpu(), false).nodes) {
    if (node.rank != 0) continue;
    if (node.name == "mamba.in_proj") fp4_in_proj = node.fp4;
    if (node.name == "moe.fc1") (node.fp4 ? fp4_expert : bf16_expert) = true;
  }
  CHECK(fp4_in_proj);   // layer 0 is not in the first 0
  CHECK(bf16_expert);   // layer 3 is in the last 2
  CHECK_FALSE(fp4_expert);
  // Start 1: the Mamba layer goes to BF16 too.
  training["num_layers_at_start_in_bf16"] = 1;
  const Scenario start = scenario(tiny_mtp_config(), training);
  for (const auto& node : build_trace(start, rank_gpu(), false).nodes) {
    if (node.rank == 0 && node.name == "mamba.in_proj") CHECK_FALSE(node.fp4);
  }
}

TEST_CASE("keep_mtp_spec_in_bf16: the MTP module's GEMMs stay in BF16 under FP4", "[hybrid][mtp][fp4]") {
  // Megatron-Bridge's Nemotron 3 Super recipe (keep_mtp_spec_in_bf16 = True).
  nlohmann::json training = {{"seq_length", 256}, {"precision", "fp4"}};
  auto low_precision = [](const Scenario& s, const std::string& name) {
    int fp4 = 0, bf16 = 0;
    for (const auto& node : build_trace(s, rank_gpu(), false).nodes) {
      if (node.rank == 0 && node.name == name) (node.fp4 ? fp4 : bf16) += 1;
    }
    return std::make_pair(fp4, bf16);
  };
  const Scenario plain = scenario(tiny_mtp_config(), training);
  CHECK(low_precision(plain, "moe.fc1") == std::make_pair(3, 0));  // the decoder's E and 2 MTP depths' E
  CHECK(low_precision(plain, "mtp0.eh_proj") == std::make_pair(1, 0));
  training["keep_mtp_spec_in_bf16"] = true;
  const Scenario kept = scenario(tiny_mtp_config(), training);
  CHECK(low_precision(kept, "moe.fc1") == std::make_pair(1, 2));
  CHECK(low_precision(kept, "mtp0.eh_proj") == std::make_pair(0, 1));
  CHECK(estimate_memory(kept).peak.total_bytes > estimate_memory(plain).peak.total_bytes);  // BF16 activations kept
  CHECK(scenario_error(tiny_mtp_config(), {{"seq_length", 256}, {"keep_mtp_spec_in_bf16", true}})
            .find("/training/keep_mtp_spec_in_bf16") != std::string::npos);
}

TEST_CASE("hybrid MTP: Megatron's unified pattern main/mtp/mtp", "[hybrid][mtp]") {
  nlohmann::json config = tiny_mtp_config();
  config.erase("mtp_hybrid_override_pattern");
  config.erase("num_nextn_predict_layers");
  config["hybrid_override_pattern"] = "M*-E/*E/*E";
  const ModelSpec unified = model_from_hf_config(config, "tiny.json");
  const ModelSpec separate = model_from_hf_config(tiny_mtp_config(), "tiny.json");
  CHECK(unified.layers == 4);
  CHECK(unified.mtp_layers == 2);
  CHECK(unified.hybrid.pattern == "M*-E");
  CHECK(unified.hybrid.mtp_layers == separate.hybrid.mtp_layers);
  CHECK(count_parameters(unified).mtp == count_parameters(separate).mtp);
  CHECK(training_flops_per_token(unified, 256, 1024).total() == training_flops_per_token(separate, 256, 1024).total());
  auto error = [](nlohmann::json c) {
    try {
      model_from_hf_config(c, "m.json");
    } catch (const fmsim::InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  config["hybrid_override_pattern"] = "M*-E/*E/E*";
  CHECK(error(config).find("must be one non-empty pattern repeated per depth") != std::string::npos);
  config["hybrid_override_pattern"] = "M*-E/*E/*E";
  config["num_nextn_predict_layers"] = 1;
  CHECK(error(config).find("has 2 MTP depths after '/' but num_nextn_predict_layers / mtp_num_layers is 1") != std::string::npos);
  config.erase("num_nextn_predict_layers");
  config["mtp_hybrid_override_pattern"] = "*E";
  CHECK(error(config).find("and mtp_hybrid_override_pattern too") != std::string::npos);
}
