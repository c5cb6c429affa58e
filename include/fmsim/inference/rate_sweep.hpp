#pragma once
// --sweep-rate: the highest Poisson arrival rate at which the scenario's SLOs still hold (the SLO
// percentile of TTFT, TPOT and end-to-end latency within their limits, every request served).
#include <optional>
#include <vector>

#include "fmsim/inference/serve_report.hpp"

namespace fmsim::inference {

struct SweepPoint {
  double rate_per_s = 0;
  ServeSummary summary;
};

struct RateSweep {
  std::vector<SweepPoint> points;        ///< in the order tried
  std::optional<double> max_rate_per_s;  ///< the capacity: highest rate sustained in steady state within the SLOs; empty when none
  double resolution = 0;                 ///< relative width of the final bracket
  double slo_percentile = 99;            ///< the percentile the SLOs are judged at
};

/// Brackets the rate by doubling or halving from the scenario's rate, then bisects to `resolution`
/// (relative). Throws InputError when the scenario has no SLO or no Poisson workload.
RateSweep sweep_rate(const ServingPlan& plan, double resolution = 0.02);

nlohmann::json to_json(const RateSweep& sweep);
std::string to_text(const RateSweep& sweep);

}  // namespace fmsim::inference
