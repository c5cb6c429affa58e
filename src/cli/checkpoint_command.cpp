// fmsim checkpoint SCENARIO.json [--strategy fsx|s3|nvme+fsx|nvme+s3|peer] [--set path=value ...] [--json FILE|-]
// Compares checkpoint strategies (or judges one): bytes, save time, step stall, restore time, the
// bottleneck resource, and goodput, time and cost to train under injected failures.
#include <cstdio>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/storage/assessment.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/units/format.hpp"
#include "fmsim/workload/trace_builder.hpp"

#include "fmsim/report/time_series.hpp"
#include "metrics_options.hpp"

namespace fmsim::cli {
namespace {

struct CheckpointOptions {
  std::string scenario_file, json_file, strategy;
  std::vector<std::string> sets;
  bool allow_oom = false;
  MetricsCli metrics;
};

std::string days(double seconds) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f d", seconds / 86400.0);
  return text;
}

std::string summary(const workload::Scenario& s, const storage::CheckpointContents& c, double step_time_s,
                    const storage::RunLength& run, double failures_per_hour,
                    const std::vector<storage::Assessment>& rows) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %d GPUs (%d x %s), step %.2f s, %lld steps (%s)\n", s.name.c_str(),
                s.cluster.total_gpus(), s.cluster.nodes, s.cluster.instance.name.c_str(), step_time_s, run.steps,
                run.source.c_str());
  out += line;
  std::snprintf(line, sizeof line, "checkpoint %s (weights %s, optimizer %s), %s per GPU at most, %d files\n",
                units::format_bytes(c.total_bytes).c_str(), units::format_bytes(c.weights_bytes).c_str(),
                units::format_bytes(c.optimizer_bytes).c_str(), units::format_bytes(c.max_rank_bytes).c_str(), c.files);
  out += line;
  std::snprintf(line, sizeof line, "failures: %.3f per hour (MTBF %.1f h)\n\n", failures_per_hour,
                failures_per_hour > 0 ? 1.0 / failures_per_hour : 0.0);
  out += line;
  std::snprintf(line, sizeof line, "%-14s %-5s %10s %9s %10s %9s %8s %8s %9s  %s\n", "strategy", "mode", "save", "stall",
                "restore", "interval", "goodput", "failures", "to train", "bottleneck (save)");
  out += line;
  for (const auto& a : rows) {
    if (!a.available) {
      std::snprintf(line, sizeof line, "%-14s unavailable: %s\n", (a.name.empty() ? storage::to_string(a.plan.strategy) : a.name).c_str(),
                    a.unavailable_reason.c_str());
      out += line;
      continue;
    }
    std::snprintf(line, sizeof line, "%-14s %-5s %10s %9s %10s %9lld %7.2f%% %8.1f %9s  %s (%.0f%%)\n",
                  (a.name.empty() ? storage::to_string(a.plan.strategy) : a.name).c_str(), storage::to_string(a.plan.mode).c_str(),
                  units::format_time(a.io.save.time_s).c_str(), units::format_time(a.io.stall_s).c_str(),
                  units::format_time(a.io.restore.time_s).c_str(), a.interval_steps, 100 * a.goodput.goodput,
                  a.goodput.interruptions, days(a.goodput.wall_s).c_str(), a.io.save.bottleneck.c_str(),
                  100 * a.io.save.bottleneck_utilization);
    out += line;
  }
  out += "\nsave: start to durable (survives a node loss); stall: training blocked per checkpoint; interval in steps\n";
  out += "checkpointless: peer copies and in-process recovery (no relaunch; SageMaker HyperPod's checkpointless training)\n";
  return out;
}

