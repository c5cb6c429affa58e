// Sweep files: reading and expanding the grid.
#include "fmsim/report/sweep_spec.hpp"

#include <fstream>
#include <sstream>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::report {
namespace {

using ordered = nlohmann::ordered_json;

/// Points in one sweep: each is a child process of tenths of a second to seconds, so 100,000 is already
/// hours to days of CPU (a larger study is several sweep files). A million let the grid's expansion
/// alone take 14 s under AddressSanitizer at 280,000 points (fuzz_sweep's timeout, docs/robustness.md).
constexpr std::size_t kMaxPoints = 100000;

}  // namespace

SweepSpec load_sweep(const std::filesystem::path& path) {
  // Read with key order kept: the grid's first key varies slowest, as written.
  config::require_regular_file(path, "the sweep file");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path.string() + ": cannot open file for reading");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  const std::string text = buffer.str();
  // The strict reader first: its errors give the line and column, and it refuses absurd nesting.
  config::parse_json_text(text, path.string());
  ordered doc = ordered::parse(text, nullptr, false);
  if (doc.is_discarded()) throw InputError(path.string() + ": not valid JSON");
  if (!doc.is_object()) throw InputError(path.string() + ": expected a JSON object (a sweep)");
  const nlohmann::json plain = nlohmann::json::parse(doc.dump());
  config::ObjectReader root(plain, path.string());
  SweepSpec spec;
  spec.file = path.string();
  spec.job = read_scenario_job(root, path);
  if (root.has("grid")) {
    root.required_value("grid");
    const ordered& grid = doc["grid"];
    if (!grid.is_object() || grid.empty()) root.fail("grid", "an object {\"scenario.path\": [values...]}");
    std::vector<std::pair<std::string, std::vector<nlohmann::json>>> axes;
    double grid_points = 1;
    for (const auto& [key, values] : grid.items()) {
      if (!values.is_array() || values.empty()) {
        throw InputError(spec.file + ": at /grid/" + key + ": expected a non-empty list of values");
      }
      grid_points *= static_cast<double>(values.size());
      if (grid_points > static_cast<double>(kMaxPoints)) {
        throw InputError(spec.file + ": at /grid: more than " + std::to_string(kMaxPoints) +
                         " points (the product of the list lengths); split the sweep or use \"points\"");
      }
      std::vector<nlohmann::json> list;
      for (const auto& value : values) list.push_back(nlohmann::json::parse(value.dump()));
      axes.emplace_back(key, list);
    }
    // An odometer over the axes: the last one turns fastest.
    std::vector<std::size_t> at(axes.size(), 0);
    bool wrapped = false;
    while (!wrapped) {
      nlohmann::json point = nlohmann::json::object();
      for (std::size_t a = 0; a < axes.size(); ++a) point[axes[a].first] = axes[a].second[at[a]];
      spec.points.push_back(point);
      wrapped = true;
      for (std::size_t a = axes.size(); a-- > 0 && wrapped;) {
        if (++at[a] < axes[a].second.size()) wrapped = false;
        else at[a] = 0;
      }
    }
  }
  if (root.has("points")) {
    const auto& points = root.required_value("points");
    if (!points.is_array()) root.fail("points", "a list of objects {\"scenario.path\": value}");
    if (points.size() + spec.points.size() > kMaxPoints) {
      root.fail("points", "at most " + std::to_string(kMaxPoints) + " points in all (grid and list)");
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
      if (!points[i].is_object() || points[i].empty()) {
        throw InputError(spec.file + ": at /points/" + std::to_string(i) + ": expected an object {\"scenario.path\": value}");
      }
      spec.points.push_back(points[i]);
    }
  }
  spec.best = sweep_best_default(spec.job.command);
  if (root.has("best")) {
    config::ObjectReader best = root.required_object("best");
    spec.best.metric = best.required_string("metric");
    if (spec.best.metric.empty()) best.fail("metric", "a dotted path into the result, e.g. \"step_time_s\" or \"ttft_s.p99\"");
    spec.best.maximize = best.choice_or("goal", {"max", "min"}, "max") == "max";
    best.reject_unknown_keys();
  }
  root.reject_unknown_keys();
  if (spec.points.empty()) root.fail("grid", "a \"grid\" or a \"points\" list (the sweep has no points)");
  return spec;
}

SweepBest sweep_best_default(const std::string& what) {
  if (what == "serve" || what == "fmsim.serve/1") return {"output_tokens_per_s_per_gpu", true};
  if (what == "checkpoint" || what == "fmsim.checkpoint/1") return {"goodput", true};
  return {"tokens_per_s_per_gpu", true};
}

std::vector<std::string> point_assignments(const nlohmann::json& point) {
  std::vector<std::string> sets;
  for (const auto& [key, value] : point.items()) sets.push_back(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  return sets;
}

}  // namespace fmsim::report
