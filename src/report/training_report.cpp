// Metrics, JSON and text summary of a simulated training step.
#include "fmsim/workload/low_precision.hpp"
#include "fmsim/report/training_report.hpp"

#include "fmsim/report/error_band.hpp"
#include "fmsim/report/gpu_usage.hpp"
#include "fmsim/report/pipeline_timeline.hpp"
#include "fmsim/report/stage_breakdown.hpp"

#include <cstdio>
#include <map>
#include <set>
#include <sstream>

namespace fmsim::report {

using nlohmann::json;

TrainingMetrics metrics_of(const TrainingRun& run) {
  const auto& s = *run.scenario;
  const auto& trace = *run.trace;
  TrainingMetrics m;
  const double step = run.step.step_time_s;
  const double gpus = trace.world;
  if (step <= 0) return m;
  m.tokens_per_s = trace.tokens_per_step / step;
  m.tokens_per_s_per_gpu = m.tokens_per_s / gpus;
  const double flops_per_gpu = trace.model_flops_per_step / step / gpus;
  m.model_tflops_per_gpu = flops_per_gpu / 1e12;
  m.mfu = flops_per_gpu / s.cluster.gpu.bf16_dense_flops;
  m.mfu_precision_peak = flops_per_gpu / workload::precision_peak_flops(s.training, s.cluster.gpu);
  if (s.cluster.usd_per_hour_per_node) {
    const double nodes = gpus / s.cluster.gpus_per_node;
    m.priced = true;
    m.usd_per_hour = *s.cluster.usd_per_hour_per_node * nodes;
    m.usd_per_step = m.usd_per_hour * step / 3600.0;
    m.usd_per_million_tokens = m.usd_per_step / trace.tokens_per_step * 1e6;
  }
  return m;
}

json run_to_json(const TrainingRun& run) {
  const auto& s = *run.scenario;
  const auto& p = s.parallelism;
  const auto& step = run.step;
  const TrainingMetrics m = metrics_of(run);
  const auto params = workload::count_parameters(s.model);
  const auto& peak = run.memory.peak;
  json memory = {{"pipeline_rank", peak.pipeline_rank}, {"weights_bytes", peak.weights_bytes},
                 {"gradients_bytes", peak.gradients_bytes}, {"optimizer_bytes", peak.optimizer_bytes},
                 {"activations_bytes", peak.activations_bytes}, {"reserved_bytes", peak.reserved_bytes},
                 {"inflight_microbatches", peak.inflight_microbatches}, {"total_bytes", peak.total_bytes}};
  json by_rank = json::array();
  for (const auto& b : run.memory.by_pipeline_rank) by_rank.push_back({{"pipeline_rank", b.pipeline_rank}, {"total_bytes", b.total_bytes}});
  memory["by_pipeline_rank"] = by_rank;
  json doc = {
      {"schema", "fmsim.run/1"},
      {"name", s.name},
      {"step_time_s", step.step_time_s},
      {"tokens_per_step", run.trace->tokens_per_step},
      {"tokens_per_s", m.tokens_per_s},
      {"tokens_per_s_per_gpu", m.tokens_per_s_per_gpu},
      {"model_flops_per_step", run.trace->model_flops_per_step},
      {"model_tflops_per_gpu", m.model_tflops_per_gpu},
      {"mfu", m.mfu},
      {"mfu_precision_peak", m.mfu_precision_peak},
      {"hbm_peak_bytes", peak.total_bytes},
      {"hbm_capacity_bytes", run.memory.hbm_bytes},
      {"oom", run.memory.oom},
      {"memory", memory},
      {"breakdown_s", step.breakdown_s},
      {"breakdown_rank", step.critical_rank},
      {"breakdown_pipeline_rank", critical_pipeline_rank(run)},
      {"breakdown_by_pipeline_rank", stage_breakdown_json(run)},
      {"busiest_link", {{"name", step.busiest_link.name}, {"bytes", step.busiest_link.bytes}, {"utilization", step.busiest_link.utilization}}},
      {"usd_per_step", m.priced ? json(m.usd_per_step) : json(nullptr)},
      {"usd_per_million_tokens", m.priced ? json(m.usd_per_million_tokens) : json(nullptr)},
      {"usd_per_hour", m.priced ? json(m.usd_per_hour) : json(nullptr)},
      {"model", {{"name", s.model.name}, {"parameters", params.total}, {"active_parameters", params.active}}},
      {"derived", {{"gpus", run.trace->world}, {"nodes", run.trace->world / s.cluster.gpus_per_node}, {"data_parallel_size", p.dp},
                   {"microbatches", p.microbatches}, {"gpu", s.cluster.gpu.name}, {"instance_type", s.cluster.instance.name},
                   {"precision", workload::to_string(s.training.precision)},
                   {"workload", workload::to_string(s.training.fine_tuning.workload)},
                   {"framework", workload::framework_display_name(s)},
                   {"recipe", s.recipe ? json{{"reference", s.recipe->reference}, {"release", s.recipe->release},
                                              {"variant", s.recipe->variant}, {"not_modelled", s.recipe->not_modelled}}
                                       : json(nullptr)},
                   {"fp8_recipe", s.training.precision == workload::Precision::fp8 ? json(workload::to_string(s.training.fp8_recipe)) : json(nullptr)},
                   {"fp4_recipe", s.training.precision == workload::Precision::fp4 ? json(workload::to_string(s.training.fp4_recipe)) : json(nullptr)}}},
      {"simulation", {{"fidelity", run.fidelity}, {"simulated_ranks", step.simulated_ranks}, {"trace_nodes", run.trace->nodes.size()},
                      {"tasks", step.tasks}, {"flows", step.flows}, {"wall_s", run.wall_s}}},
      {"scenario", s.resolved},
      {"gpus", gpu_usage(run)},
      {"pipeline_timeline", pipeline_timeline(run)},
  };
  doc["error_band"] = to_json(training_error_band(s));  // error_band.hpp: the validation group's band
  if (run.checkpoint) {
    json checkpoint = storage::to_json(*run.checkpoint, step.step_time_s);
    doc["checkpoint"] = checkpoint;
    // Checkpoint stalls spread over the steps between checkpoints.
    doc["step_time_with_checkpoint_s"] = step.step_time_s + checkpoint["amortized_stall_per_step_s"].get<double>();
  }
  return doc;
}

namespace {

std::string fmt(const char* format, double value) {
  char text[64];
  std::snprintf(text, sizeof text, format, value);
  return text;
}

}  // namespace

std::string run_summary(const TrainingRun& run) {
  const auto& s = *run.scenario;
  const auto& p = s.parallelism;
  const auto& step = run.step;
  const TrainingMetrics m = metrics_of(run);
  std::ostringstream out;
  out << s.name << ": " << s.model.name << " on " << run.trace->world << " x " << s.cluster.gpu.name << " ("
      << run.trace->world / s.cluster.gpus_per_node << " x " << s.cluster.instance.name << ")\n";
  out << "  strategy   TP" << p.tp << " PP" << p.pp << (p.vp > 1 ? " VP" + std::to_string(p.vp) : "") << " CP" << p.cp
      << " DP" << p.dp << (p.ep > 1 ? " EP" + std::to_string(p.ep) : "") << (p.sequence_parallel ? " SP" : "")
      << ", micro-batch " << p.micro_batch << ", global batch " << p.global_batch << " (" << p.microbatches
      << " micro-batches per pipeline), seq " << s.training.seq << ", " << workload::describe_precision(s.training)
      << ", recompute " << workload::describe_recompute(s.training) << ", sharding " << workload::to_string(p.sharding)
      << (s.training.moe_dispatcher == workload::MoeDispatcher::flex ? ", flex dispatcher" : "")
      << (s.training.overlap_moe_expert_parallel_comm ? ", EP all-to-all overlap" : "")
      << (s.training.fine_tuning.workload != workload::Workload::pretrain
              ? ", " + workload::describe_workload(s.training.fine_tuning, s.training.seq) : "")
      << (s.model.mtp_layers > 0 ? ", MTP " + std::to_string(s.model.mtp_layers) : "") << "\n";
  if (!s.framework.is_default()) out << "  stack      " << workload::framework_display_name(s) << " (configs/stacks/" << s.framework.name << ".json)\n";
  if (s.recipe) {
    out << "  recipe     " << s.recipe->reference << " (release " << s.recipe->release << ", variant \"" << s.recipe->variant << "\""
        << (s.recipe->not_modelled.empty() ? std::string() : ", " + std::to_string(s.recipe->not_modelled.size()) + " setting(s) not modelled: -v lists them")
        << ")\n";
  }
  out << "  step time      " << fmt("%10.3f s", step.step_time_s) << " (" << describe(training_error_band(s)) << ")\n";
  out << "  tokens/s/GPU   " << fmt("%10.0f", m.tokens_per_s_per_gpu) << "\n";
  out << "  model TFLOP/s  " << fmt("%10.1f", m.model_tflops_per_gpu) << " per GPU\n";
  out << "  MFU            " << fmt("%9.1f %%", 100 * m.mfu) << " of BF16 peak"
      << (s.training.precision != workload::Precision::bf16
              ? fmt(" (%.1f %%", 100 * m.mfu_precision_peak) + " of " + workload::precision_peak_name(s.training, s.cluster.gpu) + " peak)"
              : std::string())
      << "\n";
  out << "  breakdown (critical rank " << step.critical_rank;
  if (p.pp > 1) out << ", pipeline stage " << critical_pipeline_rank(run) << ": the busiest, whose time bounds the step";
  out << "; exposed time):\n";
  for (const auto& key : breakdown_keys()) {
    auto it = step.breakdown_s.find(key);
    const double value = it == step.breakdown_s.end() ? 0.0 : it->second;
    if (value <= 0 && key != "compute") continue;
    char line[96];
    std::snprintf(line, sizeof line, "    %-10s %10.3f s  %5.1f %%\n", key.c_str(), value, 100 * value / step.step_time_s);
    out << line;
  }
  out << stage_breakdown_table(run);
  const auto& mem = run.memory.peak;
  char line[256];
  std::snprintf(line, sizeof line, "  memory/GPU     %10.1f GB of %.1f GB%s (weights %.1f, grads %.1f, optimizer %.1f, activations %.1f, reserved %.1f; pipeline rank %d)\n",
                mem.total_bytes / 1e9, run.memory.hbm_bytes / 1e9, run.memory.oom ? "  OUT OF MEMORY" : "",
                mem.weights_bytes / 1e9, mem.gradients_bytes / 1e9, mem.optimizer_bytes / 1e9, mem.activations_bytes / 1e9,
                mem.reserved_bytes / 1e9, mem.pipeline_rank);
  out << line;
  if (!step.busiest_link.name.empty()) {
    out << "  busiest link   " << step.busiest_link.name << fmt(" (%.0f %% busy)", 100 * step.busiest_link.utilization) << "\n";
  }
  if (m.priced) {
    std::snprintf(line, sizeof line, "  cost           $%.4f per step, $%.2f per million tokens ($%.2f/h)\n", m.usd_per_step,
                  m.usd_per_million_tokens, m.usd_per_hour);
    out << line;
  }
  if (run.checkpoint) {
    const auto& c = *run.checkpoint;
    std::snprintf(line, sizeof line,
                  "  checkpoint     %s %s every %lld steps: stall %.3f s (%.4f s per step), save %.1f s, restore %.1f s; "
                  "goodput %.1f %% over %.1f days with %.0f failures\n",
                  storage::to_string(c.plan.strategy).c_str(), storage::to_string(c.plan.mode).c_str(), c.interval_steps,
                  c.io.stall_s, c.io.stall_s / c.interval_steps, c.io.save.time_s, c.io.restore.time_s, 100 * c.goodput.goodput,
                  c.goodput.wall_s / 86400, c.goodput.interruptions);
    out << line;
  }
  std::snprintf(line, sizeof line, "  simulated      %d ranks, %lld tasks, %lld flows (%s fidelity) in %.2f s\n", step.simulated_ranks,
                step.tasks, step.flows, run.fidelity.c_str(), run.wall_s);
  out << line;
  return out.str();
}

json run_timeline(const TrainingRun& run) {
  const auto& trace = *run.trace;
  json events = json::array();
  std::map<std::pair<int, std::string>, int> threads;
  std::set<int> processes;
  std::map<int, int> streams_of_rank;
  const int gpus_per_node = run.scenario->cluster.gpus_per_node;
  for (const auto& node : trace.nodes) {
    const double start = run.step.node_start_s[node.id], end = run.step.node_end_s[node.id];
    if (!(end > start)) continue;
    const int pid = trace.rank_gpu[node.rank] / gpus_per_node;
    const std::string stream = node.stream.empty() ? "recv" : node.stream;
    auto key = std::make_pair(node.rank, stream);
    auto it = threads.find(key);
    if (it == threads.end()) {
      const int tid = node.rank * 16 + streams_of_rank[node.rank]++;
      it = threads.emplace(key, tid).first;
      events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", pid}, {"tid", tid},
                        {"args", {{"name", "rank " + std::to_string(node.rank) + " " + stream}}}});
      if (processes.insert(pid).second) {
        events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", pid}, {"args", {{"name", "node " + std::to_string(pid)}}}});
      }
    }
    json event = {{"ph", "X"}, {"name", node.name}, {"cat", workload::to_string(node.category)}, {"pid", pid},
                  {"tid", it->second}, {"ts", start * 1e6}, {"dur", (end - start) * 1e6}};
    if (node.type == workload::NodeType::coll || node.type == workload::NodeType::send || node.type == workload::NodeType::recv) {
      event["args"] = {{"bytes", node.comm_bytes}};
    }
    events.push_back(std::move(event));
  }
  return {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace fmsim::report
