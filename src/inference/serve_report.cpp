// Serving metrics from per-request outcomes, and the JSON, text and timeline renderings.
#include "fmsim/inference/serve_report.hpp"
#include "fmsim/inference/moe_backend.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>

#include "fmsim/report/error_band.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::inference {

namespace {

double sorted_percentile(const std::vector<double>& sorted, double percentile) {
  if (sorted.empty()) return 0.0;
  const double position = percentile / 100.0 * static_cast<double>(sorted.size() - 1);
  const auto below = static_cast<std::size_t>(std::floor(position));
  const std::size_t above = std::min(below + 1, sorted.size() - 1);
  return sorted[below] + (position - static_cast<double>(below)) * (sorted[above] - sorted[below]);
}

Percentiles sorted_percentiles(const std::vector<double>& sorted) {
  Percentiles p;
  if (sorted.empty()) return p;
  p.p50 = sorted_percentile(sorted, 50);
  p.p90 = sorted_percentile(sorted, 90);
  p.p99 = sorted_percentile(sorted, 99);
  p.mean = std::accumulate(sorted.begin(), sorted.end(), 0.0) / static_cast<double>(sorted.size());
  p.max = sorted.back();
  return p;
}

}  // namespace

double percentile_of(std::vector<double> values, double percentile) {
  std::sort(values.begin(), values.end());
  return sorted_percentile(values, percentile);
}

Percentiles percentiles_of(const std::vector<double>& values) {
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return sorted_percentiles(sorted);
}

double percentile_value(const Percentiles& p, double percentile) {
  if (percentile <= 50) return p.p50;
  if (percentile <= 90) return p.p90;
  return p.p99;
}

nlohmann::json optional_number(const std::optional<double>& value) { return value ? nlohmann::json(*value) : nlohmann::json(nullptr); }

nlohmann::json to_json(const std::optional<SteadyState>& steady) {
  if (!steady) return nullptr;
  const SteadyState& w = *steady;
  auto p = [](const SteadyPercentiles& x) { return nlohmann::json{{"p50", x.p50}, {"p90", x.p90}, {"p99", x.p99}, {"mean", x.mean}}; };
  return {{"window_start_s", w.window_start_s},
          {"window_end_s", w.window_end_s},
          {"measured_requests", w.measured_requests},
          {"offered_requests_per_s", w.offered_requests_per_s},
          {"achieved_requests_per_s", w.achieved_requests_per_s},
          {"completion_shift_s", w.completion_shift_s},
          {"achieved_output_tokens_per_s", w.achieved_output_tokens_per_s},
          {"completion_ratio", w.completion_ratio},
          {"ttft_slope", w.ttft_slope},
          {"ttft_rise", w.ttft_rise},
          {"ttft_s", p(w.ttft_s)},
          {"tpot_s", p(w.tpot_s)},
          {"e2e_latency_s", p(w.e2e_s)},
          {"steady", w.steady},
          {"reason", w.reason},
          {"slo_met", w.slo_met},
          {"sustained", w.sustained()},
          {"criterion",
           {{"warmup_fraction", kWarmupFraction},
            {"drain_fraction", kDrainFraction},
            {"fill_percentile", kFillPercentile},
            {"max_warmup_fraction", kMaxWarmupFraction},
            {"min_completion_ratio", kMinCompletionRatio},
            {"max_ttft_rise", kMaxTtftRise},
            {"max_ttft_slope", kMaxTtftSlope},
            {"min_window_requests", kMinWindowRequests}}}};
}

