// fmsim serve SCENARIO.json [--set path=value ...] [--json FILE|-] [--timeline FILE] [--sweep-rate] [--allow-oom]
//                          [--iteration decode:SEQS@CONTEXT|prefill:TOKENS@PROMPT ...]
// Simulates an LLM serving deployment: throughput, TTFT/TPOT/end-to-end percentiles, SLO goodput, KV
// cache use, preemptions and cost; with --sweep-rate, the highest arrival rate within the SLOs; with
// --iteration, only the named batches' iterations (no workload).
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/inference/iteration_probe.hpp"
#include "fmsim/inference/rate_sweep.hpp"
#include "fmsim/inference/serve_report.hpp"
#include "fmsim/report/prometheus_export.hpp"
#include "fmsim/report/time_series.hpp"

#include "metrics_options.hpp"

namespace fmsim::cli {
namespace {

struct ServeOptions {
  std::string scenario_file, json_file, timeline_file, prometheus_file;
  std::vector<std::string> sets, iterations;
  bool sweep_rate = false, allow_oom = false;
  MetricsCli metrics;
};

// --allow-oom: a replica that does not fit in GPU memory is reported as a result ("oom": true and the
// reason) instead of bad input, so that `fmsim check` fails the plan rather than stopping.
int report_oom(const inference::ServeScenario& scenario, const inference::ReplicaDoesNotFit& error, const ServeOptions& o) {
  if (!o.prometheus_file.empty() || !o.timeline_file.empty() || !o.metrics.file.empty()) {
    throw InputError(std::string(error.what()) + " (with --allow-oom nothing is simulated: no --timeline, --prometheus or --metrics to write)");
  }
  spdlog::warn("{}", error.what());
  nlohmann::json doc;
  doc["schema"] = "fmsim.serve/1";
  doc["scenario"] = {{"name", scenario.name}, {"file", scenario.file}};
  doc["model"] = scenario.model.name;
  doc["oom"] = true;
  doc["oom_reason"] = error.what();
  doc["hbm_required_bytes"] = error.required_bytes;
  doc["hbm_usable_bytes"] = error.usable_bytes;
  if (o.json_file != "-") write_output("-", scenario.name + ": does not fit in GPU memory; nothing simulated (--allow-oom)\n");
  if (!o.json_file.empty()) write_output(o.json_file, doc.dump(2) + "\n");
  return 0;
}

// --iteration: the named batches' iterations on each pool, without a workload.
int run_iteration_probes(const inference::ServingPlan& plan, const ServeOptions& o) {
  std::vector<inference::IterationProbe> probes;
  for (const auto& text : o.iterations) probes.push_back(inference::parse_iteration_probe(text, "--iteration"));
  const auto results = inference::run_iteration_probes(plan, probes);
  if (results.empty()) throw InputError("--iteration: no pool of " + plan.scenario().file + " runs these batches (a prefill pool decodes nothing)");
  if (o.json_file != "-") write_output("-", inference::probes_text(plan, results));
  if (!o.json_file.empty()) write_output(o.json_file, inference::probes_json(plan, results).dump(2) + "\n");
  return 0;
}

int run_serve(const GlobalOptions& globals, const ServeOptions& o) {
  if (!o.iterations.empty() &&
      (o.sweep_rate || o.allow_oom || !o.timeline_file.empty() || !o.prometheus_file.empty() || !o.metrics.file.empty())) {
    throw InputError("--iteration prices single iterations of replicas that fit, without running the workload: it takes no "
                     "--sweep-rate, --allow-oom, --timeline, --prometheus or --metrics");
  }
  const report::MetricsOptions metrics_opts = metrics_options(o.metrics);
  auto catalog = load_catalog(globals);
  const inference::ServeScenario scenario = inference::load_serve_scenario(o.scenario_file, o.sets, catalog);
  std::unique_ptr<inference::ServingPlan> built;
  try {
    built = std::make_unique<inference::ServingPlan>(scenario);
  } catch (const inference::ReplicaDoesNotFit& error) {
    if (!o.allow_oom) throw;
    return report_oom(scenario, error, o);
  }
  const inference::ServingPlan& plan = *built;
  if (!o.iterations.empty()) return run_iteration_probes(plan, o);
  const auto requests = inference::make_requests(scenario.workload);
  spdlog::info("{}: {} requests on {} replicas", scenario.name, requests.size(), plan.replicas().size());
  const inference::ServeOutcome outcome = inference::simulate_serving(plan, requests, !o.timeline_file.empty() || !o.metrics.file.empty());
  const inference::ServeSummary summary = inference::summarize(plan, outcome);
  std::optional<inference::RateSweep> sweep;
  if (o.sweep_rate) {
    spdlog::info("{}: searching for the highest rate within the SLOs", scenario.name);
    sweep = inference::sweep_rate(plan);
  }
  nlohmann::json doc;
  if (!o.json_file.empty() || !o.prometheus_file.empty() || !o.metrics.file.empty()) {
    doc = inference::to_json(plan, summary, outcome);
    if (sweep) doc["sweep"] = inference::to_json(*sweep);
  }
  const std::string metrics = o.prometheus_file.empty() ? "" : report::prometheus_text(doc, o.prometheus_file);
  const std::string series = o.metrics.file.empty() ? "" : report::serve_metrics(outcome, doc, metrics_opts);
  if (o.json_file != "-" && o.prometheus_file != "-" && o.metrics.file != "-") {
    std::string text = inference::to_text(plan, summary);
    if (sweep) text += "\n" + inference::to_text(*sweep);
    write_output("-", text);
  }
  if (!o.timeline_file.empty()) write_output(o.timeline_file, inference::timeline_json(plan, outcome));
  if (!o.json_file.empty()) write_output(o.json_file, doc.dump(2) + "\n");
  if (!metrics.empty()) write_output(o.prometheus_file, metrics);
  if (!series.empty()) write_output(o.metrics.file, series);
  return 0;
}

}  // namespace

void register_serve(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<ServeOptions>();
  CLI::App* sub = app.add_subcommand("serve", "simulate LLM serving: throughput, TTFT/TPOT percentiles, SLO goodput, KV cache, cost");
  sub->add_option("scenario", o->scenario_file, "serving scenario (configs/serving/*.json)")->required();
  add_override_options(sub, o->sets, "workload.rate=20/s");
  sub->add_option("--json", o->json_file, "write the result document ('-' = stdout, replaces the summary)");
  sub->add_option("--timeline", o->timeline_file, "write a Chrome trace-event timeline (iterations, KV transfers) for Perfetto");
  sub->add_option("--prometheus", o->prometheus_file, "write Prometheus text metrics (as fmsim report --prometheus)");
  sub->add_flag("--sweep-rate", o->sweep_rate, "also find the highest Poisson arrival rate that meets the scenario's SLOs");
  sub->add_flag("--allow-oom", o->allow_oom,
                "when a replica does not fit in GPU memory, write a result with \"oom\": true and the reason instead of failing");
  sub->add_option("--iteration", o->iterations,
                  "price one iteration of a batch instead of running the workload: decode:SEQS@CONTEXT or prefill:TOKENS@PROMPT "
                  "(per replica; repeatable)");
  add_metrics_options(sub, o->metrics);
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_serve(globals, *o); }; });
}

}  // namespace fmsim::cli
