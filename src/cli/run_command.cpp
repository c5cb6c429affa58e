// fmsim run SCENARIO.json [--set path=value ...] [--json FILE|-] [--timeline FILE] [--trace FILE]
//                         [--fidelity fast|full] [--allow-oom]
// fmsim trace SCENARIO.json --out FILE [--set ...] [--fidelity fast|full]
// Simulates one training step (or writes its op graph).
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "metrics_options.hpp"
#include "progress.hpp"
#include "fmsim/workload/low_precision.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/report/prometheus_export.hpp"
#include "fmsim/report/time_series.hpp"
#include "fmsim/report/training_report.hpp"
#include "fmsim/rl/rl_iteration.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/full_step_cost.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/chakra_trace.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::cli {
namespace {

struct RunOptions {
  std::string scenario_file, json_file, timeline_file, trace_file, out_file, fidelity, prometheus_file, format, from_file;
  std::vector<std::string> sets;
  bool allow_oom = false;
  MetricsCli metrics;
};

workload::Scenario load(const RunOptions& o, const hardware::Catalog& catalog, const std::optional<config::JsonFile>& trace_file) {
  workload::Scenario s;
  if (!o.scenario_file.empty()) {
    s = workload::load_scenario(o.scenario_file, o.sets, catalog);
  } else if (trace_file) {
    nlohmann::json embedded = trace_file->root.value("scenario", nlohmann::json());
    if (!embedded.is_object()) throw InputError(trace_file->path + ": /scenario: the trace carries no scenario; give one as SCENARIO.json");
    for (const auto& assignment : o.sets) workload::apply_set(embedded, assignment);
    s = workload::scenario_from_json(embedded, trace_file->path + ": /scenario",
                                     std::filesystem::path(trace_file->path).parent_path(), catalog);
  } else {
    throw InputError("give a scenario file (or --trace FILE)");
  }
  if (!o.fidelity.empty()) {
    if (o.fidelity != "fast" && o.fidelity != "full") throw InputError("--fidelity '" + o.fidelity + "': expected fast or full");
    s.fidelity = o.fidelity == "full" ? workload::Fidelity::full : workload::Fidelity::fast;
  }
  return s;
}

/// The least fraction of the model's FLOPs a trace's compute nodes may execute.
constexpr double kMinExecutedFraction = 0.9;

/// A trace read from a file carries the tokens and model FLOPs per step of the scenario it was written
/// for (they set tokens/s and MFU): they must be the ones its scenario gives, its compute nodes must
/// do that work, and a symmetric one must stand for every pipeline stage.
void check_totals(const workload::Trace& trace, const workload::Scenario& s, const std::string& file) {
  const workload::StepTotals totals = workload::step_totals(s);
  auto check = [&](const char* key, double given, double expected) {
    if (std::abs(given - expected) <= 1e-9 * expected) return;
    char text[320];
    std::snprintf(text, sizeof text, ": /%s = %.6g but its scenario (%s, global batch %d, sequence %d) gives %.6g; the trace was written "
                  "for another scenario (give that one, or rewrite the trace with fmsim trace)", key, given, s.model.name.c_str(),
                  s.parallelism.global_batch, s.training.seq, expected);
    throw InputError(file + text);
  };
  check("tokens_per_step", trace.tokens_per_step, totals.tokens);
  check("model_flops_per_step", trace.model_flops_per_step, totals.model_flops);
  // The compute nodes must execute at least the model's FLOPs (recomputation adds to them; fmsim's own
  // traces execute 1.0 to 1.8 times as much). Nodes with a given duration and no FLOPs hide their work:
  // then only the MFU check after the replay applies.
  double executed = 0;
  bool opaque = false;
  for (const auto& n : trace.nodes) {
    if (n.type != workload::NodeType::comp) continue;
    const double flops = n.kernel == workload::Kernel::gemm && n.m > 0 ? 2.0 * n.m * n.n * n.k * n.repeat : n.flops;
    opaque = opaque || (n.duration_s >= 0 && flops <= 0);
    executed += flops;
  }
  // A symmetric trace's ranks each stand for as many GPUs; a full one's are the GPUs (idle if not listed).
  const double executed_per_gpu = trace.symmetric ? executed / std::max<std::size_t>(1, trace.ranks.size()) : executed / trace.world;
  const double model_per_gpu = totals.model_flops / trace.world;
  if (!opaque && executed_per_gpu < kMinExecutedFraction * model_per_gpu) {
    char text[320];
    std::snprintf(text, sizeof text, ": the compute nodes execute %.4g FLOPs per GPU per step, but %s needs %.4g (Megatron accounting; "
                  "%.0f %%): nodes are missing, or the trace is of another model", executed_per_gpu, s.model.name.c_str(), model_per_gpu,
                  100 * executed_per_gpu / model_per_gpu);
    throw InputError(file + text);
  }
  // A symmetric trace stands for every rank by one per pipeline stage: a stage without one would be
  // work left out of the step.
  if (!trace.symmetric) return;
  std::vector<bool> stage_listed(s.parallelism.pp, false);
  for (int rank : trace.ranks) stage_listed[workload::coords_of(s.parallelism, rank).pp] = true;
  for (int stage = 0; stage < s.parallelism.pp; ++stage) {
    if (!stage_listed[stage]) {
      throw InputError(file + ": /ranks: the trace is symmetric (one rank stands for each pipeline stage) but lists no rank of "
                       "pipeline stage " + std::to_string(stage) + " of " + std::to_string(s.parallelism.pp));
    }
  }
}

/// The last guard against a trace whose ops do less work than its model needs (nodes left out, given
/// durations too short): a step faster than the model's FLOPs at the GPU's dense peak is impossible.
void check_mfu(const report::TrainingRun& run, const std::string& file) {
  const report::TrainingMetrics m = report::metrics_of(run);
  if (m.mfu_precision_peak <= 1.0) return;
  const auto& s = *run.scenario;
  const double peak = workload::precision_peak_flops(s.training, s.cluster.gpu);
  char text[400];
  std::snprintf(text, sizeof text, ": the replayed step takes %.4g s, but %s's %.4g model FLOPs per step need at least %.4g s on %d x %s "
                "at the dense %s peak (MFU %.0f %%): the trace's ops do less work than its model (nodes missing, or durations too short)",
                run.step.step_time_s, s.model.name.c_str(), run.trace->model_flops_per_step,
                run.trace->model_flops_per_step / run.trace->world / peak, run.trace->world, s.cluster.gpu.name.c_str(),
                workload::precision_peak_name(s.training, s.cluster.gpu), 100 * m.mfu_precision_peak);
  throw InputError(file + text);
}

/// training.workload "rl": one RL iteration (rl/rl_iteration.hpp) instead of one training step.
int run_rl(const hardware::Catalog& catalog, const RunOptions& o, const config::JsonFile& file) {
  for (const auto& [option, value] : {std::pair<const char*, const std::string*>{"--trace", &o.trace_file}, {"--fidelity", &o.fidelity},
                                     {"--metrics", &o.metrics.file}}) {
    if (!value->empty()) {
      throw InputError(std::string(option) + ": not available for an RL scenario (training.workload \"rl\"); --json, --timeline, "
                       "--prometheus and --set are");
    }
  }
  const auto result = rl::simulate_rl_iteration(file.root, file.path, std::filesystem::path(o.scenario_file).parent_path(), catalog, o.allow_oom);
  const nlohmann::json doc = rl::to_json(result);
  // Every output is rendered before the first is written, so a failure leaves none behind.
  const std::string metrics = o.prometheus_file.empty() ? "" : report::prometheus_text(doc, o.prometheus_file);
  const std::string timeline = o.timeline_file.empty() ? "" : rl::timeline_json(result).dump() + "\n";
  if (o.json_file != "-" && o.prometheus_file != "-") write_output("-", rl::to_text(result));
  if (!o.json_file.empty()) write_output(o.json_file, doc.dump(2) + "\n");
  if (!timeline.empty()) write_output(o.timeline_file, timeline);
  if (!metrics.empty()) write_output(o.prometheus_file, metrics);
  return 0;
}

/// The scenario document (after --set) when it asks for RL; unreadable files are left to the loader's message.
std::optional<config::JsonFile> rl_document(const RunOptions& o) {
  if (o.scenario_file.empty()) return std::nullopt;
  try {
    auto file = workload::load_scenario_document(o.scenario_file, o.sets, "training scenario");
    if (rl::is_rl_document(file.root)) return file;
  } catch (const InputError&) {
  }
  return std::nullopt;
}

/// A trace file as a document: fmsim's JSON, or a Chakra trace (PREFIX or PREFIX.RANK.et) read into the
/// same form (chakra_trace.hpp); `chakra` says which it was.
config::JsonFile read_trace_document(const std::string& path, bool& chakra) {
  chakra = workload::is_chakra_trace(path);
  if (!chakra) return config::load_json_file(path);
  config::JsonFile file;
  file.path = path;
  file.root = workload::read_chakra_trace(path);
  return file;
}

int run_training(const GlobalOptions& globals, const RunOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const report::MetricsOptions metrics_opts = metrics_options(o.metrics);
  auto catalog = load_catalog(globals);
  if (const auto rl_file = rl_document(o)) return run_rl(catalog, o, *rl_file);
  std::optional<config::JsonFile> trace_file;
  bool chakra_trace = false;
  if (!o.trace_file.empty()) trace_file = read_trace_document(o.trace_file, chakra_trace);
  const workload::Scenario s = load(o, catalog, trace_file);
  if (trace_file && chakra_trace && !trace_file->root.contains("tokens_per_step")) {
    // A Chakra trace from another tool carries no step totals: they are its scenario's.
    const workload::StepTotals totals = workload::step_totals(s);
    trace_file->root["tokens_per_step"] = totals.tokens;
    trace_file->root["model_flops_per_step"] = totals.model_flops;
  }

  report::TrainingRun run;
  run.scenario = &s;
  run.memory = workload::estimate_memory(s);
  if (run.memory.oom && !o.allow_oom) {
    throw InputError(s.file + ": the model does not fit: " + workload::describe_oom(run.memory) +
                     " (more TP/PP, recompute_granularity, a sharded optimizer or a larger GPU would; --allow-oom simulates anyway)");
  }
  auto cluster = topology::build_cluster_graph(s.cluster);
  auto rank_gpu = topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed);
  workload::Trace trace;
  if (trace_file) {
    trace = workload::trace_from_json(trace_file->root, trace_file->path);
    if (trace.rank_gpu.empty()) trace.rank_gpu = rank_gpu;
    if (trace.world != s.parallelism.world()) {
      throw InputError(trace_file->path + ": /world_size = " + std::to_string(trace.world) + " but the scenario has " +
                       std::to_string(s.parallelism.world()) + " ranks");
    }
  } else {
    if (s.fidelity == workload::Fidelity::full) {  // what every rank's trace will cost, said (or refused) first
      training::check_full_step_fits(training::estimate_full_step(s, rank_gpu), s.file);
    }
    trace = workload::build_trace(s, rank_gpu, s.fidelity == workload::Fidelity::full);
  }
  run.trace = &trace;
  run.cluster = &cluster;
  run.fidelity = trace.symmetric ? "fast" : "full";
  spdlog::info("{}: {} trace nodes on {} simulated ranks", s.name, trace.nodes.size(), trace.ranks.size());
  if (trace_file) {
    try {
      run.step = training::simulate_step(trace, cluster);
    } catch (const InputError& error) {  // name the file: "trace: ..." -> "FILE: ..."
      const std::string what = error.what();
      throw InputError(trace_file->path + ": " + (what.rfind("trace: ", 0) == 0 ? what.substr(7) : what));
    }
    // After the replay's own checks (deadlocks, impossible kernels), which name the nodes at fault.
    check_totals(trace, s, trace_file->path);
    check_mfu(run, trace_file->path);
  } else {
    run.step = training::simulate_step(trace, cluster);
  }
  if (s.resolved.contains("checkpoint")) {
    const auto plan = storage::read_checkpoint_plan(s);
    const auto contents = storage::checkpoint_contents(s, run.memory, plan, rank_gpu);
    run.checkpoint = storage::assess(s, contents, plan, storage::read_failure_model(s), run.step.step_time_s,
                                     storage::run_length(s, run.step.step_time_s));
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::string json_text, timeline_text, metrics_text, series_text;
  if (!o.json_file.empty() || !o.prometheus_file.empty() || !o.metrics.file.empty()) {
    const nlohmann::json doc = report::run_to_json(run);
    if (!o.json_file.empty()) json_text = doc.dump(2) + "\n";
    if (!o.prometheus_file.empty()) metrics_text = report::prometheus_text(doc, o.prometheus_file);
    if (!o.metrics.file.empty()) series_text = report::run_metrics(run, doc, metrics_opts);
  }
  if (!o.timeline_file.empty()) timeline_text = report::run_timeline(run).dump() + "\n";
  if (o.json_file != "-" && o.prometheus_file != "-" && o.metrics.file != "-") write_output("-", report::run_summary(run));
  if (!json_text.empty()) write_output(o.json_file, json_text);
  if (!timeline_text.empty()) write_output(o.timeline_file, timeline_text);
  if (!metrics_text.empty()) write_output(o.prometheus_file, metrics_text);
  if (!series_text.empty()) write_output(o.metrics.file, series_text);
  return 0;
}

int write_trace(const GlobalOptions& globals, const RunOptions& o) {
  if (!o.format.empty() && o.format != "json" && o.format != "chakra") {
    throw InputError("--format '" + o.format + "': expected json (fmsim.trace/1) or chakra (Chakra execution-trace protobuf)");
  }
  const bool chakra = o.format == "chakra";
  if (chakra && o.out_file == "-") throw InputError("--format chakra writes one file per rank: give --out PREFIX, not '-'");
  auto catalog = load_catalog(globals);
  workload::Trace trace;
  std::string name;
  std::optional<hardware::GpuSpec> gpu;
  if (!o.from_file.empty()) {
    // Conversion: the trace as it is (checked as the replay checks it), in the other form.
    if (!o.scenario_file.empty() || !o.sets.empty() || !o.fidelity.empty()) {
      throw InputError("--from converts a trace as it is: give no scenario, --set or --fidelity with it");
    }
    bool from_chakra = false;
    config::JsonFile file = read_trace_document(o.from_file, from_chakra);
    if (!file.root.contains("tokens_per_step") || !file.root.contains("model_flops_per_step")) {
      throw InputError(o.from_file + ": the trace carries no tokens_per_step / model_flops_per_step (a Chakra trace from another tool): "
                       "replay it with fmsim run SCENARIO --trace, which takes them from the scenario");
    }
    trace = workload::trace_from_json(file.root, file.path);
    name = o.from_file;
    if (trace.scenario.is_object() && trace.scenario.contains("cluster")) {
      try {
        gpu = workload::scenario_from_json(trace.scenario, o.from_file + ": /scenario", std::filesystem::path(o.from_file).parent_path(), catalog)
                  .cluster.gpu;
      } catch (const InputError&) {
        gpu.reset();  // durations for Chakra's duration_micros then stay those given in the trace
      }
    }
  } else {
    if (o.scenario_file.empty()) throw InputError("give a training scenario (or --from TRACE to convert a trace)");
    RunOptions opts = o;
    if (chakra && opts.fidelity.empty()) opts.fidelity = "full";  // a Chakra trace holds every rank
    if (chakra && opts.fidelity != "full") throw InputError("--format chakra holds every rank: --fidelity must be full (its default)");
    const workload::Scenario s = load(opts, catalog, std::nullopt);
    auto cluster = topology::build_cluster_graph(s.cluster);
    auto rank_gpu = topology::place_ranks(cluster, s.parallelism.world(), s.placement, s.seed);
    if (s.fidelity == workload::Fidelity::full) {
      auto cost = training::estimate_full_step(s, rank_gpu, chakra ? training::kFullBytesPerTraceNode : training::kFullTraceJsonBytesPerNode);
      cost.seconds = 0;  // written, not simulated
      training::check_full_step_fits(cost, s.file);
    }
    trace = workload::build_trace(s, rank_gpu, s.fidelity == workload::Fidelity::full);
    name = s.name;
    gpu = s.cluster.gpu;
  }
  if (!chakra) {
    write_output(o.out_file, workload::trace_to_json(trace).dump() + "\n");
    progress()->info("wrote the trace of {} ({} nodes on {} ranks, {} fidelity) to {}", name, trace.nodes.size(), trace.ranks.size(),
                     trace.symmetric ? "fast" : "full", o.out_file == "-" ? "stdout" : o.out_file);
    return 0;
  }
  auto duration = [&gpu](const workload::TraceNode& n) {
    if (n.duration_s >= 0) return n.duration_s;
    return gpu ? training::compute_node_s(n, *gpu) : 0.0;
  };
  const auto files = workload::chakra_files(trace, o.out_file, duration);
  std::size_t bytes = 0;
  for (const auto& [path, content] : files) {
    write_output(path, content);
    bytes += content.size();
  }
  progress()->info("wrote the Chakra trace of {} ({} nodes on {} ranks, {} bytes) to {}.0.et ... {}.{}.et and {}.comm_groups.json", name,
                   trace.nodes.size(), trace.world, bytes, o.out_file, o.out_file, trace.world - 1, o.out_file);
  return 0;
}

}  // namespace