ServeSummary summarize(const ServingPlan& plan, const ServeOutcome& outcome) {
  const auto& scenario = plan.scenario();
  ServeSummary s;
  s.requests = static_cast<int>(outcome.requests.size());
  s.gpus = scenario.total_gpus();
  s.nodes = plan.nodes_used();
  double first_arrival = INFINITY, last_arrival = -INFINITY, input_tokens = 0, output_tokens = 0, cached = 0;
  std::vector<double> ttft, tpot, e2e, queue, transfer;
  int good = 0;
  s.steady = steady_state(scenario, outcome);
  s.iteration_time.resize(scenario.pools.size());
  std::vector<IterationBreakdown> pool_parts(scenario.pools.size());
  for (const auto& r : outcome.replicas) {
    pool_parts[static_cast<std::size_t>(r.pool)].accumulate(r.time_parts);
    s.iteration_time[static_cast<std::size_t>(r.pool)].busy_s += r.busy_s;
    s.iteration_time[static_cast<std::size_t>(r.pool)].iterations += r.iterations;
  }
  BatchShape one;  // one sequence decoding one token: the part of an iteration that does not grow with the batch
  one.decode_tokens = 1;
  one.decode_context_tokens = 1;
  one.sampled_rows = 1;
  for (std::size_t p = 0; p < pool_parts.size(); ++p) {
    s.iteration_time[p].parts_s = named_parts(pool_parts[p]);
    s.iteration_time[p].fixed_s = plan.model(static_cast<int>(p)).iteration_s(one);
  }
  for (const auto& o : outcome.requests) {
    first_arrival = std::min(first_arrival, o.arrival_s);
    last_arrival = std::max(last_arrival, o.arrival_s);
    if (o.finish_s < 0) continue;
    ++s.completed;
    input_tokens += o.input_tokens;
    cached += o.cached_tokens;
    output_tokens += static_cast<double>(o.output_tokens) * o.samples;
    const double request_ttft = o.first_token_s - o.arrival_s;
    const double request_e2e = o.finish_s - o.arrival_s;
    ttft.push_back(request_ttft);
    e2e.push_back(request_e2e);
    if (o.output_tokens > 1) tpot.push_back((o.finish_s - o.first_token_s) / (o.output_tokens - 1));
    if (o.decode_replica >= 0) transfer.push_back(o.kv_transfer_s);
    const bool ok = (!scenario.slo.ttft_s || request_ttft <= *scenario.slo.ttft_s) &&
                    (!scenario.slo.e2e_s || request_e2e <= *scenario.slo.e2e_s) &&
                    (!scenario.slo.tpot_s || o.output_tokens <= 1 || (o.finish_s - o.first_token_s) / (o.output_tokens - 1) <= *scenario.slo.tpot_s);
    good += ok ? 1 : 0;
  }
  if (s.completed == 0) return s;
  s.duration_s = std::max(outcome.end_s - first_arrival, 1e-12);
  s.requests_per_s = s.completed / s.duration_s;
  s.input_tokens_per_s = input_tokens / s.duration_s;
  s.output_tokens_per_s = output_tokens / s.duration_s;
  s.output_tokens_per_s_per_gpu = s.output_tokens_per_s / s.gpus;
  s.prefix_cached_fraction = input_tokens > 0 ? cached / input_tokens : 0.0;
  for (auto* values : {&ttft, &tpot, &e2e, &transfer}) std::sort(values->begin(), values->end());
  s.ttft_s = sorted_percentiles(ttft);
  s.tpot_s = sorted_percentiles(tpot);
  s.e2e_s = sorted_percentiles(e2e);
  const double span_s = last_arrival - first_arrival;
  s.drain_s = std::max(0.0, outcome.end_s - last_arrival);
  if (s.requests > 1 && span_s > 0) s.offered_requests_per_s = (s.requests - 1) / span_s;
  s.kv_transfer_s = sorted_percentiles(transfer);
  const bool any_slo = scenario.slo.ttft_s || scenario.slo.tpot_s || scenario.slo.e2e_s;
  if (any_slo) s.slo_goodput = static_cast<double>(good) / s.requests;
  s.goodput_requests_per_s = good / s.duration_s;
  const double q = scenario.slo.percentile;
  s.slo_met = s.completed == s.requests && (!scenario.slo.ttft_s || sorted_percentile(ttft, q) <= *scenario.slo.ttft_s) &&
              (!scenario.slo.tpot_s || sorted_percentile(tpot, q) <= *scenario.slo.tpot_s) &&
              (!scenario.slo.e2e_s || sorted_percentile(e2e, q) <= *scenario.slo.e2e_s);
  double held = 0, utilization_sum = 0;
  long long spec_steps = 0, spec_tokens = 0;
  ServeSummary::PrefixCache prefix;
  for (const auto& r : outcome.replicas) {
    prefix.looked_up_tokens += r.prefix_looked_up_tokens;
    prefix.gpu_hit_tokens += r.prefix_gpu_hit_tokens;
    prefix.host_hit_tokens += r.prefix_host_hit_tokens;
    prefix.gpu_evictions += r.prefix_gpu_evictions;
    prefix.host_drops += r.prefix_host_drops;
    spec_steps += r.spec_decode_steps;
    spec_tokens += r.spec_accepted_tokens;
    s.preemptions += r.preemptions;
    held += r.request_seconds;
    const double utilization = r.kv_block_seconds / (static_cast<double>(r.kv_blocks) * s.duration_s);
    utilization_sum += utilization;
    s.kv_utilization_peak = std::max(s.kv_utilization_peak, static_cast<double>(r.peak_kv_blocks) / static_cast<double>(r.kv_blocks));
  }
  bool prefix_tree = false;
  for (const auto& pool : scenario.pools) prefix_tree = prefix_tree || (pool.engine.prefix_caching && pool.engine.prefix_cache_hit_rate == 0);
  if (prefix_tree && (scenario.workload.prefix_groups > 0 || prefix.looked_up_tokens > 0)) s.prefix_cache = prefix;
  if (scenario.speculative.enabled() && spec_steps > 0) s.speculative_tokens_per_step = static_cast<double>(spec_tokens) / spec_steps;
  s.kv_utilization_mean = utilization_sum / static_cast<double>(outcome.replicas.size());
  s.mean_concurrency = held / s.duration_s;
  if (scenario.cluster.usd_per_hour_per_node) {
    s.usd_per_hour = *scenario.cluster.usd_per_hour_per_node * s.nodes;
    s.usd_per_million_tokens = *s.usd_per_hour / 3600.0 / s.output_tokens_per_s * 1e6;
  }
  return s;
}

