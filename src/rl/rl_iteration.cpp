// One RL iteration from its phases (rl_iteration.hpp): the placements' closed forms, and the result
// as text and JSON.
#include "fmsim/rl/rl_iteration.hpp"

#include <algorithm>
#include <cstdio>

#include "fmsim/units/format.hpp"

namespace fmsim::rl {

using nlohmann::json;

RlTiming compose_iteration(const RlPhases& p, Placement placement, int staleness) {
  RlTiming t;
  const double training = p.forward_s + p.update_s;
  t.rollout_busy_s = p.generation_s;
  t.trainer_busy_s = training;
  if (placement == Placement::colocated) {
    t.iteration_s = p.generation_s + training + p.weight_sync_s + p.handover_s;
  } else if (staleness == 0) {
    t.iteration_s = p.generation_s + p.weight_sync_s + training;
  } else {
    t.iteration_s = std::max(p.generation_s, training) + p.weight_sync_s;
  }
  // Colocated, "idle" is the time neither role's work runs on the GPUs (weight and state moves).
  t.rollout_idle_s = t.iteration_s - t.rollout_busy_s - (placement == Placement::colocated ? training : 0.0);
  t.trainer_idle_s = t.iteration_s - t.trainer_busy_s - (placement == Placement::colocated ? p.generation_s : 0.0);
  return t;
}

std::vector<RlSpan> iteration_timeline(const RlPhases& p, Placement placement, int staleness) {
  std::vector<RlSpan> spans;
  auto add = [&spans](const char* role, const char* phase, double start, double length) {
    if (length > 0) spans.push_back({role, phase, start, start + length});
    return start + length;
  };
  double t = 0;
  if (placement == Placement::colocated) {
    t = add("trainer", "handover", t, p.handover_s / 2);  // trainer state out to host memory
    t = add("rollout", "generation", t, p.generation_s);
    t = add("trainer", "handover", t, p.handover_s / 2);  // and back
    t = add("trainer", "forward", t, p.forward_s);
    t = add("trainer", "update", t, p.update_s);
    add("rollout", "weight_sync", t, p.weight_sync_s);
    add("trainer", "weight_sync", t, p.weight_sync_s);
  } else if (staleness == 0) {
    t = add("rollout", "generation", t, p.generation_s);
    add("rollout", "weight_sync", t, p.weight_sync_s);
    t = add("trainer", "weight_sync", t, p.weight_sync_s);
    t = add("trainer", "forward", t, p.forward_s);
    add("trainer", "update", t, p.update_s);
  } else {
    add("rollout", "generation", 0, p.generation_s);
    const double trained = add("trainer", "update", add("trainer", "forward", 0, p.forward_s), p.update_s);
    t = std::max(p.generation_s, trained);
    add("rollout", "weight_sync", t, p.weight_sync_s);
    add("trainer", "weight_sync", t, p.weight_sync_s);
  }
  return spans;
}

// vLLM and SGLang load the policy in BF16 from the trainer (veRL, NeMo-RL and OpenRLHF gather and send
// BF16 tensors; an FP8 rollout quantizes after loading).
double weight_sync_bytes(double parameters) { return 2.0 * parameters; }

json to_json(const RlResult& r) {
  const auto& p = r.phases;
  const auto& t = r.timing;
  json doc = {{"schema", "fmsim.rl/1"},
              {"name", r.name},
              {"algorithm", to_string(r.spec.algorithm)},
              {"placement", to_string(r.spec.placement)},
              {"staleness", r.spec.staleness},
              {"weight_sync", r.spec.weight_sync == WeightSync::full ? "full" : "sharded"},
              {"prompts", r.spec.prompts},
              {"group_size", r.spec.group_size},
              {"samples", r.spec.samples()},
              {"mean_prompt_tokens", r.mean_prompt_tokens},
              {"mean_response_tokens", r.mean_response_tokens},
              {"iteration_s", t.iteration_s},
              {"breakdown_s",
               {{"generation", p.generation_s},
                {"generation_tail", p.generation_tail_s},
                {"forward", p.forward_s},
                {"update", p.update_s},
                {"weight_sync", p.weight_sync_s},
                {"handover", p.handover_s}}},
              {"roles",
               {{"rollout", {{"gpus", r.rollout_gpus}, {"busy_s", t.rollout_busy_s}, {"idle_s", t.rollout_idle_s},
                             {"utilization", t.iteration_s > 0 ? t.rollout_busy_s / t.iteration_s : 0.0},
                             {"replicas", r.rollout_replicas}, {"tensor_parallel_size", r.rollout_tp},
                             {"pipeline_parallel_size", r.rollout_pp},
                             {"output_tokens_per_s", r.generation_output_tokens_per_s}}},
                {"trainer", {{"gpus", r.trainer_gpus}, {"busy_s", t.trainer_busy_s}, {"idle_s", t.trainer_idle_s},
                             {"utilization", t.iteration_s > 0 ? t.trainer_busy_s / t.iteration_s : 0.0},
                             {"tensor_parallel_size", r.trainer_tp}, {"pipeline_parallel_size", r.trainer_pp},
                             {"data_parallel_size", r.trainer_dp}, {"memory_bytes_per_gpu", r.trainer_memory_bytes}}}}},
              {"forward_passes", r.spec.forward_passes()},
              {"forward_pass_s", r.forward_pass_s},
              {"update_steps", r.update_steps},
              {"update_step_s", r.update_step_s},
              {"packed_rows_per_step", r.packed_rows_per_step},
              {"seq_length", r.seq_length},
              {"sequence_packing", r.spec.sequence_packing},
              {"sample_row_tokens", r.sample_row_tokens},
              {"weight_sync_bytes", r.weight_bytes},
              {"handover_bytes_per_gpu", r.handover_bytes_per_gpu},
              {"reference_swap_s", r.reference_swap_s},
              {"samples_per_s", r.samples_per_s()},
              {"response_tokens_per_s", r.response_tokens_per_s()},
              {"cluster", {{"gpu", r.gpu}, {"instance_type", r.instance_type}, {"nodes", r.nodes}, {"gpus", r.total_gpus}}}};
  json timeline = json::array();
  for (const auto& span : iteration_timeline(p, r.spec.placement, r.spec.staleness)) {
    timeline.push_back({{"role", span.role}, {"phase", span.phase}, {"start_s", span.start_s}, {"end_s", span.end_s}});
  }
  doc["timeline"] = timeline;
  doc["usd_per_hour"] = r.usd_per_hour ? json(*r.usd_per_hour) : json(nullptr);
  doc["usd_per_iteration"] = r.usd_per_hour ? json(*r.usd_per_hour * t.iteration_s / 3600.0) : json(nullptr);
  return doc;
}

json timeline_json(const RlResult& r) {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", r.name + " (one RL iteration)"}}}});
  int tid = 0;
  for (const char* role : {"rollout", "trainer"}) {
    const int gpus = std::string(role) == "rollout" ? r.rollout_gpus : r.trainer_gpus;
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", tid++},
                      {"args", {{"name", std::string(role) + " (" + std::to_string(gpus) + " GPUs)"}}}});
  }
  for (const auto& span : iteration_timeline(r.phases, r.spec.placement, r.spec.staleness)) {
    events.push_back({{"ph", "X"}, {"name", span.phase}, {"cat", span.role}, {"pid", 0}, {"tid", span.role == "rollout" ? 0 : 1},
                      {"ts", span.start_s * 1e6}, {"dur", (span.end_s - span.start_s) * 1e6}});
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

std::string to_text(const RlResult& r) {
  const auto& p = r.phases;
  const auto& t = r.timing;
  std::string out;
  char line[400];
  std::snprintf(line, sizeof line, "%s: %s RL iteration, %s on %d x %s (%d %s)\n", r.name.c_str(),
                to_string(r.spec.algorithm) == "ppo" ? "PPO" : "GRPO", to_string(r.spec.placement).c_str(), r.nodes,
                r.instance_type.c_str(), r.total_gpus, r.gpu.c_str());
  out += line;
  std::snprintf(line, sizeof line, "  %d prompts x %d responses = %lld samples; prompt %.0f, response %.0f tokens on average\n",
                r.spec.prompts, r.spec.group_size, r.spec.samples(), r.mean_prompt_tokens, r.mean_response_tokens);
  out += line;
  std::snprintf(line, sizeof line, "  rollout: %d GPUs, %d x (TP%d PP%d); trainer: %d GPUs, TP%d PP%d DP%d\n", r.rollout_gpus,
                r.rollout_replicas, r.rollout_tp, r.rollout_pp, r.trainer_gpus, r.trainer_tp, r.trainer_pp, r.trainer_dp);
  out += line;
  std::snprintf(line, sizeof line, "iteration %s (%s), %.1f samples/s, %.0f response tokens/s\n",
                units::format_time(t.iteration_s).c_str(),
                r.spec.placement == Placement::colocated ? "phases in turn"
                : r.spec.staleness == 0                  ? "pools in turn, staleness 0"
                                                         : ("generation overlaps training, staleness " + std::to_string(r.spec.staleness)).c_str(),
                r.samples_per_s(), r.response_tokens_per_s());
  out += line;
  auto row = [&](const char* what, double seconds, const std::string& note) {
    std::snprintf(line, sizeof line, "  %-12s %10s  %s\n", what, units::format_time(seconds).c_str(), note.c_str());
    out += line;
  };
  char note[200];
  std::snprintf(note, sizeof note, "rollout engine, %.0f output tokens/s; last 10%% of responses: %s", r.generation_output_tokens_per_s,
                units::format_time(p.generation_tail_s).c_str());
  row("generation", p.generation_s, note);
  std::snprintf(note, sizeof note, "%d forward pass(es) over the samples (log-probs, reference, reward, values), %s each%s%s",
                r.spec.forward_passes(), units::format_time(r.forward_pass_s).c_str(), r.reference_swap_s > 0 ? "; reference swapped in: " : "",
                r.reference_swap_s > 0 ? units::format_time(r.reference_swap_s).c_str() : "");
  row("forward", p.forward_s, note);
  if (r.spec.sequence_packing) {
    std::snprintf(note, sizeof note, "%d optimizer step(s) of %d packed rows x %d tokens, %s each", r.update_steps,
                  r.packed_rows_per_step, r.seq_length, units::format_time(r.update_step_s).c_str());
  } else {
    std::snprintf(note, sizeof note, "%d optimizer step(s) of %d rows of one sample each, padded to the longest (%.0f tokens), %s each",
                  r.update_steps, r.packed_rows_per_step, r.sample_row_tokens, units::format_time(r.update_step_s).c_str());
  }
  row("update", p.update_s, note);
  row("weight sync", p.weight_sync_s,
      units::format_bytes(r.weight_bytes) + " of BF16 weights into the rollout layout" +
          (r.spec.weight_sync == WeightSync::full ? " (whole tensors to every rollout GPU)" : " (each rollout GPU its shard)"));
  if (r.spec.placement == Placement::colocated) {
    row("handover", p.handover_s,
        r.spec.offload ? units::format_bytes(r.handover_bytes_per_gpu) + " per GPU to host memory and back (trainer state; the engine's weights)"
                       : std::string("none (offload false)"));
  }
  std::snprintf(line, sizeof line, "  utilization: rollout %.0f %%, trainer %.0f %% of the iteration\n",
                t.iteration_s > 0 ? 100.0 * t.rollout_busy_s / t.iteration_s : 0.0,
                t.iteration_s > 0 ? 100.0 * t.trainer_busy_s / t.iteration_s : 0.0);
  out += line;
  if (r.usd_per_hour) {
    std::snprintf(line, sizeof line, "  cost %s per iteration (%s per hour)\n", units::format_usd(*r.usd_per_hour * t.iteration_s / 3600.0).c_str(),
                  units::format_usd(*r.usd_per_hour).c_str());
    out += line;
  }
  return out;
}

}  // namespace fmsim::rl
