// Time series of a simulated serving run (time_series.hpp): per replica, the engine's iterations (busy
// time, sequences in the batch, KV-cache use, prompt and generated tokens) and its requests (waiting:
// arrived, no first token yet); per GPU of each replica, utilisation and memory; for the run, latency
// histograms filled as requests reach their first token or finish, and the document's own percentiles
// at the end (so a query at the end returns exactly the JSON's numbers).
#include <algorithm>
#include <cmath>
#include <map>

#include "fmsim/inference/serving_sim.hpp"
#include "fmsim/report/time_series.hpp"
#include "metrics_grid.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kMaxPointsPerRun = 200000;

/// vLLM's bucket bounds (vllm/engine/metrics.py: time_to_first_token_seconds, time_per_output_token_seconds,
/// e2e_request_latency_seconds), so that dashboards written for vLLM read these series unchanged.
const std::vector<double> kTtftBuckets = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                          1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const std::vector<double> kTpotBuckets = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
                                          0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
const std::vector<double> kE2eBuckets = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                                         40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

struct Observations {
  std::vector<std::pair<double, double>> at_value;  ///< (time observed, value), sorted by time
};

void declare(OpenMetricsWriter& w) {
  w.family("DCGM_FI_DEV_GPU_UTIL", MetricType::gauge, "GPU utilization (in %): share of the last interval the replica ran iterations.");
  w.family("DCGM_FI_DEV_FB_USED", MetricType::gauge, "Framebuffer memory used (in MiB): weights, activations, runtime and the KV cache pool.");
  w.family("DCGM_FI_DEV_FB_FREE", MetricType::gauge, "Framebuffer memory free (in MiB).");
  w.family("fmsim_serving_num_requests_running", MetricType::gauge, "Sequences in the replica's batch (time average over the last interval).");
  w.family("fmsim_serving_num_requests_waiting", MetricType::gauge, "Requests routed to the replica still waiting for their first token.");
  w.family("fmsim_serving_kv_cache_usage_ratio", MetricType::gauge, "Share of the replica's KV-cache blocks in use.", "ratio");
  w.family("fmsim_serving_prompt_tokens", MetricType::counter, "Prompt tokens prefilled.");
  w.family("fmsim_serving_generation_tokens", MetricType::counter, "Tokens generated (decode steps, every sample).");
  w.family("fmsim_serving_iterations", MetricType::counter, "Engine iterations run.");
  w.family("fmsim_serving_requests_finished", MetricType::counter, "Requests completed.");
  w.family("fmsim_serving_time_to_first_token_seconds", MetricType::histogram, "Time to first token of each request.", "seconds",
           kTtftBuckets);
  w.family("fmsim_serving_time_per_output_token_seconds", MetricType::histogram,
           "Time per output token after the first, per request.", "seconds", kTpotBuckets);
  w.family("fmsim_serving_e2e_request_latency_seconds", MetricType::histogram, "Arrival to last token, per request.", "seconds",
           kE2eBuckets);
  w.family("fmsim_serving_ttft_seconds", MetricType::gauge, "TTFT percentile over the whole run (the result document's), at its end.", "seconds");
  w.family("fmsim_serving_tpot_seconds", MetricType::gauge, "TPOT percentile over the whole run (the result document's), at its end.", "seconds");
  w.family("fmsim_serving_output_tokens_per_second", MetricType::gauge, "Output tokens per second over the run (the result document's), at its end.");
}

/// Cumulative histogram counts of `obs` at each grid time.
void write_histogram(OpenMetricsWriter& w, const std::string& name, const MetricLabels& labels, const detail::MetricsGrid& grid,
                     std::vector<std::pair<double, double>> obs, std::vector<double> bounds) {
  std::sort(obs.begin(), obs.end());
  bounds.push_back(INFINITY);
  std::vector<double> counts(bounds.size(), 0.0);
  double sum = 0;
  std::size_t next = 0;
  for (double t : grid.t) {
    for (; next < obs.size() && obs[next].first <= t + 1e-12; ++next) {
      sum += obs[next].second;
      for (std::size_t b = 0; b < bounds.size(); ++b) {
        if (obs[next].second <= bounds[b]) counts[b] += 1;
      }
    }
    w.histogram(name, labels, t, counts, sum);
  }
}

}  // namespace

