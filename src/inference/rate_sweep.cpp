// The SLO-limited arrival rate, by bracketing and bisection over whole simulations.
#include "fmsim/inference/rate_sweep.hpp"

#include <algorithm>
#include <cstdio>

#include <spdlog/spdlog.h>

#include "fmsim/common/error.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::inference {
namespace {

constexpr int kMaxBracketSteps = 16;  ///< 2^16 x the starting rate either way

/// The reported percentile nearest above `percentile`, as percentile_value.
double steady_value(const SteadyPercentiles& p, double percentile) {
  return percentile <= 50 ? p.p50 : percentile <= 90 ? p.p90 : p.p99;
}

}  // namespace

RateSweep sweep_rate(const ServingPlan& plan, double resolution) {
  const ServeScenario& scenario = plan.scenario();
  if (!scenario.slo.ttft_s && !scenario.slo.tpot_s && !scenario.slo.e2e_s) {
    throw InputError(scenario.file + ": --sweep-rate needs an \"slo\" section with ttft, tpot or e2e limits");
  }
  if (scenario.workload.arrival != WorkloadSpec::Arrival::poisson) {
    throw InputError(scenario.file + ": --sweep-rate needs workload.arrival = \"poisson\" (it varies workload.rate)");
  }
  RateSweep sweep;
  sweep.resolution = resolution;
  sweep.slo_percentile = scenario.slo.percentile;
  auto met = [&](double rate) {
    WorkloadSpec workload = scenario.workload;
    workload.rate_per_s = rate;
    const auto requests = make_requests(workload);
    const ServeSummary summary = summarize(plan, simulate_serving(plan, requests, false));
    sweep.points.push_back({rate, summary});
    // Sustained: the steady-state window keeps up (no diverging queue) and its requests meet the SLOs.
    const bool sustained = summary.steady && summary.steady->sustained();
    spdlog::info("rate {:.3f}/s: steady-state p{} TTFT {}, TPOT {}: {}", rate, scenario.slo.percentile,
                 units::format_time(summary.steady ? steady_value(summary.steady->ttft_s, scenario.slo.percentile) : 0.0),
                 units::format_time(summary.steady ? steady_value(summary.steady->tpot_s, scenario.slo.percentile) : 0.0),
                 sustained ? "sustained within the SLOs" : !summary.steady || !summary.steady->steady ? "not steady" : "misses the SLOs");
    return sustained;
  };
  double low = 0, high = 0;
  const double start = scenario.workload.rate_per_s;
  if (met(start)) {
    low = start;
    for (int i = 0; i < kMaxBracketSteps && high == 0; ++i) {
      if (met(low * 2)) low *= 2;
      else high = low * 2;
    }
    if (high == 0) {
      sweep.max_rate_per_s = low;
      return sweep;
    }
  } else {
    high = start;
    for (int i = 0; i < kMaxBracketSteps && low == 0; ++i) {
      if (met(high / 2)) low = high / 2;
      else high /= 2;
    }
    if (low == 0) return sweep;
  }
  while ((high - low) / low > resolution) {
    const double middle = 0.5 * (low + high);
    if (met(middle)) low = middle;
    else high = middle;
  }
  sweep.max_rate_per_s = low;
  return sweep;
}