namespace {

nlohmann::json to_json(const Percentiles& p) {
  return {{"p50", p.p50}, {"p90", p.p90}, {"p99", p.p99}, {"mean", p.mean}, {"max", p.max}};
}

nlohmann::json speculative_json(const ServingPlan& plan, int index) {
  const SpeculativeSpec& spec = plan.scenario().speculative;
  if (!spec.enabled()) return nullptr;
  const ReplicaModel& model = plan.model(index);
  return {{"method", to_string(spec.method)},
          {"num_speculative_tokens", spec.k},
          {"acceptance_by_position", spec.accepted_by_position},
          {"expected_tokens_per_step", spec.expected_tokens_per_step},
          {"draft_model", spec.method == SpeculativeSpec::Method::draft ? nlohmann::json(spec.draft_model.name) : nlohmann::json(nullptr)},
          {"draft_weights_bytes_per_gpu", model.draft_weight_bytes_per_gpu()},
          {"draft_kv_bytes_per_token_per_gpu", model.draft_kv_bytes_per_token_per_gpu()}};
}

nlohmann::json pool_json(const ServingPlan& plan, int index) {
  const PoolSpec& pool = plan.scenario().pools[static_cast<std::size_t>(index)];
  const ReplicaMemory& m = plan.model(index).memory();
  const EngineOptions& e = pool.engine;
  return {{"role", to_string(pool.role)},
          {"replicas", pool.replicas},
          {"tensor_parallel_size", pool.tp},
          {"pipeline_parallel_size", pool.pp},
          {"enable_expert_parallel", pool.expert_parallel},
          {"data_parallel_attention", pool.dp_attention},
          {"num_redundant_experts", pool.redundant_experts},
          {"two_batch_overlap", pool.two_batch_overlap},
          {"expert_load_imbalance", pool.expert_load_imbalance > 0 ? nlohmann::json(pool.expert_load_imbalance) : nlohmann::json(nullptr)},
          {"gpus", pool.replicas * pool.gpus_per_replica()},
          {"engine", to_string(e.kind)},
          {"moe_backend", plan.scenario().model.is_moe() ? nlohmann::json(to_string(e.moe_backend)) : nlohmann::json(nullptr)},
          {"kv_cache_free_gpu_memory_fraction", optional_number(e.kv_free_memory_fraction > 0 ? std::optional<double>(e.kv_free_memory_fraction) : std::nullopt)},
          {"max_num_seqs", e.max_num_seqs},
          {"max_num_batched_tokens", e.max_num_batched_tokens},
          {"enable_chunked_prefill", e.chunked_prefill},
          {"scheduler_policy", e.guaranteed_no_evict ? "guaranteed_no_evict" : "max_utilization"},
          {"block_size", e.block_size},
          {"enable_prefix_caching", e.prefix_caching},
          {"prefix_cache_hit_rate", e.prefix_cache_hit_rate},
          {"iteration_overhead_s", e.iteration_overhead_s},
          {"host_time_per_sequence_s", e.host_per_sequence_s},
          {"response_time_per_token_s", e.response_per_token_s},
          {"overlap_scheduler", e.overlap_scheduler},
          {"stream_tokens", e.stream_tokens},
          {"cuda_graph_padding", e.cuda_graph_padding},
          {"cuda_graph_batch_sizes", e.cuda_graph_batch_sizes},
          {"speculative", speculative_json(plan, index)},
          {"memory_per_gpu",
           {{"weights_bytes", m.weight_bytes_per_gpu},
            {"activations_bytes", m.activation_bytes_per_gpu},
            {"runtime_bytes", m.reserve_bytes_per_gpu},
            {"kv_cache_bytes", m.kv_bytes_per_gpu},
            {"kv_bytes_per_token", m.kv_bytes_per_token_per_gpu},
            {"mamba_state_bytes_per_sequence", m.mamba_state_bytes_per_sequence_per_gpu},
            {"mamba_cache_bytes", m.mamba_cache_bytes_per_gpu}}},
          {"num_gpu_blocks_override", e.num_gpu_blocks_override > 0 ? nlohmann::json(e.num_gpu_blocks_override) : nlohmann::json(nullptr)},
          {"kv_offload",
           {{"kv_offloading_size_bytes", e.kv_offload_bytes},
            {"host_kv_bytes_per_gpu", m.host_kv_bytes_per_gpu},
            {"host_kv_blocks_per_replica", m.host_kv_blocks},
            {"host_kv_capacity_tokens_per_replica", m.host_kv_blocks * e.block_size},
            {"host_link_Bps", m.host_link_Bps},
            {"reload_s_per_token", m.reload_s_per_token},
            {"recompute_s_per_token", m.recompute_s_per_token},
            {"pays", plan.model(index).offload_pays()}}},
          {"kv_blocks_per_replica", m.kv_blocks},
          {"kv_capacity_tokens_per_replica", m.kv_capacity_tokens},
          {"state_blocks_per_sequence", m.state_blocks_per_sequence}};
}

}  // namespace

