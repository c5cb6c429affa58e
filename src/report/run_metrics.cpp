// Time series of one simulated training step, per simulated GPU (time_series.hpp). Each kernel and
// transfer of the replayed trace contributes to the sampling intervals it overlaps: the compute stream's
// busy time (GPU utilisation), GEMM and attention kernels (tensor-core activity), NVLink bytes of
// collectives inside one NVLink domain at nccl-tests' bus factor (as gpu_usage.cpp counts them), and the
// bytes crossing the network, whose shape over time comes from the cross-domain collectives and sends
// and whose total is the replay's rail-link load (the document's gpus[].network_tx_bytes).
#include <cmath>
#include <map>

#include "fmsim/collectives/collective.hpp"
#include "fmsim/report/time_series.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "metrics_grid.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
/// Samples per series: a 1,024-rank full-fidelity step stays near a million lines.
constexpr int kMaxPointsPerRun = 100000;

struct RankSeries {
  std::vector<double> busy_s, tensor_s, nvlink_bytes, network_shape;
};

bool in_one_domain(const workload::Trace& trace, const std::vector<int>& ranks, int gpus_per_domain) {
  if (ranks.empty()) return false;
  const int domain = trace.rank_gpu[ranks.front()] / gpus_per_domain;
  for (int r : ranks) {
    if (trace.rank_gpu[r] / gpus_per_domain != domain) return false;
  }
  return true;
}

void declare(OpenMetricsWriter& w) {
  w.family("DCGM_FI_DEV_GPU_UTIL", MetricType::gauge, "GPU utilization (in %): share of the last interval the compute stream was busy.");
  w.family("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", MetricType::gauge, "Ratio of the last interval the tensor cores ran GEMM or attention kernels.");
  w.family("DCGM_FI_DEV_FB_USED", MetricType::gauge, "Framebuffer memory used (in MiB).");
  w.family("DCGM_FI_DEV_FB_FREE", MetricType::gauge, "Framebuffer memory free (in MiB).");
  w.family("DCGM_FI_PROF_NVLINK_TX_BYTES", MetricType::gauge, "NVLink bytes sent per second over the last interval.");
  w.family("DCGM_FI_DEV_XID_ERRORS", MetricType::gauge, "Value of the last XID error (0: none; failures are not drawn within one step).");
  w.family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", MetricType::gauge, "Volatile double-bit ECC errors (0 within one step).");
  w.family("fmsim_nvlink_tx_bytes", MetricType::counter, "NVLink bytes sent (collectives inside one NVLink domain at nccl-tests' bus factor).", "bytes");
  w.family("efa_tx_bytes", MetricType::counter, "Bytes sent over the GPU's EFA rail (the replay's rail-link load).", "bytes");
  w.family("efa_rx_bytes", MetricType::counter, "Bytes received over the GPU's EFA rail (symmetric collectives: equal to those sent).", "bytes");
  w.family("efa_rdma_write_bytes", MetricType::counter, "Bytes sent as RDMA writes (NCCL's network plugin on EFA writes every payload).", "bytes");
  w.family("fmsim_training_step_time_seconds", MetricType::gauge, "Simulated training step time.", "seconds");
  w.family("fmsim_training_tokens_per_second", MetricType::gauge, "Training throughput of the whole job, tokens per second.");
  w.family("fmsim_training_mfu_ratio", MetricType::gauge, "Model FLOP utilization against dense BF16 peak.", "ratio");
  w.family("fmsim_training_tokens", MetricType::counter, "Tokens trained (a step's tokens count when the step ends).");
}

}  // namespace

