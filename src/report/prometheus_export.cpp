// Prometheus gauges from result documents. Names and units follow the Prometheus conventions
// (base units, _seconds, _bytes, _ratio) and dcgm-exporter's default counters
// (https://github.com/NVIDIA/dcgm-exporter, etc/default-counters.csv): GPU_UTIL in %, FB_* in MiB,
// NVLINK_TX_BYTES a rate in bytes/s (here the step's average).
#include "fmsim/report/prometheus_export.hpp"

#include <cstdio>
#include <map>
#include <sstream>
#include <vector>

#include "fmsim/report/openmetrics.hpp"
#include "result_reader.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

using Labels = std::vector<std::pair<std::string, std::string>>;

/// Families in first-use order, each with its HELP, TYPE and samples.
class Exposition {
 public:
  explicit Exposition(Labels common) : common_(std::move(common)) {}
  void add(const std::string& name, const std::string& help, double value, const Labels& labels = {}) {
    auto it = index_.find(name);
    if (it == index_.end()) {
      it = index_.emplace(name, families_.size()).first;
      families_.push_back({name, help, {}});
    }
    std::ostringstream line;
    line << name << "{";
    bool first = true;
    for (const Labels* set : {&labels, static_cast<const Labels*>(&common_)}) {
      for (const auto& [k, v] : *set) {
        line << (first ? "" : ",") << k << "=\"" << escape_label_value(v) << "\"";
        first = false;
      }
    }
    char number[40];
    std::snprintf(number, sizeof number, "%.10g", value);
    line << "} " << number;
    families_[it->second].samples.push_back(line.str());
  }
  std::string text() const {
    std::ostringstream out;
    for (const auto& f : families_) {
      out << "# HELP " << f.name << " " << f.help << "\n# TYPE " << f.name << " gauge\n";
      for (const auto& s : f.samples) out << s << "\n";
    }
    return out.str();
  }

 private:
  struct Family {
    std::string name, help;
    std::vector<std::string> samples;
  };
  Labels common_;
  std::vector<Family> families_;
  std::map<std::string, std::size_t> index_;
};

constexpr double kMiB = 1024.0 * 1024.0;

/// p50, p90, p99 and max of each distribution KEY (an object of the document) as NAME{quantile}.
void quantile_series(Exposition& e, const detail::ResultReader& r, const std::string& help,
                     const std::vector<std::pair<std::string, std::string>>& key_and_name) {
  const std::vector<std::pair<std::string, std::string>> quantiles = {{"p50", "0.5"}, {"p90", "0.9"}, {"p99", "0.99"}, {"max", "1"}};
  for (const auto& [key, name] : key_and_name) {
    for (const auto& [p, q] : quantiles) e.add(name, help, r.number("/" + key + "/" + p), {{"quantile", q}});
  }
}
constexpr int kMaxGpus = 1 << 20;  // the largest cluster fmsim builds (topology/cluster_spec.cpp)

void gpu_series(Exposition& e, const Labels& labels, double util_fraction, double used_bytes, double capacity_bytes) {
  e.add("DCGM_FI_DEV_GPU_UTIL", "GPU utilization (in %): share of the step the compute stream was busy.", 100 * util_fraction, labels);
  e.add("DCGM_FI_DEV_FB_USED", "Framebuffer memory used (in MiB).", used_bytes / kMiB, labels);
  if (capacity_bytes > 0) e.add("DCGM_FI_DEV_FB_FREE", "Framebuffer memory free (in MiB).", (capacity_bytes - used_bytes) / kMiB, labels);
}

