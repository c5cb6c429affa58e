#pragma once
// The steady state of a serving run under a Poisson or trace load: a measurement window that leaves out
// the warm-up (the first arrivals, into an empty deployment) and the drain (the last arrivals, whose
// successors never come), the offered and achieved rates inside it, whether the deployment keeps up
// there (stated criterion below, docs/model.md "Steady state"), and the latency percentiles of the
// requests that arrived in it.
#include <optional>
#include <string>

#include "fmsim/inference/serving_sim.hpp"

namespace fmsim::inference {

/// Fractions of the requests, in arrival order, left out before and after the window.
inline constexpr double kWarmupFraction = 0.1;
inline constexpr double kDrainFraction = 0.1;
/// The warm-up lasts at least the time the deployment takes to fill: this percentile of the end-to-end
/// latency, counted from the first arrival; but never more than this share of the arrivals.
inline constexpr double kFillPercentile = 90;
inline constexpr double kMaxWarmupFraction = 0.5;
/// Steady when the completions over the window, shifted by the mean time in the system, are at least
/// this share of the arrivals inside it (the queue absorbs at most 5 % of what arrives) ...
inline constexpr double kMinCompletionRatio = 0.95;
/// ... and the time to first token does not keep climbing: not steady when the least-squares slope of
/// TTFT over arrival time, times the window's length, is more than this share of the window's mean TTFT
/// and the slope itself is more than kMaxTtftSlope seconds per second (a waiting queue that grows by 5 %
/// of what arrives raises each later request's wait by 0.05 s per second).
inline constexpr double kMaxTtftRise = 0.5;
inline constexpr double kMaxTtftSlope = 0.05;
/// Fewer requests in the window than this: no judgement (steady = false, reason says so).
inline constexpr int kMinWindowRequests = 20;

struct SteadyPercentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0;
};

struct SteadyState {
  double window_start_s = 0, window_end_s = 0;  ///< first and last measured arrival
  int measured_requests = 0;                    ///< arrivals inside the window
  double offered_requests_per_s = 0;            ///< arrivals inside the window / its length
  /// Completions over the window shifted by the mean time in the system (completion_shift_s) / its length.
  double achieved_requests_per_s = 0;
  double completion_shift_s = 0;
  double achieved_output_tokens_per_s = 0;      ///< output tokens of those completions / its length
  double completion_ratio = 0;                  ///< achieved / offered
  double ttft_slope = 0;                        ///< least-squares TTFT slope over arrival time (s per s)
  double ttft_rise = 0;                         ///< ttft_slope x window length / mean TTFT
  SteadyPercentiles ttft_s, tpot_s, e2e_s;      ///< of the requests that arrived inside the window
  bool steady = false;
  std::string reason;                           ///< why not (empty when steady)
  bool slo_met = false;                         ///< the SLO percentile of the window's requests meets every limit
  bool sustained() const { return steady && slo_met; }
};

/// Empty for an offline workload (every request at t = 0: no arrival rate to sustain).
std::optional<SteadyState> steady_state(const ServeScenario& scenario, const ServeOutcome& outcome);

}  // namespace fmsim::inference
