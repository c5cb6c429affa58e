// fmsim check PLAN_OR_DIR... [--junit FILE] [--baseline DIR] [--update-baseline]
// Runs each capacity plan's scenario (fmsim run, serve or checkpoint in a child process), judges its
// expectations, prints expected vs predicted, writes JUnit XML; exit 0 when all hold, 1 when any fails.
#include <cstdio>
#include <filesystem>
#include <memory>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "child_process.hpp"
#include "progress.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/report/capacity_plan.hpp"

namespace fmsim::cli {
namespace {

struct CheckOptions {
  std::vector<std::string> plans;
  std::string junit_file, baseline_dir;
  bool update_baseline = false;
};

nlohmann::json run_plan(const GlobalOptions& globals, const report::CapacityPlan& plan) {
  // Every plan runs with --allow-oom: a scenario that stops fitting in HBM is a failed expectation
  // (judge() always checks oom: a training run's hbm_peak_bytes, a serving replica's oom_reason), not an
  // unusable plan.
  std::vector<std::string> arguments = json_result_arguments(globals.catalog_dir, plan.job);
  arguments.push_back("--allow-oom");
  const ChildResult child = run_fmsim(arguments);
  if (child.exit_code == 2) throw InputError(plan.file + ": " + error_message(child));
  if (child.exit_code != 0) {
    throw InternalError(plan.file + ": fmsim " + plan.job.command + " failed (exit " + std::to_string(child.exit_code) + "): " + error_message(child));
  }
  nlohmann::json result = nlohmann::json::parse(child.out, nullptr, false);
  if (result.is_discarded()) throw InternalError(plan.file + ": fmsim " + plan.job.command + " printed no JSON document");
  return result;
}

std::string table(const std::vector<std::pair<report::CapacityPlan, std::vector<report::Verdict>>>& results) {
  std::string out;
  char line[1024];
  std::snprintf(line, sizeof line, "%-28s %-28s %-22s %-14s %s\n", "plan", "metric", "expected", "predicted", "verdict");
  out += line;
  for (const auto& [plan, verdicts] : results) {
    for (const auto& v : verdicts) {
      std::snprintf(line, sizeof line, "%-28s %-28s %-22s %-14s %s\n", plan.job.name.c_str(), v.metric.c_str(), v.expected.c_str(),
                    v.predicted.c_str(), v.passed ? "ok" : "FAIL");
      out += line;
      if (!v.passed) out += "    " + v.message + "\n";
    }
  }
  return out;
}

int run_check(const GlobalOptions& globals, const CheckOptions& o) {
  if (o.update_baseline && o.baseline_dir.empty()) throw InputError("--update-baseline needs --baseline DIR");
  // A missing baseline directory would switch the regression gate off without a word.
  if (!o.baseline_dir.empty()) {
    std::error_code error;
    const auto status = std::filesystem::status(o.baseline_dir, error);
    if (!o.update_baseline && !std::filesystem::exists(status)) {
      throw InputError("--baseline " + o.baseline_dir + ": no such directory (create it with --update-baseline, or fix the path)");
    }
    if (std::filesystem::exists(status) && !std::filesystem::is_directory(status)) {
      throw InputError("--baseline " + o.baseline_dir + ": not a directory (expected a directory of earlier results)");
    }
  }
  std::vector<report::CapacityPlan> plans;
  for (const auto& file : report::plan_files(o.plans)) plans.push_back(report::load_plan(file));
  std::vector<std::pair<report::CapacityPlan, std::vector<report::Verdict>>> results;
  int failed = 0;
  for (const auto& plan : plans) {
    const nlohmann::json result = run_plan(globals, plan);
    const std::filesystem::path baseline_file =
        o.baseline_dir.empty() ? std::filesystem::path() : std::filesystem::path(o.baseline_dir) / std::filesystem::path(plan.file).filename();
    std::optional<nlohmann::json> baseline;
    if (!o.baseline_dir.empty() && !o.update_baseline) {
      if (std::filesystem::exists(baseline_file)) baseline = config::load_json_file(baseline_file).root;
      else spdlog::warn("{}: no baseline in {} (judged on its expectations only; --update-baseline stores one)", plan.file, o.baseline_dir);
    }
    auto verdicts = report::judge(plan, result, baseline ? &*baseline : nullptr);
    for (const auto& v : verdicts) failed += v.passed ? 0 : 1;
    if (o.update_baseline) {
      std::error_code error;
      std::filesystem::create_directories(o.baseline_dir, error);
      if (error) throw InputError("--baseline " + o.baseline_dir + ": cannot create the directory: " + error.message());
      write_output(baseline_file.string(), result.dump(1) + "\n");
    }
    progress()->info("check {}/{}: {} (fmsim {} {}) done", results.size() + 1, plans.size(), plan.file, plan.job.command,
                     plan.job.scenario.string());
    results.emplace_back(plan, std::move(verdicts));
  }
  write_output("-", table(results));
  if (!o.junit_file.empty()) write_output(o.junit_file, report::junit_xml(results));
  std::printf("%s\n", failed == 0 ? "all expectations hold" : (std::to_string(failed) + " expectation(s) failed").c_str());
  return failed == 0 ? 0 : 1;
}

}  // namespace

void register_check(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<CheckOptions>();
  CLI::App* sub = app.add_subcommand("check", "judge capacity plans (expected vs predicted); exit 1 when any regresses");
  sub->add_option("plans", o->plans, "plan files or directories of them (configs/plans/)")->required();
  sub->add_option("--junit", o->junit_file, "write JUnit XML (a testsuite per plan, a testcase per expectation)");
  sub->add_option("--baseline", o->baseline_dir, "directory of earlier results (one per plan file): a metric that moved the wrong way fails");
  sub->add_flag("--update-baseline", o->update_baseline, "store this run's results in --baseline DIR instead of comparing");
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_check(globals, *o); }; });
}

}  // namespace fmsim::cli