nlohmann::json to_json(const RateSweep& sweep) {
  nlohmann::json points = nlohmann::json::array();
  for (const auto& point : sweep.points) {
    const auto& w = point.summary.steady;
    points.push_back({{"rate_per_s", point.rate_per_s},
                      {"window_offered_requests_per_s", w ? nlohmann::json(w->offered_requests_per_s) : nlohmann::json(nullptr)},
                      {"window_achieved_requests_per_s", w ? nlohmann::json(w->achieved_requests_per_s) : nlohmann::json(nullptr)},
                      {"steady", w && w->steady},
                      {"reason", w ? w->reason : std::string("no steady-state window")},
                      {"sustained", w && w->sustained()},
                      {"requests_per_s", point.summary.requests_per_s},
                      {"offered_requests_per_s", optional_number(point.summary.offered_requests_per_s)},
                      {"drain_s", point.summary.drain_s},
                      {"output_tokens_per_s", point.summary.output_tokens_per_s},
                      // The steady-state window's requests (the whole run's without a window).
                      {"ttft_s", w ? nlohmann::json{{"p50", w->ttft_s.p50}, {"p90", w->ttft_s.p90}, {"p99", w->ttft_s.p99}}
                                   : nlohmann::json{{"p50", point.summary.ttft_s.p50}, {"p90", point.summary.ttft_s.p90}, {"p99", point.summary.ttft_s.p99}}},
                      {"tpot_s", w ? nlohmann::json{{"p50", w->tpot_s.p50}, {"p90", w->tpot_s.p90}, {"p99", w->tpot_s.p99}}
                                   : nlohmann::json{{"p50", point.summary.tpot_s.p50}, {"p90", point.summary.tpot_s.p90}, {"p99", point.summary.tpot_s.p99}}},
                      {"slo_goodput", optional_number(point.summary.slo_goodput)},
                      {"slo_met", w && w->slo_met}});
  }
  return {{"max_rate_per_s", optional_number(sweep.max_rate_per_s)},
          {"capacity_requests_per_s", optional_number(sweep.max_rate_per_s)},
          {"criterion", "sustained: the steady-state window (warm-up: the first 10 % of arrivals, or until the p90 end-to-end latency "
                        "has passed since the first arrival, at most half of them; drain: the last 10 % of arrivals) completes (over the window "
                        "shifted by the mean time in the system) at least 95 % of its arrivals, its TTFT does not rise by more than "
                        "50 % of its mean and 0.05 s per second across it, and its requests' SLO percentile meets every limit"},
          {"resolution", sweep.resolution},
          {"points", points}};
}

std::string to_text(const RateSweep& sweep) {
  std::string out;
  char line[512];
  // rate/s is the Poisson rate asked for; offered/s the arrivals drawn; achieved/s the completions from
  // first arrival to last completion (drain included).
  // Offered and achieved over the steady-state window; latencies of the window's requests.
  std::snprintf(line, sizeof line, "%10s %10s %10s %10s %10s %10s %8s %10s\n", "rate/s", "offered/s", "achieved/s",
                "TTFT p99", "TPOT p99", "goodput", "SLOs", "steady");
  out += line;
  std::vector<const SweepPoint*> sorted;
  for (const auto& point : sweep.points) sorted.push_back(&point);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rate_per_s < b->rate_per_s; });
  std::string reasons;
  for (const auto* point : sorted) {
    const auto& w = point->summary.steady;
    const bool steady = w && w->steady;
    std::snprintf(line, sizeof line, "%10.3f %10.3f %10.3f %10s %10s %9.1f%% %8s %10s\n", point->rate_per_s,
                  w ? w->offered_requests_per_s : point->rate_per_s, w ? w->achieved_requests_per_s : point->summary.requests_per_s,
                  units::format_time(w ? w->ttft_s.p99 : point->summary.ttft_s.p99).c_str(),
                  units::format_time(w ? w->tpot_s.p99 : point->summary.tpot_s.p99).c_str(),
                  100 * point->summary.slo_goodput.value_or(1.0), w && w->slo_met ? "met" : "missed", steady ? "yes" : "no");
    out += line;
    if (!steady) {
      std::snprintf(line, sizeof line, "  %.3f/s: %s\n", point->rate_per_s, w ? w->reason.c_str() : "no steady-state window");
      reasons += line;
    }
  }
  out += reasons;
  if (sweep.max_rate_per_s) {
    std::snprintf(line, sizeof line,
                  "\ncapacity: %.3f requests/s (rate/s), the highest Poisson rate sustained in steady state within the "
                  "SLOs (p%g of the window's requests; bracket %.0f%%). Steady: warm-up (first 10%% of arrivals, or "
                  "until the p90 end-to-end latency has passed, at most half) and last 10%% left out, "
                  "completions over the window (shifted by the mean time in the system) at least 95%% of its arrivals, "
                  "TTFT not rising by more than 50%% of its mean and 0.05 s per second across it\n", *sweep.max_rate_per_s, sweep.slo_percentile, 100 * sweep.resolution);
  } else {
    std::snprintf(line, sizeof line, "\nno rate tried is sustained in steady state within the SLOs\n");
  }
  out += line;
  return out;
}

}  // namespace fmsim::inference