void register_run(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("run", "simulate one training step (or one RL iteration: training.workload rl): step time, tokens/s, MFU, memory, cost");
  sub->add_option("scenario", o->scenario_file, "training scenario (configs/training/*.json)");
  add_override_options(sub, o->sets, "parallelism.tensor_model_parallel_size=4");
  sub->add_option("--json", o->json_file, "write the result document ('-' = stdout, replaces the summary)");
  sub->add_option("--timeline", o->timeline_file, "write a Chrome trace-event time line (open in Perfetto)");
  sub->add_option("--prometheus", o->prometheus_file, "write Prometheus text metrics (as fmsim report --prometheus)");
  sub->add_option("--trace", o->trace_file, "replay this trace (fmsim JSON, or a Chakra trace: PREFIX or PREFIX.RANK.et) instead of building one");
  sub->add_option("--fidelity", o->fidelity, "fast (symmetric ranks, default) or full (every rank; the referee)");
  sub->add_flag("--allow-oom", o->allow_oom, "simulate even when the model does not fit in GPU memory");
  add_metrics_options(sub, o->metrics);
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_training(globals, *o); }; });
}

void register_trace(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* sub = app.add_subcommand("trace", "write the per-rank op graph of one training step (fmsim JSON or Chakra protobuf)");
  sub->add_option("scenario", o->scenario_file, "training scenario (configs/training/*.json)");
  sub->add_option("--out", o->out_file, "trace file to write ('-' = stdout); with --format chakra the prefix of its files")->required();
  add_override_options(sub, o->sets, "model.num_hidden_layers=40");
  sub->add_option("--fidelity", o->fidelity, "fast (one rank per pipeline stage, default) or full (every rank)");
  sub->add_option("--format", o->format, "json (fmsim.trace/1, default) or chakra (PREFIX.RANK.et per rank and PREFIX.comm_groups.json)");
  sub->add_option("--from", o->from_file, "convert this trace (fmsim JSON, or a Chakra trace's prefix) instead of building one");
  sub->callback([&globals, o, &action] { action = [&globals, o] { return write_trace(globals, *o); }; });
}

}  // namespace fmsim::cli