void run_series(Exposition& e, const detail::ResultReader& r) {
  e.add("fmsim_step_time_seconds", "Simulated training step time.", r.number("/step_time_s"));
  e.add("fmsim_tokens_per_second", "Training throughput, tokens per second.", r.number("/tokens_per_s"));
  e.add("fmsim_tokens_per_second_per_gpu", "Training throughput per GPU.", r.number("/tokens_per_s_per_gpu"));
  e.add("fmsim_model_flops_per_second_per_gpu", "Model FLOP/s per GPU (Megatron accounting).", 1e12 * r.number("/model_tflops_per_gpu"));
  e.add("fmsim_mfu_ratio", "Model FLOP utilization against dense BF16 peak.", r.number("/mfu"));
  for (const auto& [part, seconds] : r.at("/breakdown_s").items()) {
    e.add("fmsim_step_breakdown_seconds", "Exposed step time by part.", seconds.get<double>(), {{"part", part}});
  }
  e.add("fmsim_hbm_peak_bytes", "Peak memory per GPU.", r.number("/hbm_peak_bytes"));
  e.add("fmsim_oom", "1 when the configuration does not fit in HBM.", r.at("/oom").get<bool>() ? 1 : 0);
  if (r.has("/usd_per_step")) e.add("fmsim_usd_per_step", "Cost of one step at the catalog price.", r.number("/usd_per_step"));
  const double step = r.number("/step_time_s");
  const double capacity = r.number("/hbm_capacity_bytes");
  if (!r.has("/gpus")) return;
  int index = 0;
  for (const auto& g : r.array("/gpus")) {
    const std::string where = "/gpus/" + std::to_string(index++);
    const Labels labels = {{"gpu", std::to_string(r.integer_in(g, "local_gpu", where))},
                           {"Hostname", "node" + std::to_string(r.integer_in(g, "node", where))},
                           {"modelName", r.text("/derived/gpu")},
                           {"rank", std::to_string(r.integer_in(g, "rank", where))},
                           {"pipeline_rank", std::to_string(r.integer_in(g, "pipeline_rank", where))}};
    gpu_series(e, labels, g.at("compute_busy_fraction").get<double>(), g.at("hbm_used_bytes").get<double>(), capacity);
    e.add("DCGM_FI_PROF_NVLINK_TX_BYTES", "NVLink bytes sent per second (step average).", g.at("nvlink_tx_bytes").get<double>() / step, labels);
    e.add("fmsim_network_tx_bytes_per_second", "Bytes sent over the GPU's EFA rail per second (step average).",
          g.at("network_tx_bytes").get<double>() / step, labels);
  }
}

void serve_series(Exposition& e, const detail::ResultReader& r) {
  e.add("fmsim_requests_per_second", "Completed requests per second.", r.number("/requests_per_s"));
  e.add("fmsim_output_tokens_per_second", "Generated tokens per second.", r.number("/output_tokens_per_s"));
  e.add("fmsim_slo_goodput_ratio", "Share of requests meeting every SLO.", r.number("/slo_goodput"));
  e.add("fmsim_kv_cache_usage_ratio", "Peak KV-cache occupancy.", r.number("/kv_cache_utilization/peak"));
  quantile_series(e, r, "Request latency quantile.", {{"ttft_s", "fmsim_time_to_first_token_seconds"},
                                                      {"tpot_s", "fmsim_time_per_output_token_seconds"},
                                                      {"e2e_latency_s", "fmsim_e2e_request_latency_seconds"}});
  // GPUs are numbered in replica order, pool after pool, as the serving plan places them.
  // Counts from the file bound the loops below: a GPU count of 0 would divide by zero, 2^31 would not end.
  const int gpus_per_node = r.integer_or("/cluster/gpus_per_node", 8, 1, kMaxGpus);
  const int cluster_gpus = r.integer_or("/cluster/gpus", kMaxGpus, 1, kMaxGpus);
  const double capacity = r.number_or("/cluster/hbm_capacity_bytes", 0);
  std::map<std::string, std::pair<int, double>> pool_shape;  // role -> (GPUs per replica, bytes per GPU)
  int pool_index = 0;
  for (const auto& pool : r.array("/pools")) {
    const std::string where = "/pools/" + std::to_string(pool_index++);
    double used = 0;
    for (const auto& [k, v] : pool.at("memory_per_gpu").items()) {
      if (k != "kv_bytes_per_token" && v.is_number()) used += v.get<double>();
    }
    const int gpus = r.integer_in_or(pool, "gpus", where, 1, 1, kMaxGpus), replicas = r.integer_in_or(pool, "replicas", where, 1, 1, kMaxGpus);
    pool_shape[pool.value("role", "")] = {std::max(1, gpus / replicas), used};
  }
  int ordinal = 0, replica_index = 0;
  for (const auto& replica : r.array("/replicas")) {
    const auto [gpus, used] = pool_shape[replica.value("pool", "")];
    if (ordinal + gpus > cluster_gpus) r.fail("/replicas", "place more GPUs than /cluster/gpus (" + std::to_string(cluster_gpus) + ")");
    for (int g = 0; g < gpus; ++g, ++ordinal) {
      const Labels labels = {{"gpu", std::to_string(ordinal % gpus_per_node)}, {"Hostname", "node" + std::to_string(ordinal / gpus_per_node)},
                             {"modelName", r.text("/cluster/gpu")}, {"replica", std::to_string(replica_index)},
                             {"pool", replica.value("pool", "")}};
      gpu_series(e, labels, replica.value("busy_fraction", 0.0), used, capacity);
    }
    ++replica_index;
  }
}

