#pragma once
// Capacity plans (configs/plans/*.json, schema fmsim.plan/1): a scenario, the command that judges it
// (run, serve or checkpoint) and expectations on fields of its JSON result, with tolerances. Used by
// `fmsim check`; docs/formats.md documents the file.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/report/scenario_job.hpp"

namespace fmsim::report {

struct Expectation {
  std::string metric;                 ///< dotted path into the result, e.g. "ttft_s.p99", "memory.total_bytes"
  enum class Kind { at_most, at_least, equals } kind = Kind::at_most;
  nlohmann::json value;               ///< number (at_most, at_least) or any JSON value (equals)
  double tolerance = 0;               ///< relative slack on the limit (0.05 = 5 %)
};

struct CapacityPlan {
  std::string file;
  ScenarioJob job;
  std::vector<Expectation> expectations;
  double baseline_tolerance = 0.02;   ///< relative change from the baseline that counts as a regression
};

/// Reads a plan file. Throws InputError naming the file, key and what was expected.
CapacityPlan load_plan(const std::filesystem::path& path);
/// The plan files of a list of files and directories (directories: their *.json, sorted).
std::vector<std::filesystem::path> plan_files(const std::vector<std::string>& arguments);

struct Verdict {
  std::string plan_name, metric, expected, predicted;
  bool passed = true;
  std::string message;                ///< why it failed, with both numbers
};

/// Judges each expectation against `result`; with `baseline` (an earlier result of the same plan), also
/// flags every expected metric that moved the wrong way by more than the plan's baseline tolerance.
std::vector<Verdict> judge(const CapacityPlan& plan, const nlohmann::json& result, const nlohmann::json* baseline);

/// The value at a dotted path, or nullptr when absent.
const nlohmann::json* find_metric(const nlohmann::json& document, const std::string& metric);

/// JUnit XML: a testsuite per plan, a testcase per verdict, <failure message="..."> for failures.
std::string junit_xml(const std::vector<std::pair<CapacityPlan, std::vector<Verdict>>>& results);

}  // namespace fmsim::report
