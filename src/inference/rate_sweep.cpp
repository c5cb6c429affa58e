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
    spdlog::info("rate {:.3f}/s: p{} TTFT {}, TPOT {}: {}", rate, scenario.slo.percentile,
                 units::format_time(percentile_value(summary.ttft_s, scenario.slo.percentile)),
                 units::format_time(percentile_value(summary.tpot_s, scenario.slo.percentile)), summary.slo_met ? "meets the SLOs" : "misses");
    return summary.slo_met;
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
    points.push_back({{"rate_per_s", point.rate_per_s},
                      {"requests_per_s", point.summary.requests_per_s},
                      {"offered_requests_per_s", optional_number(point.summary.offered_requests_per_s)},
                      {"drain_s", point.summary.drain_s},
                      {"output_tokens_per_s", point.summary.output_tokens_per_s},
                      {"ttft_s", {{"p50", point.summary.ttft_s.p50}, {"p90", point.summary.ttft_s.p90}, {"p99", point.summary.ttft_s.p99}}},
                      {"tpot_s", {{"p50", point.summary.tpot_s.p50}, {"p90", point.summary.tpot_s.p90}, {"p99", point.summary.tpot_s.p99}}},
                      {"slo_goodput", optional_number(point.summary.slo_goodput)},
                      {"slo_met", point.summary.slo_met}});
  }
  return {{"max_rate_per_s", optional_number(sweep.max_rate_per_s)},
          {"resolution", sweep.resolution},
          {"points", points}};
}

std::string to_text(const RateSweep& sweep) {
  std::string out;
  char line[256];
  // rate/s is the Poisson rate asked for; offered/s the arrivals drawn; achieved/s the completions from
  // first arrival to last completion (drain included).
  std::snprintf(line, sizeof line, "%10s %10s %10s %10s %10s %10s %8s\n", "rate/s", "offered/s", "achieved/s",
                "TTFT p99", "TPOT p99", "goodput", "SLOs");
  out += line;
  std::vector<const SweepPoint*> sorted;
  for (const auto& point : sweep.points) sorted.push_back(&point);
  std::sort(sorted.begin(), sorted.end(), [](auto* a, auto* b) { return a->rate_per_s < b->rate_per_s; });
  for (const auto* point : sorted) {
    std::snprintf(line, sizeof line, "%10.3f %10.3f %10.3f %10s %10s %9.1f%% %8s\n", point->rate_per_s,
                  point->summary.offered_requests_per_s.value_or(point->rate_per_s), point->summary.requests_per_s,
                  units::format_time(point->summary.ttft_s.p99).c_str(), units::format_time(point->summary.tpot_s.p99).c_str(),
                  100 * point->summary.slo_goodput.value_or(1.0), point->summary.slo_met ? "met" : "missed");
    out += line;
  }
  if (sweep.max_rate_per_s) {
    std::snprintf(line, sizeof line,
                  "\ncapacity: %.3f requests/s offered (rate/s), the highest Poisson rate whose p%g latencies meet the "
                  "SLOs (bracket %.0f%%); achieved/s is lower by the drain after the last arrival\n", *sweep.max_rate_per_s, sweep.slo_percentile, 100 * sweep.resolution);
  } else {
    std::snprintf(line, sizeof line, "\nno rate tried meets the SLOs\n");
  }
  out += line;
  return out;
}

}  // namespace fmsim::inference
