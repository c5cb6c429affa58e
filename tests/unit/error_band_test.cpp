// Error bands: the validation group a scenario falls in and its figures from configs/validation/error_bands.json.
#include <catch2/catch.hpp>

#include <cmath>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/inference/serve_scenario.hpp"
#include "fmsim/report/error_band.hpp"
#include "fmsim/workload/framework.hpp"
#include "fmsim/workload/scenario.hpp"
#include "test_support.hpp"

using namespace fmsim;
using nlohmann::json;

namespace {

json shipped_bands() { return config::load_json_file(test::source_dir() / "configs" / "validation" / "error_bands.json").root; }

json band_entry(const json& group, int n, double mae, double signed_mean) {
  return {{"group", group}, {"n", n}, {"mean_abs_error", mae}, {"signed_mean", signed_mean}, {"worst", signed_mean * 2},
          {"label", "test group"}, {"source", {{"script", "test"}, {"date", "2026-11-23"}, {"commit", "abc"}, {"measurements", "m.json"}}}};
}

json training_key(const std::string& gen, const std::string& kind, const std::string& workload, const std::string& stack) {
  return {{"generation", gen}, {"kind", kind}, {"workload", workload}, {"stack", stack}};
}

}  // namespace

TEST_CASE("a dense H100 pretraining scenario falls in the dense H100 Megatron-Core group", "[error_band]") {
  const auto s = workload::load_scenario(test::source_dir() / "configs" / "training" / "llama3-70b-p5.json", {}, test::catalog());
  const json key = report::training_group_key(s);
  CHECK(key == training_key("H100", "dense", "pretrain", report::kDefaultTrainingStack));
  const json bands = shipped_bands();
  const auto band = report::lookup_band(bands, "error_bands.json", "training", key);
  REQUIRE(band.band);
  CHECK(band.band->group == key);
  CHECK(band.band->n >= 1);
  CHECK(band.label == "dense H100 pretraining on Megatron-Core");
  CHECK(report::describe(band).find("for dense H100 pretraining on Megatron-Core") != std::string::npos);
}

TEST_CASE("a MoE Blackwell scenario falls in the MoE Blackwell group", "[error_band]") {
  const auto s = workload::load_scenario(test::source_dir() / "configs" / "training" / "gpt-oss-120b-p6-b200.json", {}, test::catalog());
  const json key = report::training_group_key(s);
  CHECK(key == training_key("Blackwell", "MoE", "pretrain", report::kDefaultTrainingStack));
  const auto band = report::lookup_band(shipped_bands(), "error_bands.json", "training", key);
  REQUIRE(band.band);
  CHECK(band.band->group["kind"] == "MoE");
  CHECK(band.band->group["generation"] == "Blackwell");
}

TEST_CASE("GPU generations as the validation groups name them", "[error_band]") {
  const auto& gpus = test::catalog();
  CHECK(report::gpu_generation(gpus.gpu("A100-SXM4-80GB")) == "A100");
  CHECK(report::gpu_generation(gpus.gpu("H100-SXM")) == "H100");
  CHECK(report::gpu_generation(gpus.gpu("H200-SXM")) == "H200");
  CHECK(report::gpu_generation(gpus.gpu("B200")) == "Blackwell");
  CHECK(report::gpu_generation(gpus.gpu("GB200")) == "Blackwell");
  CHECK(report::gpu_generation(gpus.gpu("GB300")) == "Blackwell Ultra");
  CHECK(report::gpu_generation(gpus.gpu("H800-SXM")) == "H800-SXM");  // no group of its own: not borrowed from H100
}

TEST_CASE("A100 MoE serving has no validation data, and no neighbour is shown in its place", "[error_band]") {
  const auto s = inference::load_serve_scenario(
      test::source_dir() / "configs" / "serving" / "llama3.3-70b-p5en.json",
      {"cluster.base=../../topologies/p4de-2node.json", "model=qwen3-30b-a3b", "serving.precision=bf16", "serving.kv_cache_dtype=bf16",
       "serving.tensor_parallel_size=1", "serving.replicas=1", "cluster.nodes=1"},
      test::catalog());
  const json key = report::serving_group_key(s);
  CHECK(key == json{{"generation", "A100"}, {"kind", "MoE"}, {"mode", "server"}});
  const auto band = report::lookup_band(shipped_bands(), "error_bands.json", "serving", key);
  CHECK_FALSE(band.band);
  const std::string text = report::describe(band);
  CHECK(text.rfind("no validation data for MoE A100 serving, server", 0) == 0);
  const json doc = report::to_json(band);
  CHECK(doc["validated"] == false);
  CHECK(doc["n"] == 0);
  CHECK(doc["mean_abs_error"].is_null());
  if (band.nearest) {  // shown only labelled as the nearest validated group
    CHECK(text.find("nearest validated group, not this one") != std::string::npos);
    CHECK(doc["nearest_validated_group"]["group"] != key);
  }
}

