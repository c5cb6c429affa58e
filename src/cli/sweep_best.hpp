#pragma once
// The best point of a sweep: the `ok` line whose result has the best value of the sweep's metric
// (report::SweepBest), named on stderr when `fmsim sweep` or `fmsim merge` ends (docs/cli.md).
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/report/sweep_spec.hpp"

namespace fmsim::cli {

struct BestPoint {
  std::size_t index = 0;
  nlohmann::json point;
  double value = 0;
  std::size_t ranked = 0;   ///< ok lines that had the metric
  std::size_t missing = 0;  ///< ok lines without it (a number at that path)
};

/// The number at a dotted path of a result ("ttft_s.p99"), if there is one.
std::optional<double> metric_value(const nlohmann::json& result, const std::string& dotted_path);

/// The best `ok` line of `lines` by `best` (ties: the lowest index); nullopt when none has the metric.
std::optional<BestPoint> best_point(const std::vector<nlohmann::json>& lines, const report::SweepBest& best);

/// "best of 12 points by tokens_per_s_per_gpu (max): #7 {"parallelism.tp": 4} = 1234.5", or why none.
std::string describe_best(const std::optional<BestPoint>& best, const report::SweepBest& metric, std::size_t lines);

/// --best PATH[:max|:min] as `fmsim merge` takes it.
report::SweepBest parse_best_option(const std::string& text);

}  // namespace fmsim::cli