nlohmann::json to_json(const ServingPlan& plan, const ServeSummary& s, const ServeOutcome& outcome) {
  const auto& scenario = plan.scenario();
  nlohmann::json doc;
  doc["schema"] = "fmsim.serve/1";
  doc["scenario"] = {{"name", scenario.name}, {"file", scenario.file}};
  doc["model"] = scenario.model.name;
  doc["cluster"] = {{"instance_type", scenario.cluster.instance.name}, {"gpu", scenario.cluster.gpu.name}, {"nodes_used", s.nodes},
                    {"gpus", s.gpus}, {"gpus_per_node", scenario.cluster.gpus_per_node}, {"hbm_capacity_bytes", scenario.cluster.gpu.hbm_bytes}};
  doc["oom"] = false;  // a replica that does not fit is an error, or with --allow-oom a short document
  doc["precision"] = to_string(scenario.precision);
  doc["kv_cache_bytes_per_element"] = scenario.kv_bytes_per_element;
  doc["disaggregated"] = scenario.disaggregated();
  doc["router"] = to_string(scenario.router);
  nlohmann::json pools = nlohmann::json::array();
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    nlohmann::json pool = pool_json(plan, p);
    const ServeSummary::IterationTime& t = s.iteration_time[static_cast<std::size_t>(p)];
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [name, value] : t.parts_s) parts[name] = value;
    pool["iteration_time"] = {{"busy_s", t.busy_s}, {"parts_s", parts}, {"iterations", t.iterations}, {"fixed_s", t.fixed_s},
                              {"load_factor", t.load_factor()}};
    pools.push_back(std::move(pool));
  }
  doc["pools"] = pools;
  doc["requests"] = s.requests;
  doc["completed"] = s.completed;
  doc["duration_s"] = s.duration_s;
  doc["requests_per_s"] = s.requests_per_s;
  doc["offered_requests_per_s"] = optional_number(s.offered_requests_per_s);
  doc["drain_s"] = s.drain_s;
  doc["input_tokens_per_s"] = s.input_tokens_per_s;
  doc["output_tokens_per_s"] = s.output_tokens_per_s;
  doc["output_tokens_per_s_per_gpu"] = s.output_tokens_per_s_per_gpu;
  doc["ttft_s"] = to_json(s.ttft_s);
  doc["tpot_s"] = to_json(s.tpot_s);
  doc["e2e_latency_s"] = to_json(s.e2e_s);
  if (scenario.disaggregated()) {
    doc["kv_transfer_s"] = to_json(s.kv_transfer_s);
    doc["kv_transfer_bytes"] = outcome.network_bytes;
    doc["kv_transfer_flows"] = outcome.network_flows;
  }
  doc["mean_concurrency"] = s.mean_concurrency;
  doc["slo"] = {{"ttft_s", optional_number(scenario.slo.ttft_s)},
                {"tpot_s", optional_number(scenario.slo.tpot_s)},
                {"e2e_s", optional_number(scenario.slo.e2e_s)},
                {"percentile", scenario.slo.percentile}};
  doc["slo_goodput"] = optional_number(s.slo_goodput);
  doc["slo_goodput_requests_per_s"] = s.goodput_requests_per_s;
  doc["slo_met"] = s.slo_met;
  doc["steady_state"] = to_json(s.steady);
  doc["kv_cache_utilization"] = {{"mean", s.kv_utilization_mean}, {"peak", s.kv_utilization_peak}};
  doc["preemptions"] = s.preemptions;
  doc["prefix_cached_fraction"] = s.prefix_cached_fraction;
  doc["speculative_tokens_per_step"] = optional_number(s.speculative_tokens_per_step);
  if (s.prefix_cache) {
    const auto& p = *s.prefix_cache;
    doc["prefix_cache"] = {{"looked_up_tokens", p.looked_up_tokens},
                           {"gpu_hit_tokens", p.gpu_hit_tokens},
                           {"host_hit_tokens", p.host_hit_tokens},
                           {"hit_rate", p.hit_rate()},
                           {"gpu_evictions", p.gpu_evictions},
                           {"host_drops", p.host_drops}};
  } else {
    doc["prefix_cache"] = nullptr;
  }
  doc["usd_per_hour"] = optional_number(s.usd_per_hour);
  doc["usd_per_million_tokens"] = optional_number(s.usd_per_million_tokens);
  nlohmann::json replicas = nlohmann::json::array();
  for (const auto& r : outcome.replicas) {
    replicas.push_back({{"pool", to_string(scenario.pools[static_cast<std::size_t>(r.pool)].role)},
                        {"iterations", r.iterations},
                        {"prefill_tokens", r.prefill_tokens},
                        {"decode_tokens", r.decode_tokens},
                        {"busy_fraction", s.duration_s > 0 ? r.busy_s / s.duration_s : 0.0},
                        {"preemptions", r.preemptions}});
  }
  doc["replicas"] = replicas;
  doc["error_band"] = report::to_json(report::serving_error_band(scenario));  // the validation group's band
  doc["resolved_scenario"] = scenario.resolved;
  return doc;
}