TEST_CASE("the exact group wins over a neighbour with more rows; a miss names the nearest explicitly", "[error_band]") {
  const json bands = {{"schema", "fmsim.error_bands/1"},
                      {"training", {band_entry(training_key("H100", "dense", "pretrain", "megatron-core"), 10, 0.05, 0.05),
                                    band_entry(training_key("H100", "dense", "pretrain", "nemo-24.07"), 40, 0.20, -0.1),
                                    band_entry(training_key("Blackwell", "MoE", "pretrain", "megatron-core"), 30, 0.3, 0.25)}},
                      {"serving", json::array()}};
  const auto hit = report::lookup_band(bands, "b.json", "training", training_key("H100", "dense", "pretrain", "megatron-core"));
  REQUIRE(hit.band);
  CHECK(hit.band->n == 10);
  CHECK(report::describe(hit) == "validated +-5.0 % mean abs, signed +5.0 %, worst +10.0 %, n=10, for dense H100 pretraining on Megatron-Core");
  const auto miss = report::lookup_band(bands, "b.json", "training", training_key("H100", "dense", "sft", "megatron-core"));
  CHECK_FALSE(miss.band);
  REQUIRE(miss.nearest);
  CHECK(miss.nearest->group == training_key("H100", "dense", "pretrain", "megatron-core"));
  CHECK(report::describe(miss).rfind("no validation data for dense H100 SFT on Megatron-Core (nearest validated group, not this one: ", 0) == 0);
  // H200 has no rows: the nearest is H100 (same GPU family), not Blackwell with more rows.
  json more = bands;
  more["training"].push_back(band_entry(training_key("Blackwell", "dense", "pretrain", "megatron-core"), 25, 0.05, -0.01));
  const auto h200 = report::lookup_band(more, "b.json", "training", training_key("H200", "dense", "pretrain", "megatron-core"));
  CHECK_FALSE(h200.band);
  REQUIRE(h200.nearest);
  CHECK(h200.nearest->group["generation"] == "H100");
  const auto none = report::lookup_band(bands, "b.json", "serving", json{{"generation", "A100"}, {"kind", "MoE"}, {"mode", "server"}});
  CHECK_FALSE(none.band);
  CHECK_FALSE(none.nearest);
  CHECK(report::describe(none) == "no validation data for MoE A100 serving, server");
}

TEST_CASE("a bands file off its schema is one clear input error naming the file and key", "[error_band]") {
  json bands = {{"schema", "fmsim.error_bands/1"},
                {"training", {band_entry(training_key("H100", "dense", "pretrain", "megatron-core"), 10, 0.05, 0.05)}},
                {"serving", json::array()}};
  const json key = training_key("H100", "dense", "pretrain", "megatron-core");
  json wrong = bands;
  wrong["schema"] = "fmsim.error_bands/2";
  CHECK_THROWS_AS(report::lookup_band(wrong, "b.json", "training", key), InputError);
  wrong = bands;
  wrong["training"][0]["mean_abs_error"] = -0.1;
  try {
    report::lookup_band(wrong, "b.json", "training", key);
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("b.json: /training/0/mean_abs_error: expected a non-negative number") == 0);
  }
  wrong = bands;
  wrong["training"][0]["group"].erase("stack");
  CHECK_THROWS_AS(report::lookup_band(wrong, "b.json", "training", key), InputError);
  wrong = bands;
  wrong.erase("serving");
  CHECK_THROWS_AS(report::lookup_band(wrong, "b.json", "serving", key), InputError);
}

TEST_CASE("the shipped bands file follows its schema in every group", "[error_band]") {
  const json bands = shipped_bands();
  CHECK(bands["schema"] == "fmsim.error_bands/1");
  for (const char* category : {"training", "serving"}) {
    REQUIRE(bands[category].size() > 0);
    for (const auto& entry : bands[category]) {
      // lookup_band validates every entry it passes; looking each group up must find it exactly.
      const auto band = report::lookup_band(bands, "error_bands.json", category, entry["group"]);
      REQUIRE(band.band);
      CHECK(band.band->n == entry["n"].get<int>());
      CHECK(band.band->mean_abs_error >= std::abs(band.band->signed_mean) - 1e-9);
      CHECK(std::abs(band.band->worst) >= band.band->mean_abs_error - 1e-9);
      CHECK(entry["source"].contains("date"));
      CHECK(entry["source"].contains("commit"));
      CHECK(entry["source"].contains("measurements"));
    }
  }
  REQUIRE(bands["collectives"].size() > 0);
}

TEST_CASE("the stack of a training group: current Megatron is one group, other stacks name their release", "[error_band]") {
  workload::Framework f;  // the default: Megatron-Core current
  CHECK(report::training_stack_key(f) == report::kDefaultTrainingStack);
  f.name = "megatron-bridge";
  f.release = "26.02";
  CHECK(report::training_stack_key(f) == report::kDefaultTrainingStack);
  f.release = "25.09";  // before the "current releases" of issue #25
  CHECK(report::training_stack_key(f) == "megatron-bridge@25.09");
  f.name = "torchtitan";
  f.release = "2025-03";
  CHECK(report::training_stack_key(f) == "torchtitan@2025-03");
}
