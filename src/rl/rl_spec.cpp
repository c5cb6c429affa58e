// The "rl" section of a training scenario (rl_spec.hpp): what one RL iteration generates, scores and
// trains, and where the rollout runs.
#include "fmsim/rl/rl_spec.hpp"

#include <limits>

#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::rl {

using nlohmann::json;

namespace {

/// A length as a serving workload takes it: a token count or a distribution object (checked in full by
/// the serving loader when the rollout is built).
json length_value(config::ObjectReader& r, const std::string& key) {
  const json& value = r.required_value(key);
  const bool count = value.is_number_unsigned() || (value.is_number_integer() && value.get<long long>() >= 1);
  if (!(count || value.is_object()) || (count && value.get<std::uint64_t>() < 1)) {
    r.fail(key, "a token count or a distribution object such as {\"distribution\": \"lognormal\", \"mean\": 1024, "
                "\"sigma\": 0.6, \"max\": 4096} (as a serving workload's input_tokens)");
  }
  return value;
}

}  // namespace

bool is_rl_document(const json& document) {
  return document.is_object() && document.contains("training") && document["training"].is_object() &&
         document["training"].contains("workload") && document["training"]["workload"] == "rl";
}

RlSpec read_rl_spec(const json& document, const std::string& origin) {
  if (!document.contains("rl") || !document["rl"].is_object()) {
    throw InputError(origin + ": training.workload is \"rl\" but there is no \"rl\" section (expected an object with "
                     "prompts_per_iteration, response_tokens, rollout, ...; docs/formats.md)");
  }
  config::ObjectReader r(document["rl"], origin, "/rl");
  RlSpec spec;
  spec.algorithm = r.choice_or("algorithm", {"grpo", "ppo"}, "grpo") == "ppo" ? Algorithm::ppo : Algorithm::grpo;
  spec.prompts = static_cast<int>(r.required_int("prompts_per_iteration", 1, 1 << 20));
  spec.group_size = static_cast<int>(r.int_or("group_size", spec.algorithm == Algorithm::grpo ? 8 : 1, 1, 1024));
  if (spec.samples() > (1 << 22)) {
    r.fail("group_size", "at most 4,194,304 responses per iteration in all (prompts_per_iteration x group_size)");
  }
  spec.prompt_tokens = length_value(r, "prompt_tokens");
  spec.response_tokens = length_value(r, "response_tokens");
  spec.mini_batches = static_cast<int>(r.int_or("mini_batches", 1, 1, 4096));
  spec.epochs = static_cast<int>(r.int_or("epochs", 1, 1, 64));
  if (spec.mini_batches > spec.samples()) {
    r.fail("mini_batches", "at most the responses per iteration (" + std::to_string(spec.samples()) + ")");
  }
  spec.reference_model = r.bool_or("reference_model", true);
  spec.reward_model = r.bool_or("reward_model", false);
  spec.reference_on_host = r.bool_or("reference_on_host", false);
  if (spec.reference_on_host && !spec.reference_model) r.fail("reference_on_host", "false without a reference model (reference_model false)");
  spec.weight_sync = r.choice_or("weight_sync", {"full", "sharded"}, "full") == "sharded" ? WeightSync::sharded : WeightSync::full;
  spec.packing_efficiency = r.number_or("packing_efficiency", 0.95, 0.0);
  if (spec.packing_efficiency > 1.0) r.fail("packing_efficiency", "a fraction in (0, 1]: real tokens per packed row");
  spec.sequence_packing = r.bool_or("sequence_packing", true);
  if (!spec.sequence_packing && r.has("packing_efficiency")) {
    r.fail("packing_efficiency", "no such key with sequence_packing false (every sample is its own row, padded to the longest)");
  }
  const std::string placement = r.choice_or("placement", {"colocated", "disaggregated"}, "colocated");
  spec.placement = placement == "disaggregated" ? Placement::disaggregated : Placement::colocated;
  spec.staleness = static_cast<int>(r.int_or("staleness", 0, 0, 16));
  if (spec.placement == Placement::colocated && spec.staleness > 0) {
    r.fail("staleness", "0 with placement \"colocated\" (the same GPUs generate and train in turn; an off-policy lag "
                        "needs placement \"disaggregated\")");
  }
  spec.offload = r.bool_or("offload", spec.placement == Placement::colocated);
  if (spec.placement == Placement::disaggregated && r.has("offload") && spec.offload) {
    r.fail("offload", "false with placement \"disaggregated\" (the trainer keeps its GPUs)");
  }
  spec.seed = static_cast<std::uint64_t>(r.int_or("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  spec.nodes = static_cast<int>(r.int_or("nodes", 0, 1, 1 << 20));
  config::ObjectReader rollout = r.required_object("rollout");
  spec.rollout = document["rl"]["rollout"];
  if (spec.placement == Placement::disaggregated) {
    spec.rollout_nodes = static_cast<int>(rollout.required_int("nodes", 1, 1 << 20));
  } else if (rollout.has("nodes")) {
    rollout.fail("nodes", "no such key with placement \"colocated\" (the rollout runs on the trainer's GPUs)");
  }
  for (const char* key : {"replicas", "disaggregation"}) {
    if (rollout.has(key)) {
      rollout.fail(key, std::string("no such key: the rollout's replicas fill its GPUs (") +
                            (spec.placement == Placement::disaggregated ? "rollout.nodes" : "the trainer's") + ") at its layout");
    }
  }
  spec.rollout.erase("nodes");
  r.reject_unknown_keys();
  return spec;
}

std::string to_string(Algorithm algorithm) { return algorithm == Algorithm::ppo ? "ppo" : "grpo"; }
std::string to_string(Placement placement) { return placement == Placement::disaggregated ? "disaggregated" : "colocated"; }

}  // namespace fmsim::rl
