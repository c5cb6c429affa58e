#pragma once
#include <algorithm>
// What a serving run reports: throughput, latency percentiles, SLO goodput, KV cache use, preemptions
// and cost, computed from the per-request outcomes; its JSON document (schema fmsim.serve/1), text
// summary and Chrome trace-event timeline.
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "fmsim/inference/serving_sim.hpp"
#include "fmsim/inference/steady_state.hpp"

namespace fmsim::inference {

struct Percentiles {
  double p50 = 0, p90 = 0, p99 = 0, mean = 0, max = 0;
};

/// Linear interpolation between closest ranks (numpy's default); `percentile` in [0, 100].
double percentile_of(std::vector<double> values, double percentile);
Percentiles percentiles_of(const std::vector<double>& values);
/// The reported percentile nearest above `percentile` (p50, p90 or p99).
double percentile_value(const Percentiles& p, double percentile);

struct ServeSummary {
  int requests = 0, completed = 0;
  double duration_s = 0;                ///< first arrival to last completion
  /// Achieved: completions over duration_s. It includes the drain after the last arrival, so it is below
  /// the offered rate even when the deployment keeps up (by about offered x drain_s / duration_s).
  double requests_per_s = 0;
  /// Arrivals per second over the arrival span ((requests - 1) / (last - first arrival)); empty when
  /// every request arrives at once (offline).
  std::optional<double> offered_requests_per_s;
  double drain_s = 0;                   ///< last arrival to last completion
  double input_tokens_per_s = 0, output_tokens_per_s = 0;
  double output_tokens_per_s_per_gpu = 0;
  Percentiles ttft_s, tpot_s, e2e_s, queue_s, kv_transfer_s;
  double mean_concurrency = 0;          ///< time-average of requests in the system
  std::optional<double> slo_goodput;    ///< fraction of requests meeting every SLO (none set: empty)
  double goodput_requests_per_s = 0;
  bool slo_met = true;                  ///< the SLO percentile of each metric is within its limit
  double kv_utilization_mean = 0, kv_utilization_peak = 0;
  long long preemptions = 0;
  double prefix_cached_fraction = 0;    ///< prompt tokens served from the prefix cache
  /// Speculative decoding: tokens a sequence's decode step gained on average (empty when off).
  std::optional<double> speculative_tokens_per_step;
  /// Prefix tree over shared prefixes: tokens looked up and found (HBM, host memory), evictions.
  struct PrefixCache {
    long long looked_up_tokens = 0, gpu_hit_tokens = 0, host_hit_tokens = 0, gpu_evictions = 0, host_drops = 0;
    double hit_rate() const { return looked_up_tokens > 0 ? static_cast<double>(gpu_hit_tokens + host_hit_tokens) / looked_up_tokens : 0.0; }
  };
  std::optional<PrefixCache> prefix_cache;   ///< empty unless the workload has shared prefixes and caching is on
  int gpus = 0, nodes = 0;
  std::optional<double> usd_per_hour, usd_per_million_tokens;
  /// The measurement window without warm-up and drain (empty offline); steady_state.hpp.
  std::optional<SteadyState> steady;
  /// Per pool: its replicas' busy time summed, split by what the iterations spent it on (the
  /// IterationBreakdown parts in order: gemm, attention, memory_ops, communication, sampling, draft,
  /// kv_load, host). The parts add up to busy_s.
  struct IterationTime {
    double busy_s = 0;
    std::vector<std::pair<std::string, double>> parts_s;
    long long iterations = 0;
    /// An iteration's cost that does not grow with its batch (one sequence decoding one token: the
    /// weights' reads, launches, fixed collective latency).
    double fixed_s = 0;
    /// Share of the mean iteration that grows with the batch, 1 - fixed_s / (busy_s / iterations). Under
    /// continuous batching at a steady arrival rate the iteration time is fixed_s / (1 - load_factor), so a
    /// relative error e in the per-token cost moves it by about e x load_factor / (1 - load_factor).
    double load_factor() const {
      return iterations > 0 && busy_s > 0 ? std::clamp(1.0 - fixed_s * static_cast<double>(iterations) / busy_s, 0.0, 1.0) : 0.0;
    }
  };
  std::vector<IterationTime> iteration_time;
};

ServeSummary summarize(const ServingPlan& plan, const ServeOutcome& outcome);

/// A value, or null where it is absent (JSON fields such as slo_goodput, offered_requests_per_s).
nlohmann::json optional_number(const std::optional<double>& value);
/// The steady-state window as JSON (null when there is none).
nlohmann::json to_json(const std::optional<SteadyState>& steady);

/// The run's JSON document (everything in the summary, the configuration echoed, per-pool memory).
nlohmann::json to_json(const ServingPlan& plan, const ServeSummary& summary, const ServeOutcome& outcome);
std::string to_text(const ServingPlan& plan, const ServeSummary& summary);
/// Chrome trace-event JSON: a process per replica with its iterations, and the KV transfers.
std::string timeline_json(const ServingPlan& plan, const ServeOutcome& outcome);

}  // namespace fmsim::inference