std::string to_text(const ServingPlan& plan, const ServeSummary& s) {
  const auto& scenario = plan.scenario();
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "%s: %s %s on %d x %s (%d GPUs), router %s\n", scenario.name.c_str(), scenario.model.name.c_str(),
                to_string(scenario.precision).c_str(), s.nodes, scenario.cluster.instance.name.c_str(), s.gpus,
                to_string(scenario.router).c_str());
  out += line;
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(p)];
    const ReplicaMemory& m = plan.model(p).memory();
    std::snprintf(line, sizeof line, "  %-8s %d x (TP%d PP%d): weights %s, KV cache %s per GPU = %lld tokens per replica\n",
                  to_string(pool.role).c_str(), pool.replicas, pool.tp, pool.pp, units::format_bytes(m.weight_bytes_per_gpu).c_str(),
                  units::format_bytes(m.kv_bytes_per_gpu).c_str(), m.kv_capacity_tokens);
    out += line;
    if (scenario.model.is_moe()) {  // which MoE kernels price the experts (moe_backend.hpp)
      const MoeBackendCosts c = moe_backend_costs(pool.engine.moe_backend, scenario.precision == WeightPrecision::fp4);
      if (c.weight_stream_fraction > 0) {
        std::snprintf(line, sizeof line, "           MoE kernels %s: %s fixed per MoE block, experts' weights at %.2f of HBM bandwidth, tiles %.2fx dense\n",
                      to_string(pool.engine.moe_backend).c_str(), units::format_time(c.fixed_s).c_str(), c.weight_stream_fraction, c.gemm_slowdown);
      } else {
        std::snprintf(line, sizeof line, "           MoE kernels %s: grouped GEMMs at the dense GEMMs' efficiency\n", to_string(pool.engine.moe_backend).c_str());
      }
      out += line;
    }
    if (m.mamba_cache_bytes_per_gpu > 0) {  // TensorRT-LLM: the Mamba states of max_num_seqs sequences, preallocated
      std::snprintf(line, sizeof line, "           Mamba state %s per sequence and GPU, %s preallocated for max_num_seqs = %d\n",
                    units::format_bytes(m.mamba_state_bytes_per_sequence_per_gpu).c_str(), units::format_bytes(m.mamba_cache_bytes_per_gpu).c_str(),
                    pool.engine.max_num_seqs);
      out += line;
    }
    if (m.state_blocks_per_sequence > 0) {  // a hybrid model's Mamba state, from the same memory
      std::snprintf(line, sizeof line, "           Mamba state %s per sequence and GPU (%lld blocks = %lld tokens of KV): at most %lld sequences per replica\n",
                    units::format_bytes(m.mamba_state_bytes_per_sequence_per_gpu).c_str(), m.state_blocks_per_sequence,
                    m.state_blocks_per_sequence * pool.engine.block_size, m.kv_blocks / m.state_blocks_per_sequence);
      out += line;
    }
  }
  std::snprintf(line, sizeof line, "\n%d/%d requests in %s: %.0f output tok/s (%.0f per GPU), %.0f input tok/s\n", s.completed,
                s.requests, units::format_time(s.duration_s).c_str(), s.output_tokens_per_s, s.output_tokens_per_s_per_gpu,
                s.input_tokens_per_s);
  out += line;
  const report::ErrorBand band = report::serving_error_band(scenario);
  out += "error band" + (band.band ? " (" + band.band->metric + ")" : std::string()) + ": " + report::describe(band) + "\n";
  if (s.offered_requests_per_s) {
    std::snprintf(line, sizeof line, "offered %.2f req/s; achieved %.2f req/s from first arrival to last completion "
                  "(includes the %s drain after the last arrival)\n", *s.offered_requests_per_s, s.requests_per_s,
                  units::format_time(s.drain_s).c_str());
  } else {
    std::snprintf(line, sizeof line, "offline (every request at once); achieved %.2f req/s\n", s.requests_per_s);
  }
  out += line;
  if (s.steady) {
    const SteadyState& w = *s.steady;
    std::snprintf(line, sizeof line, "steady-state window (arrivals %.1f-%.1f s, %d requests; warm-up and last %.0f%% left out): "
                  "offered %.2f req/s, achieved %.2f req/s: %s\n", w.window_start_s, w.window_end_s, w.measured_requests,
                  100 * kDrainFraction, w.offered_requests_per_s, w.achieved_requests_per_s,
                  w.steady ? "steady" : w.reason.c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "%-14s %10s %10s %10s %10s\n", "", "p50", "p90", "p99", "mean");
  out += line;
  auto row = [&](const char* name, const Percentiles& p) {
    std::snprintf(line, sizeof line, "%-14s %10s %10s %10s %10s\n", name, units::format_time(p.p50).c_str(),
                  units::format_time(p.p90).c_str(), units::format_time(p.p99).c_str(), units::format_time(p.mean).c_str());
    out += line;
  };
  row("TTFT", s.ttft_s);
  row("TPOT", s.tpot_s);
  row("end-to-end", s.e2e_s);
  if (scenario.disaggregated()) row("KV transfer", s.kv_transfer_s);
  if (s.prefix_cache) {
    const auto& p = *s.prefix_cache;
    std::snprintf(line, sizeof line, "prefix tree: %.1f%% of shared-prefix tokens found (%.1f%% in HBM, %.1f%% reloaded from host "
                  "memory); %lld blocks evicted from HBM, %lld dropped from the host tier\n", 100 * p.hit_rate(),
                  p.looked_up_tokens > 0 ? 100.0 * p.gpu_hit_tokens / p.looked_up_tokens : 0.0,
                  p.looked_up_tokens > 0 ? 100.0 * p.host_hit_tokens / p.looked_up_tokens : 0.0, p.gpu_evictions, p.host_drops);
    out += line;
  }
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    const ReplicaMemory& m = plan.model(p).memory();
    if (m.host_kv_blocks <= 0) continue;
    std::snprintf(line, sizeof line, "KV offload (%s): %s host memory per GPU = %lld tokens per replica over %s; reload %s/token vs "
                  "recompute %s/token: %s\n", to_string(scenario.pools[static_cast<std::size_t>(p)].role).c_str(),
                  units::format_bytes(m.host_kv_bytes_per_gpu).c_str(), m.host_kv_blocks * scenario.pools[static_cast<std::size_t>(p)].engine.block_size,
                  units::format_bandwidth(m.host_link_Bps).c_str(), units::format_time(m.reload_s_per_token).c_str(),
                  units::format_time(m.recompute_s_per_token).c_str(), plan.model(p).offload_pays() ? "reloading pays" : "recomputing is faster (host tier unused)");
    out += line;
  }
  if (scenario.speculative.enabled()) {
    const SpeculativeSpec& spec = scenario.speculative;
    std::snprintf(line, sizeof line, "speculative decoding (%s, k = %d): %.3f tokens per decode step expected, %.3f measured\n",
                  to_string(spec.method).c_str(), spec.k, spec.expected_tokens_per_step, s.speculative_tokens_per_step.value_or(0.0));
    out += line;
  }
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    const ServeSummary::IterationTime& t = s.iteration_time[static_cast<std::size_t>(p)];
    if (t.busy_s <= 0) continue;
    std::string parts;
    for (const auto& [name, value] : t.parts_s) {
      if (value < 0.0005 * t.busy_s) continue;
      std::snprintf(line, sizeof line, "%s%s %.1f%%", parts.empty() ? "" : ", ", name.c_str(), 100 * value / t.busy_s);
      parts += line;
    }
    std::snprintf(line, sizeof line, "iteration time (%s): %s\n", to_string(scenario.pools[static_cast<std::size_t>(p)].role).c_str(), parts.c_str());
    out += line;
    // Latency under a steady load is the fixed cost over (1 - load factor): near 1 it is sensitive.
    const double rho = t.load_factor();
    if (s.offered_requests_per_s && t.iterations > 0 && rho > 0) {
      std::snprintf(line, sizeof line, "  load factor %.2f: %.1f%% of the mean %s iteration grows with the batch (fixed %s); a 1%% error in the "
                    "per-token cost moves the iteration time, hence TPOT, by about %.1f%%%s\n", rho, 100 * rho,
                    units::format_time(t.busy_s / static_cast<double>(t.iterations)).c_str(), units::format_time(t.fixed_s).c_str(),
                    rho < 1 ? rho / (1 - rho) : INFINITY, rho > 0.85 ? " (near saturation: latency predictions are fragile here)" : "");
      out += line;
    }
  }
  std::snprintf(line, sizeof line, "\nKV cache use %.0f%% mean, %.0f%% peak; %lld preemptions; %.1f requests in flight on average\n",
                100 * s.kv_utilization_mean, 100 * s.kv_utilization_peak, s.preemptions, s.mean_concurrency);
  out += line;
  if (s.slo_goodput) {
    std::snprintf(line, sizeof line, "SLO goodput %.1f%% of requests (%.2f req/s); p%g within the SLOs: %s\n", 100 * *s.slo_goodput,
                  s.goodput_requests_per_s, scenario.slo.percentile, s.slo_met ? "yes" : "no");
    out += line;
    if (s.steady) {
      std::snprintf(line, sizeof line, "steady state: p%g of the window's requests within the SLOs: %s; sustained: %s\n",
                    scenario.slo.percentile, s.steady->slo_met ? "yes" : "no", s.steady->sustained() ? "yes" : "no");
      out += line;
    }
  }
  if (s.usd_per_million_tokens) {
    std::snprintf(line, sizeof line, "cost %s per hour, %s per million output tokens\n", units::format_usd(*s.usd_per_hour).c_str(),
                  units::format_usd(*s.usd_per_million_tokens).c_str());
    out += line;
  }
  return out;
}

