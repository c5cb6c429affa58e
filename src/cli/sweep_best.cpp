#include "sweep_best.hpp"

#include <cstdio>

#include "fmsim/common/error.hpp"

namespace fmsim::cli {

std::optional<double> metric_value(const nlohmann::json& result, const std::string& dotted_path) {
  const nlohmann::json* at = &result;
  std::size_t start = 0;
  while (start <= dotted_path.size()) {
    const std::size_t dot = dotted_path.find('.', start);
    const std::string key = dotted_path.substr(start, dot == std::string::npos ? std::string::npos : dot - start);
    if (!at->is_object() || !at->contains(key)) return std::nullopt;
    at = &(*at)[key];
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  if (!at->is_number()) return std::nullopt;
  return at->get<double>();
}

std::optional<BestPoint> best_point(const std::vector<nlohmann::json>& lines, const report::SweepBest& best) {
  std::optional<BestPoint> winner;
  std::size_t ranked = 0, missing = 0;
  for (const auto& line : lines) {
    if (!line.is_object() || line.value("status", std::string()) != "ok" || !line.contains("result")) continue;
    const auto value = metric_value(line["result"], best.metric);
    if (!value) {
      ++missing;
      continue;
    }
    ++ranked;
    const std::size_t index = line.value("index", std::size_t{0});
    const bool better = !winner || (best.maximize ? *value > winner->value : *value < winner->value) ||
                        (*value == winner->value && index < winner->index);
    if (better) winner = BestPoint{index, line.value("point", nlohmann::json::object()), *value, 0, 0};
  }
  if (winner) {
    winner->ranked = ranked;
    winner->missing = missing;
  }
  return winner;
}

std::string describe_best(const std::optional<BestPoint>& best, const report::SweepBest& metric, std::size_t lines) {
  const std::string by = metric.metric + " (" + (metric.maximize ? "max" : "min") + ")";
  if (!best) return "no best point by " + by + ": none of the " + std::to_string(lines) + " lines is ok with that number in its result";
  char value[64];
  std::snprintf(value, sizeof value, "%.6g", best->value);
  std::string text = "best of " + std::to_string(best->ranked) + " points by " + by + ": #" + std::to_string(best->index) + " " +
                     best->point.dump() + " = " + value;
  if (best->missing > 0) text += " (" + std::to_string(best->missing) + " ok points lack the metric)";
  return text;
}

report::SweepBest parse_best_option(const std::string& text) {
  report::SweepBest best;
  const auto colon = text.rfind(':');
  best.metric = text.substr(0, colon);
  if (colon != std::string::npos) {
    const std::string goal = text.substr(colon + 1);
    if (goal != "max" && goal != "min") throw InputError("--best '" + text + "': expected PATH, PATH:max or PATH:min");
    best.maximize = goal == "max";
  }
  if (best.metric.empty()) throw InputError("--best '" + text + "': expected a dotted result path, e.g. step_time_s:min");
  return best;
}

}  // namespace fmsim::cli
