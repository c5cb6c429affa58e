// Capacity plans: reading, judging a result against expectations and a baseline, JUnit XML.
#include "fmsim/report/capacity_plan.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fmsim/common/error.hpp"
#include "fmsim/common/markup_escape.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::report {
namespace {

std::string number_text(double value) {
  char text[40];
  std::snprintf(text, sizeof text, "%.6g", value);
  return text;
}

std::string value_text(const nlohmann::json& value) { return value.is_number() ? number_text(value.get<double>()) : value.dump(); }

}  // namespace

CapacityPlan load_plan(const std::filesystem::path& path) {
  config::JsonFile file = config::load_json_file(path);
  config::ObjectReader root(file.root, file.path);
  CapacityPlan plan;
  plan.file = file.path;
  plan.job = read_scenario_job(root, path);
  plan.baseline_tolerance = root.number_or("baseline_tolerance", plan.baseline_tolerance, 0.0);
  const auto& expect = root.required_value("expect");
  if (!expect.is_array() || expect.empty()) root.fail("expect", "a non-empty list of expectations {\"metric\": ..., \"max\"|\"min\"|\"equals\": ...}");
  for (std::size_t i = 0; i < expect.size(); ++i) {
    config::ObjectReader e(expect[i], file.path, "/expect/" + std::to_string(i));
    Expectation x;
    x.metric = e.required_string("metric");
    int given = 0;
    for (const char* key : {"max", "min", "equals"}) given += e.has(key) ? 1 : 0;
    if (given != 1) e.fail("max", "exactly one of \"max\", \"min\" or \"equals\"");
    if (e.has("equals")) {
      x.kind = Expectation::Kind::equals;
      x.value = e.required_value("equals");
    } else {
      const std::string key = e.has("max") ? "max" : "min";
      x.kind = key == "max" ? Expectation::Kind::at_most : Expectation::Kind::at_least;
      x.value = e.required_value(key);
      if (!x.value.is_number()) e.fail(key, "a number (in the unit of the metric's name: _s, _bytes, ...)");
    }
    x.tolerance = e.number_or("tolerance", 0.0, -1e-300);
    if (x.tolerance < 0 || x.tolerance >= 1) e.fail("tolerance", "a fraction in [0, 1), e.g. 0.05 for 5 %");
    e.reject_unknown_keys();
    plan.expectations.push_back(x);
  }
  root.reject_unknown_keys();
  return plan;
}

std::vector<std::filesystem::path> plan_files(const std::vector<std::string>& arguments) {
  std::vector<std::filesystem::path> files;
  for (const auto& argument : arguments) {
    const std::filesystem::path path = argument;
    std::error_code error;
    if (std::filesystem::is_directory(path, error)) {
      std::vector<std::filesystem::path> found;
      for (const auto& entry : std::filesystem::directory_iterator(path)) {
        if (entry.path().extension() == ".json") found.push_back(entry.path());
      }
      std::sort(found.begin(), found.end());
      if (found.empty()) throw InputError(argument + ": no plan files (*.json) in this directory");
      files.insert(files.end(), found.begin(), found.end());
    } else if (std::filesystem::exists(path, error)) {
      files.push_back(path);
    } else {
      throw InputError(argument + ": no such plan file or directory");
    }
  }
  return files;
}

const nlohmann::json* find_metric(const nlohmann::json& document, const std::string& metric) {
  const nlohmann::json* node = &document;
  std::size_t start = 0;
  while (true) {
    const auto dot = metric.find('.', start);
    const std::string key = metric.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!node->is_object() || !node->contains(key)) return nullptr;
    node = &(*node)[key];
    if (dot == std::string::npos) return node;
    start = dot + 1;
  }
}