std::string timeline_json(const ServingPlan& plan, const ServeOutcome& outcome) {
  nlohmann::json events = nlohmann::json::array();
  const auto& scenario = plan.scenario();
  for (std::size_t r = 0; r < plan.replicas().size(); ++r) {
    const auto& role = to_string(scenario.pools[static_cast<std::size_t>(plan.replicas()[r].pool)].role);
    events.push_back({{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", "replica " + std::to_string(r) + " (" + role + ")"}}}});
  }
  for (const auto& it : outcome.iterations) {
    const char* name = it.prefill_tokens > 0 && it.decode_tokens > 0 ? "mixed" : it.prefill_tokens > 0 ? "prefill" : "decode";
    events.push_back({{"name", name},
                      {"ph", "X"},
                      {"pid", it.replica},
                      {"tid", 0},
                      {"ts", it.start_s * 1e6},
                      {"dur", (it.end_s - it.start_s) * 1e6},
                      {"args", {{"prefill_tokens", it.prefill_tokens}, {"decode_tokens", it.decode_tokens},
                                {"sequences", it.sequences}, {"kv_used_fraction", it.kv_used_fraction}}}});
  }
  for (const auto& t : outcome.transfers) {
    events.push_back({{"name", "kv transfer"},
                      {"ph", "X"},
                      {"pid", t.decode_replica},
                      {"tid", 1},
                      {"ts", t.start_s * 1e6},
                      {"dur", (t.end_s - t.start_s) * 1e6},
                      {"args", {{"request", t.request}, {"from_replica", t.prefill_replica}, {"bytes", t.bytes}}}});
  }
  return nlohmann::json{{"traceEvents", events}, {"displayTimeUnit", "ms"}}.dump() + "\n";
}

}  // namespace fmsim::inference