int run_checkpoint(const GlobalOptions& globals, const CheckpointOptions& o) {
  const report::MetricsOptions metrics_opts = metrics_options(o.metrics);
  auto catalog = load_catalog(globals);
  const workload::Scenario s = workload::load_scenario(o.scenario_file, o.sets, catalog);
  storage::CheckpointPlan plan = storage::read_checkpoint_plan(s);
  const storage::FailureModel failures = storage::read_failure_model(s);
  std::vector<storage::Strategy> strategies = storage::all_strategies();
  // "checkpointless": the peer strategy with in-process recovery (SageMaker HyperPod's checkpointless
  // training), a row of its own beside the strategies under the scenario's recovery.
  const bool checkpointless_only = o.strategy == "checkpointless";
  if (!o.strategy.empty() && !checkpointless_only) {
    auto chosen = storage::parse_strategy(o.strategy);
    if (!chosen) throw InputError("--strategy '" + o.strategy + "': expected one of " + storage::strategy_names() + ", checkpointless");
    plan.strategy = *chosen;
    strategies = {*chosen};
  }
  if (checkpointless_only) strategies.clear();

  const auto memory = workload::estimate_memory(s);
  if (memory.oom && !o.allow_oom) {
    throw InputError(s.file + ": the model does not fit: " + workload::describe_oom(memory) + " (--allow-oom assesses anyway)");
  }
  if (memory.oom) spdlog::warn("{}: the model does not fit: {}", s.file, workload::describe_oom(memory));
  auto cluster = topology::build_cluster_graph(s.cluster);
  auto rank_gpu = topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed);
  spdlog::info("{}: simulating one training step", s.name);
  const auto trace = workload::build_trace(s, rank_gpu, false);
  const double step_time_s = training::simulate_step(trace, cluster).step_time_s;
  const auto contents = storage::checkpoint_contents(s, memory, plan, rank_gpu);
  const auto run = storage::run_length(s, step_time_s);
  const double rate_per_hour = 3600.0 * storage::job_failure_rate_per_s(failures, s.cluster.total_gpus(), s.cluster.nodes);

  std::vector<storage::Assessment> rows;
  // One row: the strategy assessed, or, when the cluster cannot run it, listed with the reason (bad input
  // when it is the only one asked for).
  auto add_row = [&](const std::string& name, const storage::CheckpointPlan& candidate, const storage::FailureModel& model, bool only) {
    try {
      rows.push_back(storage::assess(s, contents, candidate, model, step_time_s, run));
      rows.back().name = name;
    } catch (const InputError& error) {
      if (only) throw;
      storage::Assessment unavailable;
      unavailable.plan = candidate;
      unavailable.name = name;
      unavailable.available = false;
      std::string reason = error.what();
      if (reason.rfind(s.file + ": ", 0) == 0) reason = reason.substr(s.file.size() + 2);
      unavailable.unavailable_reason = reason;
      rows.push_back(unavailable);
    }
  };
  for (storage::Strategy strategy : strategies) {
    storage::CheckpointPlan candidate = plan;
    candidate.strategy = strategy;
    spdlog::info("{}: simulating save and restore", storage::to_string(strategy));
    add_row("", candidate, failures, strategies.size() == 1);
  }
  if (o.strategy.empty() || checkpointless_only) {
    // Peer copies at the scenario's interval or Young/Daly's (first order, Daly's optimum does not depend
    // on the recovery time; copying every step costs a GPU-to-host stall every step).
    storage::CheckpointPlan candidate = plan;
    candidate.strategy = storage::Strategy::peer;
    storage::FailureModel in_process = failures;
    in_process.recovery = storage::Recovery::in_process;
    spdlog::info("checkpointless: simulating peer save and restore");
    add_row("checkpointless", candidate, in_process, checkpointless_only);
  }

  if (o.json_file != "-" && o.metrics.file != "-") write_output("-", summary(s, contents, step_time_s, run, rate_per_hour, rows));
  if (o.json_file.empty() && o.metrics.file.empty()) return 0;
  nlohmann::json doc;
  doc["schema"] = "fmsim.checkpoint/1";
  doc["scenario"] = {{"name", s.name}, {"file", s.file}};
  doc["cluster"] = {{"nodes", s.cluster.nodes}, {"gpus", s.cluster.total_gpus()}, {"instance_type", s.cluster.instance.name}};
  doc["step_time_s"] = step_time_s;
  doc["hbm_peak_bytes"] = memory.peak.total_bytes;
  doc["hbm_capacity_bytes"] = memory.hbm_bytes;
  doc["oom"] = memory.oom;
  doc["run"] = {{"steps", run.steps}, {"tokens", run.tokens}, {"work_s", run.work_s}, {"source", run.source}};
  doc["failures"] = {{"failures_per_hour", rate_per_hour},
                     {"mtbf_s", rate_per_hour > 0 ? 3600.0 / rate_per_hour : 0.0},
                     {"gpu_failures_per_gpu_hour", failures.gpu_failures_per_gpu_hour},
                     {"node_failures_per_node_hour", failures.node_failures_per_node_hour},
                     {"detection_s", failures.detection_s},
                     {"relaunch_s", failures.relaunch_s},
                     {"nccl_init_s", failures.nccl_init_s},
                     {"recovery", storage::to_string(failures.recovery)},
                     {"in_process_detection_s", failures.in_process_detection_s},
                     {"in_process_restart_s", failures.in_process_restart_s},
                     {"seed", failures.seed},
                     {"trials", failures.trials}};
  doc["checkpoint_bytes"] = contents.total_bytes;
  doc["checkpoint_weights_bytes"] = contents.weights_bytes;
  doc["checkpoint_optimizer_bytes"] = contents.optimizer_bytes;
  doc["checkpoint_bytes_per_rank"] = {{"max", contents.max_rank_bytes},
                                      {"mean", contents.total_bytes / static_cast<double>(contents.rank_bytes.size())}};
  doc["files"] = contents.files;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& a : rows) list.push_back(storage::to_json(a, step_time_s));
  doc["strategies"] = list;
  // The scenario's (or --strategy's) strategy, also at the top level.
  doc["strategy"] = storage::to_string(plan.strategy);
  for (const auto& row : list) {
    if (row["strategy"] != doc["strategy"] || !row["available"].get<bool>()) continue;
    for (const char* key : {"save_time_s", "step_stall_s", "restore_time_s", "bottleneck", "goodput", "interval_steps",
                            "young_daly_interval_s", "expected_interruptions", "time_to_train_s"}) {
      doc[key] = row[key];
    }
    if (row.contains("cost_usd")) doc["cost_usd"] = row["cost_usd"];
  }
  const std::string series = o.metrics.file.empty() ? "" : report::checkpoint_metrics(doc, metrics_opts);
  if (!o.json_file.empty()) write_output(o.json_file, doc.dump(2) + "\n");
  if (!series.empty()) write_output(o.metrics.file, series);
  return 0;
}

}  // namespace

void register_checkpoint(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<CheckpointOptions>();
  CLI::App* sub = app.add_subcommand("checkpoint", "checkpoint save/restore time, step stall and goodput under failures, per strategy");
  sub->add_option("scenario", o->scenario_file, "training scenario with an optional checkpoint and failures section")->required();
  sub->add_option("--strategy", o->strategy,
                  "judge one strategy: fsx, s3, nvme+fsx, nvme+s3, peer or checkpointless (default: compare all)");
  add_override_options(sub, o->sets, "checkpoint.interval_steps=200");
  sub->add_option("--json", o->json_file, "write the result document ('-' = stdout, replaces the summary)");
  sub->add_flag("--allow-oom", o->allow_oom, "assess even when the model does not fit in GPU memory (\"oom\": true)");
  add_metrics_options(sub, o->metrics);
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_checkpoint(globals, *o); }; });
}

}  // namespace fmsim::cli