std::string run_metrics(const TrainingRun& run, const json& doc, const MetricsOptions& options) {
  const auto& trace = *run.trace;
  const auto& spec = run.scenario->cluster;
  const auto& step = run.step;
  const int gpus_per_domain = spec.gpus_per_node * spec.nvlink_domain_nodes;
  const int ranks = std::max<int>(1, static_cast<int>(trace.ranks.size()));
  const detail::MetricsGrid grid(step.step_time_s, std::clamp(kMaxPointsPerRun / (12 * ranks), 10, 400));

  std::map<int, const workload::Communicator*> comms;
  for (const auto& c : trace.comms) comms[c.id] = &c;
  std::map<int, RankSeries> per_rank;
  for (int rank : trace.ranks) per_rank[rank] = {grid.zeros(), grid.zeros(), grid.zeros(), grid.zeros()};
  for (const auto& node : trace.nodes) {
    const double s = step.node_start_s[node.id], e = step.node_end_s[node.id];
    RankSeries& r = per_rank[node.rank];
    if (r.busy_s.empty()) continue;
    if (node.type == workload::NodeType::comp && node.stream == "compute") {
      grid.add_time(r.busy_s, s, e);
      const bool tensor = node.kernel == workload::Kernel::gemm || node.kernel == workload::Kernel::attention_fwd ||
                          node.kernel == workload::Kernel::attention_bwd;
      if (tensor) grid.add_time(r.tensor_s, s, e);
    } else if (node.type == workload::NodeType::coll) {
      const auto it = comms.find(node.comm);
      if (it == comms.end()) continue;
      const double bus = node.comm_bytes * collectives::busbw_factor(node.op, static_cast<int>(it->second->ranks.size()));
      grid.add_amount(in_one_domain(trace, it->second->ranks, gpus_per_domain) ? r.nvlink_bytes : r.network_shape, s, e, bus);
    } else if (node.type == workload::NodeType::send) {
      grid.add_amount(in_one_domain(trace, {node.rank, node.peer}, gpus_per_domain) ? r.nvlink_bytes : r.network_shape, s, e,
                      node.comm_bytes);
    }
  }

  OpenMetricsWriter w(options);
  declare(w);
  const std::string scenario = doc.value("name", "");
  const std::string model_name = doc.at("derived").value("gpu", "");
  const double capacity = doc.value("hbm_capacity_bytes", 0.0);
  for (const auto& g : doc.at("gpus")) {
    const int rank = g.at("rank").get<int>();
    RankSeries& r = per_rank[rank];
    if (r.busy_s.empty()) continue;
    const MetricLabels labels = {{"gpu", std::to_string(g.at("local_gpu").get<int>())},
                                 {"Hostname", "node" + std::to_string(g.at("node").get<int>())},
                                 {"modelName", model_name},
                                 {"rank", std::to_string(rank)},
                                 {"pipeline_rank", std::to_string(g.at("pipeline_rank").get<int>())},
                                 {"scenario", scenario}};
    MetricLabels efa = labels;
    efa.insert(efa.begin() + 1, {"device", "efa" + std::to_string(g.at("local_gpu").get<int>())});
    // The network total is the replay's (link loads); its time profile comes from the transfers.
    const double network_total = g.at("network_tx_bytes").get<double>();
    double shape_total = 0;
    for (double v : r.network_shape) shape_total += v;
    std::vector<double> network = grid.zeros();
    for (std::size_t i = 0; i < network.size(); ++i) {
      network[i] = shape_total > 0 ? network_total * r.network_shape[i] / shape_total
                                   : network_total * grid.width(i) / std::max(step.step_time_s, 1e-12);
    }
    // The NVLink total is the document's (gpus[].nvlink_tx_bytes); the transfers above give the same sum.
    const std::vector<double> nvlink_total = grid.cumulative(r.nvlink_bytes), network_cum = grid.cumulative(network);
    const double used = g.at("hbm_used_bytes").get<double>();
    for (std::size_t k = 0; k < grid.t.size(); ++k) {
      const double t = grid.t[k];
      const std::size_t i = k == 0 ? 0 : k - 1;  // a gauge at t[k] reports interval k-1 (t[0]: the first)
      const double width = grid.width(i);
      w.sample("DCGM_FI_DEV_GPU_UTIL", labels, t, width > 0 ? std::min(100.0, 100 * r.busy_s[i] / width) : 0.0);
      w.sample("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", labels, t, width > 0 ? std::min(1.0, r.tensor_s[i] / width) : 0.0);
      w.sample("DCGM_FI_DEV_FB_USED", labels, t, used / kMiB);
      if (capacity > 0) w.sample("DCGM_FI_DEV_FB_FREE", labels, t, std::max(0.0, capacity - used) / kMiB);
      w.sample("DCGM_FI_PROF_NVLINK_TX_BYTES", labels, t, width > 0 ? r.nvlink_bytes[i] / width : 0.0);
      w.sample("DCGM_FI_DEV_XID_ERRORS", labels, t, 0);
      w.sample("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", labels, t, 0);
      w.sample("fmsim_nvlink_tx_bytes", labels, t, nvlink_total[k]);
      w.sample("efa_tx_bytes", efa, t, network_cum[k]);
      w.sample("efa_rx_bytes", efa, t, network_cum[k]);
      w.sample("efa_rdma_write_bytes", efa, t, network_cum[k]);
    }
  }
  const MetricLabels job = {{"scenario", scenario}};
  const double tokens = doc.value("tokens_per_step", 0.0);
  for (std::size_t k = 0; k < grid.t.size(); ++k) {
    const double t = grid.t[k];
    w.sample("fmsim_training_step_time_seconds", job, t, step.step_time_s);
    w.sample("fmsim_training_tokens_per_second", job, t, doc.value("tokens_per_s", 0.0));
    w.sample("fmsim_training_mfu_ratio", job, t, doc.value("mfu", 0.0));
    w.sample("fmsim_training_tokens", job, t, k + 1 == grid.t.size() ? tokens : 0.0);
  }
  return w.text();
}

}  // namespace fmsim::report
