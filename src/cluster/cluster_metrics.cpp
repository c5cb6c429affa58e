// Time series of a shared-cluster run (cluster_report.hpp cluster_metrics), sampled evenly over the run
// from the first submission to the last completion: nodes busy (held by jobs), down (in repair or in a failed group) and
// free; the cluster's GPU utilisation over each interval (busy node-seconds over capacity, the
// document's "utilization" when averaged over the run); jobs running and waiting per queue; node
// failures by their drawn cause's category (failure_causes.hpp: Llama 3's root causes), and for a
// GPU-attributed cause the XID it raises on the failed GPU while the node is in repair and, for memory
// errors, that GPU's double-bit ECC count.
#include <algorithm>
#include <map>

#include "fmsim/cluster/cluster_report.hpp"
#include "fmsim/cluster/failure_causes.hpp"
#include "../report/metrics_grid.hpp"

namespace fmsim::cluster {

using report::MetricLabels;
using report::MetricType;

namespace {

/// Number of [start, end) spans covering t.
int covering(const std::vector<std::pair<double, double>>& spans, double t) {
  int n = 0;
  for (const auto& [s, e] : spans) n += (s <= t && t < e) ? 1 : 0;
  return n;
}

}  // namespace

std::string cluster_metrics(const ClusterRun& run, const report::MetricsOptions& options) {
  const auto& r = run.result;
  const double origin = r.busy_nodes.empty() ? 0.0 : r.busy_nodes.front().first;
  const report::detail::MetricsGrid grid(r.makespan_s, 1500);
  report::OpenMetricsWriter w(options);
  w.family("fmsim_cluster_nodes", MetricType::gauge, "Nodes by state: busy (held by a job), down (in repair or in a failed placement group), free.");
  w.family("fmsim_cluster_gpu_utilization_ratio", MetricType::gauge, "Share of the cluster's GPUs held by jobs over the last interval.", "ratio");
  w.family("fmsim_cluster_jobs", MetricType::gauge, "Jobs running and waiting (submitted, not running, not finished), per queue.");
  w.family("fmsim_cluster_jobs_completed", MetricType::counter, "Jobs finished.");
  w.family("fmsim_cluster_node_failures", MetricType::counter, "Node failures drawn by the failure model.");
  const bool detecting = run.options.failures.straggler_detect_s > 0;
  if (detecting) w.family("fmsim_cluster_straggler_evictions", MetricType::counter, "Straggler nodes detected in a job's placement and evicted to repair.");
  w.family("DCGM_FI_DEV_XID_ERRORS", MetricType::gauge, "XID of the failure that took the GPU's node down, while it is in repair; else 0.");
  w.family("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", MetricType::gauge, "Double-bit ECC errors of the GPU (HBM and SRAM failures), cumulative.");

  // Busy nodes: a step function; time-weighted per interval for the utilisation.
  std::vector<double> busy_node_s = grid.zeros();
  for (std::size_t i = 0; i < r.busy_nodes.size(); ++i) {
    const double s = r.busy_nodes[i].first - origin;
    const double e = i + 1 < r.busy_nodes.size() ? r.busy_nodes[i + 1].first - origin : r.makespan_s;
    grid.add_amount(busy_node_s, s, e, r.busy_nodes[i].second * std::max(0.0, e - s));
  }
  std::size_t busy_next = 0;
  int busy_now = 0;
  auto busy_at = [&](double t) {  // called with increasing t
    for (; busy_next < r.busy_nodes.size() && r.busy_nodes[busy_next].first - origin <= t; ++busy_next) {
      busy_now = r.busy_nodes[busy_next].second;
    }
    return busy_now;
  };
  // Nodes out (in repair, or in a failed placement group): the simulation's own step function.
  std::size_t down_next = 0;
  int down_now = 0;
  auto down_at = [&](double t) {  // called with increasing t
    for (; down_next < r.down_nodes.size() && r.down_nodes[down_next].first - origin <= t; ++down_next) down_now = r.down_nodes[down_next].second;
    return down_now;
  };
  // Jobs: running spans, waiting spans (submit to first start, an interruption to the next start), per queue.
  std::map<std::string, std::vector<std::pair<double, double>>> running, waiting;
  std::vector<double> completions;
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const auto& o = r.jobs[j];
    const std::string& queue = run.jobs[j].queue;
    double ready = run.jobs[j].submit_s - origin;
    for (const auto& span : o.runs) {
      waiting[queue].push_back({ready, span.start_s - origin});
      running[queue].push_back({span.start_s - origin, span.end_s - origin});
      ready = span.end_s - origin;
    }
    if (o.runs.empty()) waiting[queue].push_back({ready, r.makespan_s + 1});
    if (o.end_s >= 0) completions.push_back(o.end_s - origin);
  }
  std::sort(completions.begin(), completions.end());
  const MetricLabels none;
  const auto& causes = llama3_failure_causes();
  std::map<std::string, double> failed_by_category;  // every category from the start, so each series begins at 0
  for (const auto& c : causes) failed_by_category[c.category] = 0;
  std::size_t failed = 0, evicted = 0;
  for (std::size_t k = 0; k < grid.t.size(); ++k) {
    const double t = grid.t[k];
    const std::size_t i = k == 0 ? 0 : k - 1;
    const int busy = busy_at(t), in_repair = down_at(t);
    w.sample("fmsim_cluster_nodes", {{"state", "busy"}}, t, busy);
    w.sample("fmsim_cluster_nodes", {{"state", "down"}}, t, in_repair);
    w.sample("fmsim_cluster_nodes", {{"state", "free"}}, t, std::max(0, run.shape.nodes - busy - in_repair));
    const double width = grid.width(i);
    w.sample("fmsim_cluster_gpu_utilization_ratio", none, t, width > 0 ? busy_node_s[i] / (width * run.shape.nodes) : 0.0);
    for (const auto& [queue, spans] : running) w.sample("fmsim_cluster_jobs", {{"state", "running"}, {"queue", queue}}, t, covering(spans, t));
    for (const auto& [queue, spans] : waiting) w.sample("fmsim_cluster_jobs", {{"state", "waiting"}, {"queue", queue}}, t, covering(spans, t));
    w.sample("fmsim_cluster_jobs_completed", none, t,
             static_cast<double>(std::upper_bound(completions.begin(), completions.end(), t + 1e-9) - completions.begin()));
    for (; failed < r.failures.size() && r.failures[failed].time_s - origin <= t + 1e-9; ++failed) {
      ++failed_by_category[causes[r.failures[failed].cause].category];
    }
    for (const auto& [category, count] : failed_by_category) w.sample("fmsim_cluster_node_failures", {{"cause", category}}, t, count);
    if (detecting) {
      while (evicted < r.evictions.size() && r.evictions[evicted].time_s - origin <= t + 1e-9) ++evicted;
      w.sample("fmsim_cluster_straggler_evictions", none, t, static_cast<double>(evicted));
    }
  }
  // XID and ECC series only for GPUs a GPU-attributed failure hit (healthy GPUs would add only zeros).
  struct Hit {
    double start, end;
    int xid;
    bool ecc;
  };
  std::map<std::pair<int, int>, std::vector<Hit>> hits;  // (node, gpu)
  for (const auto& f : r.failures) {
    const auto& c = causes[f.cause];
    if (c.xid == 0 && !c.ecc_dbe) continue;
    hits[{f.node, f.gpu}].push_back({f.time_s - origin, f.time_s - origin + run.options.failures.repair_s, c.xid, c.ecc_dbe});
  }
  for (const auto& [where, list] : hits) {
    const MetricLabels labels = {{"gpu", std::to_string(where.second)}, {"Hostname", "node" + std::to_string(where.first)}, {"modelName", run.gpu}};
    for (double t : grid.t) {
      int xid = 0;
      double dbe = 0;
      for (const auto& h : list) {
        if (h.start <= t && t < h.end) xid = h.xid;
        if (h.ecc && h.start <= t + 1e-9) dbe += 1;
      }
      w.sample("DCGM_FI_DEV_XID_ERRORS", labels, t, xid);
      w.sample("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", labels, t, dbe);
    }
  }
  return w.text();
}

}  // namespace fmsim::cluster
