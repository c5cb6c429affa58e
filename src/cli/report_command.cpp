// fmsim report RESULT.json [--html FILE] [--prometheus FILE]
#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "progress.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/report/html_report.hpp"
#include "fmsim/report/prometheus_export.hpp"

namespace fmsim::cli {
namespace {

struct ReportOptions {
  std::string result_file;
  std::string html_file;
  std::string prometheus_file;
};

int run_report(const ReportOptions& o) {
  if (o.html_file.empty() && o.prometheus_file.empty()) {
    throw InputError("fmsim report: nothing to write; give --html FILE and/or --prometheus FILE");
  }
  const auto result = config::load_json_file(o.result_file);
  // Render everything before writing anything, so a bad result leaves no partial outputs.
  std::string html, metrics;
  try {
    html = o.html_file.empty() ? "" : report::html_report(result.root, o.result_file);
    metrics = o.prometheus_file.empty() ? "" : report::prometheus_text(result.root, o.result_file);
  } catch (const nlohmann::json::exception& error) {
    // A field of the wrong type or shape: the file is not a result fmsim wrote (or it was edited).
    throw InputError(o.result_file + ": not a result document fmsim writes (" + error.what() + ")");
  }
  if (!html.empty()) write_output(o.html_file, html);
  if (!metrics.empty()) write_output(o.prometheus_file, metrics);
  // Said once everything is written (a failure above leaves no note of a half-done report).
  auto where = [](const std::string& file) { return file == "-" ? std::string("stdout") : file; };
  if (!html.empty()) progress()->info("wrote the HTML report of {} ({} bytes) to {}", o.result_file, html.size(), where(o.html_file));
  if (!metrics.empty()) {
    progress()->info("wrote the Prometheus metrics of {} ({} bytes) to {}", o.result_file, metrics.size(), where(o.prometheus_file));
  }
  return 0;
}

}  // namespace

void register_report(CLI::App& app, const GlobalOptions&, Action& action) {
  auto o = std::make_shared<ReportOptions>();
  CLI::App* sub = app.add_subcommand("report", "turn a result of run (a step or an RL iteration), serve or checkpoint into an HTML page or Prometheus metrics");
  sub->add_option("result", o->result_file, "a JSON result written by fmsim run/serve/checkpoint --json")->required();
  sub->add_option("--html", o->html_file, "write one self-contained HTML page (charts inline, no network fetches)");
  sub->add_option("--prometheus", o->prometheus_file, "write Prometheus text metrics (dcgm-exporter names, simulated=\"true\"); '-' = stdout");
  sub->callback([o, &action] { action = [o] { return run_report(*o); }; });
}

}  // namespace fmsim::cli