void checkpoint_series(Exposition& e, const detail::ResultReader& r) {
  e.add("fmsim_checkpoint_save_seconds", "Time to save one checkpoint.", r.number("/save_time_s"));
  e.add("fmsim_checkpoint_restore_seconds", "Time to restore from a checkpoint.", r.number("/restore_time_s"));
  e.add("fmsim_checkpoint_step_stall_seconds", "Training stall per checkpoint.", r.number("/step_stall_s"));
  e.add("fmsim_checkpoint_bytes", "Size of one checkpoint.", r.number("/checkpoint_bytes"));
  e.add("fmsim_goodput_ratio", "Share of wall time spent on useful training.", r.number("/goodput"));
  e.add("fmsim_time_to_train_seconds", "Wall time of the whole run with failures and checkpoints.", r.number("/time_to_train_s"));
}

/// One RL iteration (fmsim.rl/1): its time, throughput, each phase and each role's utilisation.
void rl_series(Exposition& e, const detail::ResultReader& r) {
  e.add("fmsim_rl_iteration_seconds", "Wall time of one RL iteration.", r.number("/iteration_s"));
  e.add("fmsim_rl_samples_per_second", "Responses generated, scored and trained on per second.", r.number("/samples_per_s"));
  e.add("fmsim_rl_response_tokens_per_second", "Response tokens per second over the iteration.", r.number("/response_tokens_per_s"));
  for (const char* phase : {"generation", "generation_tail", "forward", "update", "weight_sync", "handover"}) {
    e.add("fmsim_rl_phase_seconds", "Time of each phase of one RL iteration.", r.number(std::string("/breakdown_s/") + phase), {{"phase", phase}});
  }
  for (const char* role : {"rollout", "trainer"}) {
    e.add("fmsim_rl_role_utilization_ratio", "Share of the iteration each role's GPUs work.",
          r.number(std::string("/roles/") + role + "/utilization"), {{"role", role}});
    e.add("fmsim_rl_role_gpus", "GPUs of each role.", r.number(std::string("/roles/") + role + "/gpus"), {{"role", role}});
  }
  e.add("fmsim_rl_weight_sync_bytes", "Bytes of the policy copy moved into the rollout engine per iteration.", r.number("/weight_sync_bytes"));
}

/// A shared-cluster run (fmsim.cluster/1): its totals and distributions.
void cluster_series(Exposition& e, const detail::ResultReader& r) {
  e.add("fmsim_cluster_makespan_seconds", "First submission to last completion.", r.number("/makespan_s"));
  e.add("fmsim_cluster_utilization_ratio", "Share of the cluster's GPU-hours held by jobs.", r.number("/utilization"));
  e.add("fmsim_cluster_idle_while_waiting_ratio", "Share of capacity idle while jobs waited.", r.number("/idle_while_waiting"));
  e.add("fmsim_cluster_lost_to_failures_ratio", "Share of capacity lost to failures.", r.number("/lost_to_failures"));
  e.add("fmsim_cluster_jobs_completed", "Jobs completed.", r.number("/completed"));
  e.add("fmsim_cluster_node_failures", "Node failures over the run.", r.number("/failures/node_failures"));
  quantile_series(e, r, "Distribution over the trace's jobs.", {{"wait_s", "fmsim_cluster_queueing_delay_seconds"},
                                                                 {"completion_s", "fmsim_cluster_job_completion_seconds"}});
}

}  // namespace

std::string prometheus_text(const json& result, const std::string& file) {
  const std::string schema = detail::result_schema(result, file);
  const detail::ResultReader r(result, file);
  const std::string name = result.value("name", result.contains("scenario") && result["scenario"].is_object()
                                                    ? result["scenario"].value("name", "")
                                                    : std::string());
  Exposition e({{"scenario", name}, {"simulated", "true"}});
  if (schema == "fmsim.run/1") run_series(e, r);
  else if (schema == "fmsim.serve/1") serve_series(e, r);
  else if (schema == "fmsim.rl/1") rl_series(e, r);
  else if (schema == "fmsim.cluster/1") cluster_series(e, r);
  else checkpoint_series(e, r);
  return e.text();
}

}  // namespace fmsim::report