std::string serve_metrics(const inference::ServeOutcome& outcome, const json& doc, const MetricsOptions& options) {
  const std::string scenario = doc.contains("scenario") && doc["scenario"].is_object() ? doc["scenario"].value("name", "") : "";
  const json& replicas = doc.at("replicas");
  const int n_replicas = static_cast<int>(replicas.size());
  // Pool shapes: GPUs per replica and memory per GPU (prometheus_export.cpp reads the same fields).
  std::map<std::string, std::pair<int, double>> pool_shape;
  for (const auto& pool : doc.at("pools")) {
    double used = 0;
    for (const auto& [k, v] : pool.at("memory_per_gpu").items()) {
      if (k != "kv_bytes_per_token" && v.is_number()) used += v.get<double>();
    }
    pool_shape[pool.value("role", "")] = {std::max(1, pool.value("gpus", 1) / std::max(1, pool.value("replicas", 1))), used};
  }
  const int gpus_total = std::max(1, doc.at("cluster").value("gpus", 1));
  const int series_per_point = 10 * n_replicas + 3 * gpus_total + 60;
  const detail::MetricsGrid grid(outcome.end_s, std::clamp(kMaxPointsPerRun / series_per_point, 10, 600));

  struct ReplicaSeries {
    std::vector<double> busy_s, seq_s, kv_s, prompt, generated, iterations;
  };
  std::vector<ReplicaSeries> rs(n_replicas, {grid.zeros(), grid.zeros(), grid.zeros(), grid.zeros(), grid.zeros(), grid.zeros()});
  for (const auto& it : outcome.iterations) {
    if (it.replica < 0 || it.replica >= n_replicas) continue;
    ReplicaSeries& r = rs[it.replica];
    grid.add_time(r.busy_s, it.start_s, it.end_s);
    grid.add_amount(r.seq_s, it.start_s, it.end_s, it.sequences * std::max(0.0, it.end_s - it.start_s));
    grid.add_amount(r.kv_s, it.start_s, it.end_s, it.kv_used_fraction * std::max(0.0, it.end_s - it.start_s));
    grid.add_amount(r.prompt, it.end_s, it.end_s, it.prefill_tokens);
    grid.add_amount(r.generated, it.end_s, it.end_s, it.decode_tokens);
    grid.add_amount(r.iterations, it.end_s, it.end_s, 1);
  }
  // Waiting requests per replica: +1 at arrival, -1 at the first token (or at the end, never served).
  std::vector<std::vector<std::pair<double, int>>> waiting_events(n_replicas);
  Observations ttft, tpot, e2e;
  for (const auto& o : outcome.requests) {
    if (o.replica >= 0 && o.replica < n_replicas) {
      waiting_events[o.replica].push_back({o.arrival_s, +1});
      if (o.first_token_s >= 0) waiting_events[o.replica].push_back({o.first_token_s, -1});
    }
    if (o.finish_s < 0) continue;
    ttft.at_value.push_back({o.first_token_s, o.first_token_s - o.arrival_s});
    e2e.at_value.push_back({o.finish_s, o.finish_s - o.arrival_s});
    if (o.output_tokens > 1) tpot.at_value.push_back({o.finish_s, (o.finish_s - o.first_token_s) / (o.output_tokens - 1)});
  }

  OpenMetricsWriter w(options);
  declare(w);
  const std::string gpu_model = doc.at("cluster").value("gpu", "");
  const int gpus_per_node = std::max(1, doc.at("cluster").value("gpus_per_node", 8));
  const double capacity = doc.at("cluster").value("hbm_capacity_bytes", 0.0);
  int ordinal = 0;
  for (int r = 0; r < n_replicas; ++r) {
    const std::string pool = replicas[r].value("pool", "");
    const MetricLabels labels = {{"replica", std::to_string(r)}, {"pool", pool}, {"scenario", scenario}};
    auto events = waiting_events[r];
    std::sort(events.begin(), events.end());
    const auto prompt = grid.cumulative(rs[r].prompt), generated = grid.cumulative(rs[r].generated),
               iterations = grid.cumulative(rs[r].iterations);
    std::size_t next = 0;
    int waiting = 0;
    double kv_last = 0;
    for (std::size_t k = 0; k < grid.t.size(); ++k) {
      const double t = grid.t[k];
      const std::size_t i = k == 0 ? 0 : k - 1;
      const double width = grid.width(i);
      for (; next < events.size() && events[next].first <= t; ++next) waiting += events[next].second;
      if (rs[r].busy_s[i] > 0) kv_last = rs[r].kv_s[i] / rs[r].busy_s[i];
      w.sample("fmsim_serving_num_requests_running", labels, t, width > 0 ? rs[r].seq_s[i] / width : 0.0);
      w.sample("fmsim_serving_num_requests_waiting", labels, t, waiting);
      w.sample("fmsim_serving_kv_cache_usage_ratio", labels, t, kv_last);
      w.sample("fmsim_serving_prompt_tokens", labels, t, prompt[k]);
      w.sample("fmsim_serving_generation_tokens", labels, t, generated[k]);
      w.sample("fmsim_serving_iterations", labels, t, iterations[k]);
    }
    const auto [gpus, used] = pool_shape[pool];
    for (int g = 0; g < gpus; ++g, ++ordinal) {
      const MetricLabels gpu = {{"gpu", std::to_string(ordinal % gpus_per_node)},
                                {"Hostname", "node" + std::to_string(ordinal / gpus_per_node)},
                                {"modelName", gpu_model},
                                {"replica", std::to_string(r)},
                                {"pool", pool},
                                {"scenario", scenario}};
      for (std::size_t k = 0; k < grid.t.size(); ++k) {
        const std::size_t i = k == 0 ? 0 : k - 1;
        const double width = grid.width(i);
        w.sample("DCGM_FI_DEV_GPU_UTIL", gpu, grid.t[k], width > 0 ? std::min(100.0, 100 * rs[r].busy_s[i] / width) : 0.0);
        w.sample("DCGM_FI_DEV_FB_USED", gpu, grid.t[k], used / kMiB);
        if (capacity > 0) w.sample("DCGM_FI_DEV_FB_FREE", gpu, grid.t[k], std::max(0.0, capacity - used) / kMiB);
      }
    }
  }
  const MetricLabels job = {{"scenario", scenario}};
  std::vector<std::pair<double, double>> finished;
  for (const auto& [t, v] : e2e.at_value) finished.push_back({t, 1.0});
  std::sort(finished.begin(), finished.end());
  std::size_t done_next = 0;
  double done = 0;
  for (double t : grid.t) {
    for (; done_next < finished.size() && finished[done_next].first <= t + 1e-12; ++done_next) done += 1;
    w.sample("fmsim_serving_requests_finished", job, t, done);
  }
  write_histogram(w, "fmsim_serving_time_to_first_token_seconds", job, grid, ttft.at_value, kTtftBuckets);
  write_histogram(w, "fmsim_serving_time_per_output_token_seconds", job, grid, tpot.at_value, kTpotBuckets);
  write_histogram(w, "fmsim_serving_e2e_request_latency_seconds", job, grid, e2e.at_value, kE2eBuckets);
  const double end = grid.t.back();
  for (const auto& [key, quantile] : std::vector<std::pair<std::string, std::string>>{{"p50", "0.5"}, {"p90", "0.9"}, {"p99", "0.99"}}) {
    MetricLabels q = {{"quantile", quantile}, {"scenario", scenario}};
    w.sample("fmsim_serving_ttft_seconds", q, end, doc.at("ttft_s").value(key, 0.0));
    w.sample("fmsim_serving_tpot_seconds", q, end, doc.at("tpot_s").value(key, 0.0));
  }
  w.sample("fmsim_serving_output_tokens_per_second", job, end, doc.value("output_tokens_per_s", 0.0));
  return w.text();
}

}  // namespace fmsim::report