std::vector<Verdict> judge(const CapacityPlan& plan, const nlohmann::json& result, const nlohmann::json* baseline) {
  std::vector<Verdict> verdicts;
  // A serving replica that does not fit (fmsim serve --allow-oom) gives only the reason, no metrics.
  const nlohmann::json* oom_reason = find_metric(result, "oom_reason");
  if (oom_reason && !oom_reason->is_string()) oom_reason = nullptr;
  for (const auto& x : plan.expectations) {
    Verdict v;
    v.plan_name = plan.job.name;
    v.metric = x.metric;
    const nlohmann::json* found = find_metric(result, x.metric);
    const std::string slack = x.tolerance > 0 ? " (+-" + number_text(100 * x.tolerance) + " %)" : "";
    switch (x.kind) {
      case Expectation::Kind::at_most: v.expected = "<= " + value_text(x.value) + slack; break;
      case Expectation::Kind::at_least: v.expected = ">= " + value_text(x.value) + slack; break;
      case Expectation::Kind::equals: v.expected = "== " + value_text(x.value); break;
    }
    if (!found || found->is_null()) {
      v.passed = false;
      v.predicted = "missing";
      v.message = oom_reason ? x.metric + " is not predicted: nothing was simulated, the scenario does not fit in HBM"
                             : x.metric + " is not in the " + plan.job.command + " result (see docs/schema/)";
      verdicts.push_back(v);
      continue;
    }
    v.predicted = value_text(*found);
    if (x.kind == Expectation::Kind::equals) {
      v.passed = *found == x.value;
    } else if (!found->is_number()) {
      v.passed = false;
    } else {
      const double predicted = found->get<double>(), limit = x.value.get<double>();
      v.passed = x.kind == Expectation::Kind::at_most ? predicted <= limit + std::abs(limit) * x.tolerance
                                                      : predicted >= limit - std::abs(limit) * x.tolerance;
    }
    if (!v.passed) v.message = x.metric + " = " + v.predicted + ", expected " + v.expected;
    if (!v.passed && oom_reason && x.metric == "oom") v.message += ": " + oom_reason->get<std::string>();
    // Baseline: the same metric may not move the wrong way by more than the plan's baseline tolerance.
    const nlohmann::json* before = baseline ? find_metric(*baseline, x.metric) : nullptr;
    if (before && before->is_number() && found->is_number() && x.kind != Expectation::Kind::equals) {
      const double was = before->get<double>(), now = found->get<double>();
      const double slack_abs = std::abs(was) * plan.baseline_tolerance;
      const bool worse = x.kind == Expectation::Kind::at_most ? now > was + slack_abs : now < was - slack_abs;
      if (worse) {
        v.passed = false;
        if (!v.message.empty()) v.message += "; ";
        v.message += x.metric + " = " + value_text(*found) + " regressed from the baseline's " + value_text(*before) + " (more than " +
                     number_text(100 * plan.baseline_tolerance) + " %)";
      }
    } else if (before && x.kind == Expectation::Kind::equals && *before != *found) {
      v.passed = false;
      if (!v.message.empty()) v.message += "; ";
      v.message += x.metric + " changed from the baseline's " + value_text(*before) + " to " + value_text(*found);
    }
    verdicts.push_back(v);
  }
  // A scenario that no longer fits in HBM fails its plan even when no expectation names `oom`: a
  // training run's step time and MFU describe a run that cannot happen, a serving replica cannot start.
  const nlohmann::json* oom = find_metric(result, "oom");
  const bool named = std::any_of(plan.expectations.begin(), plan.expectations.end(), [](const Expectation& x) { return x.metric == "oom"; });
  if (oom && *oom == true && !named) {
    Verdict v;
    v.plan_name = plan.job.name;
    v.metric = "oom";
    v.expected = "== false (always checked)";
    v.predicted = "true";
    v.passed = false;
    v.message = "the scenario does not fit in HBM";
    const nlohmann::json* peak = find_metric(result, "hbm_peak_bytes");
    const nlohmann::json* capacity = find_metric(result, "hbm_capacity_bytes");
    if (oom_reason) {
      v.message += ": " + oom_reason->get<std::string>();
    } else if (peak && capacity && peak->is_number() && capacity->is_number()) {
      v.message += ": peak " + number_text(peak->get<double>()) + " bytes of " + number_text(capacity->get<double>());
    }
    verdicts.push_back(v);
  }
  return verdicts;
}

std::string junit_xml(const std::vector<std::pair<CapacityPlan, std::vector<Verdict>>>& results) {
  int tests = 0, failures = 0;
  for (const auto& [plan, verdicts] : results) {
    tests += static_cast<int>(verdicts.size());
    for (const auto& v : verdicts) failures += v.passed ? 0 : 1;
  }
  std::string xml = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  xml += "<testsuites name=\"fmsim check\" tests=\"" + std::to_string(tests) + "\" failures=\"" + std::to_string(failures) + "\">\n";
  for (const auto& [plan, verdicts] : results) {
    int failed = 0;
    for (const auto& v : verdicts) failed += v.passed ? 0 : 1;
    xml += "  <testsuite name=\"" + markup_escape(plan.file) + "\" tests=\"" + std::to_string(verdicts.size()) + "\" failures=\"" +
           std::to_string(failed) + "\" errors=\"0\">\n";
    for (const auto& v : verdicts) {
      xml += "    <testcase classname=\"" + markup_escape(plan.job.name) + "\" name=\"" + markup_escape(v.metric + " " + v.expected) + "\"";
      if (v.passed) {
        xml += "/>\n";
      } else {
        xml += ">\n      <failure message=\"" + markup_escape(v.message) + "\">" + markup_escape(v.message) + "</failure>\n    </testcase>\n";
      }
    }
    xml += "  </testsuite>\n";
  }
  xml += "</testsuites>\n";
  return xml;
}

}  // namespace fmsim::report
