// Steady-state window, offered vs achieved rate and the divergence test (steady_state.hpp).
#include "fmsim/inference/steady_state.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

namespace fmsim::inference {
namespace {

double percentile_sorted(const std::vector<double>& sorted, double percentile) {
  if (sorted.empty()) return 0.0;
  const double position = percentile / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

/// Of values already sorted.
SteadyPercentiles percentiles(const std::vector<double>& values) {
  SteadyPercentiles p;
  if (values.empty()) return p;
  p.p50 = percentile_sorted(values, 50);
  p.p90 = percentile_sorted(values, 90);
  p.p99 = percentile_sorted(values, 99);
  p.mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  return p;
}

/// One percentile of unsorted values (partial selection, no full sort).
double percentile_within(std::vector<double> values, double percentile) {
  if (values.empty()) return 0.0;
  const double position = percentile / 100.0 * static_cast<double>(values.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(below), values.end());
  const double low = values[below];
  if (below + 1 >= values.size()) return low;
  const double high = *std::min_element(values.begin() + static_cast<std::ptrdiff_t>(below) + 1, values.end());
  return low + (position - static_cast<double>(below)) * (high - low);
}

std::string format(const char* pattern, double a, double b) {
  char text[400];
  std::snprintf(text, sizeof text, pattern, a, b);
  return text;
}

}  // namespace

std::optional<SteadyState> steady_state(const ServeScenario& scenario, const ServeOutcome& outcome) {
  if (scenario.workload.arrival == WorkloadSpec::Arrival::offline) return std::nullopt;
  const auto& requests = outcome.requests;
  const auto n = static_cast<long long>(requests.size());
  // Requests are in arrival order (make_requests and read_trace sort them).
  long long first = static_cast<long long>(std::floor(kWarmupFraction * static_cast<double>(n)));
  const long long last = n - 1 - static_cast<long long>(std::floor(kDrainFraction * static_cast<double>(n)));
  // The deployment fills for about as long as a request stays in it: the warm-up lasts at least the
  // 90th percentile of the end-to-end latency from the first arrival, and at most half the arrivals.
  if (n > 0) {
    std::vector<double> e2e_all;
    e2e_all.reserve(requests.size());
    for (const auto& o : requests) {
      if (o.finish_s >= 0) e2e_all.push_back(o.finish_s - o.arrival_s);
    }
    const double fill_until = requests.front().arrival_s + percentile_within(std::move(e2e_all), kFillPercentile);
    const long long half = static_cast<long long>(std::floor(kMaxWarmupFraction * static_cast<double>(n)));
    while (first < half && requests[static_cast<std::size_t>(first)].arrival_s < fill_until) ++first;
  }
  SteadyState s;
  if (last < first) {
    s.reason = "no requests between the warm-up and the drain";
    return s;
  }
  s.window_start_s = requests[static_cast<std::size_t>(first)].arrival_s;
  s.window_end_s = requests[static_cast<std::size_t>(last)].arrival_s;
  const double length = s.window_end_s - s.window_start_s;
  s.measured_requests = static_cast<int>(last - first + 1);
  std::vector<double> ttft, tpot, e2e, arrival_of_ttft;
  bool all_done = true;
  for (long long i = first; i <= last; ++i) {
    const RequestOutcome& o = requests[static_cast<std::size_t>(i)];
    if (o.finish_s < 0) {
      all_done = false;
      continue;
    }
    ttft.push_back(o.first_token_s - o.arrival_s);
    arrival_of_ttft.push_back(o.arrival_s);
    e2e.push_back(o.finish_s - o.arrival_s);
    if (o.output_tokens > 1) tpot.push_back((o.finish_s - o.first_token_s) / (o.output_tokens - 1));
  }
  // Completions over the window shifted by the mean time in the system W (a request arriving at t leaves
  // around t + W; Little's law), whenever their requests arrived: without the shift the window would
  // compare today's arrivals with the completions of arrivals W earlier.
  // The shift stops at the last arrival: after it the deployment only drains (decode-only iterations
  // run faster than under load), which would flatter a deployment that does not keep up.
  const double mean_stay = e2e.empty() ? 0.0 : std::accumulate(e2e.begin(), e2e.end(), 0.0) / static_cast<double>(e2e.size());
  const double last_arrival_s = requests.back().arrival_s;
  s.completion_shift_s = std::clamp(mean_stay, 0.0, std::max(0.0, last_arrival_s - s.window_end_s));
  const double shift = s.completion_shift_s;
  double completed = 0, tokens = 0;
  for (const auto& o : requests) {
    if (o.finish_s >= s.window_start_s + shift && o.finish_s <= s.window_end_s + shift) {
      completed += 1;
      tokens += static_cast<double>(o.output_tokens) * o.samples;
    }
  }
  // The window holds measured_requests arrivals over `length`: measured_requests - 1 gaps.
  if (length > 0) {
    s.offered_requests_per_s = (s.measured_requests - 1) / length;
    s.achieved_requests_per_s = completed / length;
    s.achieved_output_tokens_per_s = tokens / length;
    s.completion_ratio = s.achieved_requests_per_s / s.offered_requests_per_s;
  }
  // TTFT trend: least squares over the window's requests.
  if (ttft.size() >= 2) {
    const double count = static_cast<double>(ttft.size());
    const double mean_x = std::accumulate(arrival_of_ttft.begin(), arrival_of_ttft.end(), 0.0) / count;
    const double mean_y = std::accumulate(ttft.begin(), ttft.end(), 0.0) / count;
    double sxy = 0, sxx = 0;
    for (std::size_t i = 0; i < ttft.size(); ++i) {
      sxy += (arrival_of_ttft[i] - mean_x) * (ttft[i] - mean_y);
      sxx += (arrival_of_ttft[i] - mean_x) * (arrival_of_ttft[i] - mean_x);
    }
    const double slope = sxx > 0 ? sxy / sxx : 0.0;
    s.ttft_slope = slope;
    s.ttft_rise = mean_y > 0 ? slope * length / mean_y : 0.0;
  }
  for (auto* values : {&ttft, &tpot, &e2e}) std::sort(values->begin(), values->end());
  s.ttft_s = percentiles(ttft);
  s.tpot_s = percentiles(tpot);
  s.e2e_s = percentiles(e2e);
  if (s.measured_requests < kMinWindowRequests || !(length > 0)) {
    s.reason = "too few requests in the window (" + std::to_string(s.measured_requests) + "; at least " +
               std::to_string(kMinWindowRequests) + " needed)";
  } else if (!all_done) {
    s.reason = "requests of the window never completed";
  } else if (s.completion_ratio < kMinCompletionRatio) {
    s.reason = format("not steady: completions over the window (shifted by the mean time in the system, at most to the last "
                      "arrival) are %.1f%% of its arrivals (at least %.0f%% needed): the "
                      "requests in the system keep growing (diverging, or a run too short to fill; more requests tell them apart)",
                      100 * s.completion_ratio, 100 * kMinCompletionRatio);
  } else if (s.ttft_rise > kMaxTtftRise && s.ttft_slope > kMaxTtftSlope) {
    s.reason = format("not steady: TTFT rises by %.0f%% of its mean across the window (at most 50%%), %.3f s per second of "
                      "arrivals (at most 0.05): the waiting queue grows", 100 * s.ttft_rise, s.ttft_slope);
  } else {
    s.steady = true;
  }
  const double q = scenario.slo.percentile;
  s.slo_met = all_done && !ttft.empty() && (!scenario.slo.ttft_s || percentile_sorted(ttft, q) <= *scenario.slo.ttft_s) &&
              (!scenario.slo.tpot_s || percentile_sorted(tpot, q) <= *scenario.slo.tpot_s) &&
              (!scenario.slo.e2e_s || percentile_sorted(e2e, q) <= *scenario.slo.e2e_s);
  return s;
}

}  // namespace fmsim::inference
