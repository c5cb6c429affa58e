// `fmsim cluster` results (cluster_report.hpp).
#include "fmsim/cluster/cluster_report.hpp"
#include "fmsim/cluster/failure_causes.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>

#include "fmsim/units/format.hpp"

namespace fmsim::cluster {

using nlohmann::json;

namespace {

/// numpy-style linear interpolation between closest ranks.
double percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const double rank = p / 100.0 * (values.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(rank));
  const auto hi = std::min(values.size() - 1, lo + 1);
  return values[lo] + (rank - lo) * (values[hi] - values[lo]);
}

json distribution(const std::vector<double>& values) {
  double mean = 0;
  for (double v : values) mean += v;
  mean = values.empty() ? 0 : mean / values.size();
  return {{"mean", mean}, {"p50", percentile(values, 50)}, {"p90", percentile(values, 90)}, {"p99", percentile(values, 99)},
          {"max", values.empty() ? 0.0 : *std::max_element(values.begin(), values.end())}};
}

/// "45 s", "12.5 min", "3.2 h", "4.1 days": durations at the scale of a cluster's queue.
std::string duration(double s) {
  char text[32];
  if (s < 60) std::snprintf(text, sizeof text, "%.0f s", s);
  else if (s < 3600) std::snprintf(text, sizeof text, "%.1f min", s / 60);
  else if (s < 3 * 86400) std::snprintf(text, sizeof text, "%.1f h", s / 3600);
  else std::snprintf(text, sizeof text, "%.1f days", s / 86400);
  return text;
}

struct Totals {
  std::vector<double> waits, jcts;
  double utilization = 0, idle_waiting = 0, lost = 0;
  int spread_more_than_needed = 0, restarts = 0;
};

Totals totals(const ClusterRun& run) {
  Totals t;
  const auto& r = run.result;
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const auto& j = r.jobs[i];
    t.restarts += j.restarts;
    if (j.end_s < 0) continue;
    if (j.groups_spanned > j.min_groups) ++t.spread_more_than_needed;
    t.waits.push_back(j.first_start_s - run.jobs[i].submit_s);
    t.jcts.push_back(j.end_s - run.jobs[i].submit_s);
  }
  const double capacity = static_cast<double>(run.shape.nodes) * r.makespan_s;
  t.utilization = capacity > 0 ? r.busy_node_s / capacity : 0;
  t.idle_waiting = capacity > 0 ? r.idle_while_waiting_node_s / capacity : 0;
  t.lost = capacity > 0 ? r.lost_node_s / capacity : 0;
  return t;
}

/// Node failures per drawn root cause (failure_causes.hpp), the causes that occurred.
json failures_by_cause(const ClusterResult& r) {
  const auto& causes = llama3_failure_causes();
  std::map<std::string, int> counts;
  for (const auto& f : r.failures) ++counts[causes[f.cause].name];
  json out = json::object();
  for (const auto& [name, count] : counts) out[name] = count;
  return out;
}

json evictions_json(const ClusterRun& run) {
  json out = json::array();
  for (const auto& e : run.result.evictions) out.push_back({{"time_s", e.time_s}, {"node", e.node}, {"job", run.jobs[e.job].id}});
  return out;
}

json group_failures(const ClusterRun& run) {
  json out = json::array();
  for (const auto& g : run.result.group_failures) {
    json ids = json::array();
    for (int j : g.jobs) ids.push_back(run.jobs[j].id);
    out.push_back({{"time_s", g.time_s}, {"group", g.group}, {"nodes", g.nodes}, {"jobs", ids}});
  }
  return out;
}

json contention_json(const ClusterRun& run) {
  json c{{"simulated", static_cast<bool>(run.options.contention_at)},
         {"gpu_hours", run.result.contention_node_s * run.shape.gpus_per_node / 3600}};
  if (run.options.contention_at) {
    c["model"] = run.options.contention_model;
    c["neighbourhoods"] = run.contention_neighbourhoods;
    c["step_replays"] = run.contention_replays;
  }
  return c;
}

}  // namespace

json to_json(const ClusterRun& run) {
  const auto& r = run.result;
  const Totals t = totals(run);
  const double gpn = run.shape.gpus_per_node;
  json jobs = json::array();
  std::map<std::string, std::vector<double>> waits_by_queue;
  for (std::size_t i = 0; i < r.jobs.size(); ++i) {
    const auto& o = r.jobs[i];
    const auto& s = run.jobs[i];
    json runs = json::array();
    for (const auto& span : o.runs) {
      runs.push_back({{"start_s", span.start_s}, {"end_s", span.end_s}, {"nodes", span.nodes}, {"interrupted", span.interrupted}});
    }
    jobs.push_back({{"id", s.id}, {"queue", s.queue}, {"nodes", s.nodes}, {"gpus", s.nodes * run.shape.gpus_per_node}, {"runs", runs},
                    {"submit_s", s.submit_s}, {"duration_s", o.duration_s}, {"start_s", o.first_start_s}, {"end_s", o.end_s},
                    {"wait_s", o.first_start_s - s.submit_s}, {"completion_s", o.end_s - s.submit_s},
                    {"restarts", o.restarts}, {"preemptions", o.preemptions}, {"rescales", o.rescales}, {"min_nodes", s.min_nodes}, {"lost_s", o.lost_s},
                    {"hangs", o.hangs}, {"spare_swaps", o.spare_swaps}, {"checkpointless_recoveries", o.checkpointless_recoveries},
                    {"group_failures", o.group_failures}, {"straggler_evictions", o.straggler_evictions}, {"straggler_s", o.straggler_s}, {"contention_s", o.contention_s}, {"switches_spanned", o.groups_spanned},
                    {"switches_needed", o.min_groups}});
    waits_by_queue[s.queue].push_back(o.first_start_s - s.submit_s);
  }
  json queues = json::object();
  for (const auto& [queue, waits] : waits_by_queue) queues[queue] = {{"jobs", waits.size()}, {"wait_s", distribution(waits)}};
  // The busy-node series, thinned to at most 500 points (the last value of each slice).
  json series = json::array();
  const std::size_t stride = std::max<std::size_t>(1, r.busy_nodes.size() / 500);
  for (std::size_t i = 0; i < r.busy_nodes.size(); i += stride) series.push_back({r.busy_nodes[i].first, r.busy_nodes[i].second * gpn});
  if (!r.busy_nodes.empty() && (r.busy_nodes.size() - 1) % stride != 0) series.push_back({r.busy_nodes.back().first, r.busy_nodes.back().second * gpn});
  json doc = {{"schema", "fmsim.cluster/1"},
              {"cluster", {{"name", run.cluster_name}, {"nodes", run.shape.nodes}, {"gpus", run.shape.nodes * run.shape.gpus_per_node},
                           {"gpu", run.gpu}, {"instance_type", run.instance_type}, {"nodes_per_switch_group", run.shape.group_nodes()},
                           {"switch_group", run.shape.nodes_per_domain > 1 ? "nvlink_domain" : "leaf"}, {"blocks", run.shape.blocks()}}},
              {"trace", run.trace_file},
              {"policy", to_string(run.options.policy)},
              {"placement", to_string(run.options.placement)},
              {"failures", {{"node_failures_per_node_hour", run.options.failures.node_failures_per_node_hour},
                            {"repair_s", run.options.failures.repair_s}, {"restart_s", run.options.failures.restart_s},
                            {"seed", run.options.failures.seed}, {"node_failures", r.node_failures},
                            {"by_cause", failures_by_cause(r)}, {"watchdog_s", run.options.failures.watchdog_s},
                            {"hangs", r.hangs}, {"software_restarts", r.software_restarts},
                            {"group_failures_per_group_hour", run.options.failures.group_failures_per_group_hour},
                            {"group_repair_s", run.options.failures.group_repair_s}, {"group_failures", group_failures(run)},
                            {"recovery", to_string(run.options.failures.recovery)},
                            {"checkpointless_recovery_s", run.options.failures.checkpointless_recovery_s},
                            {"checkpointless_recoveries", r.checkpointless_recoveries},
                            {"spares", {{"nodes", run.options.failures.spare_nodes}, {"swaps", r.spare_swaps}, {"exhausted", r.spares_exhausted},
                                        {"gpu_hours", r.spare_node_s * gpn / 3600}}},
                            {"stragglers", {{"fraction", run.options.failures.straggler_fraction}, {"slowdown", run.options.failures.straggler_slowdown},
                                            {"nodes", r.stragglers}, {"gpu_hours", r.straggler_node_s * gpn / 3600},
                                            {"detect_s", run.options.failures.straggler_detect_s}, {"evictions", evictions_json(run)}}}}},
              {"contention", contention_json(run)},
              {"jobs", run.jobs.size()},
              {"completed", t.jcts.size()},
              {"makespan_s", r.makespan_s},
              {"wait_s", distribution(t.waits)},
              {"completion_s", distribution(t.jcts)},
              {"utilization", t.utilization},
              {"idle_while_waiting", t.idle_waiting},
              {"lost_to_failures", t.lost},
              {"gpu_hours", {{"busy", r.busy_node_s * gpn / 3600}, {"lost", r.lost_node_s * gpn / 3600}, {"down", r.down_node_s * gpn / 3600},
                             {"capacity", run.shape.nodes * gpn * r.makespan_s / 3600}}},
              {"restarts", t.restarts},
              {"jobs_spread_beyond_needed", t.spread_more_than_needed},
              {"queues", queues},
              {"busy_gpus_over_time", series},
              {"per_job", jobs},
              {"simulation", {{"events", r.events}, {"wall_s", run.wall_s}}}};
  if (run.options.kueue) {
    json queues_json = json::array();
    const auto& cqs = run.options.kueue->cluster_queues;
    for (std::size_t q = 0; q < cqs.size(); ++q) {
      std::vector<double> waits;
      int jobs_in = 0, preempted = 0;
      for (std::size_t i = 0; i < run.jobs.size(); ++i) {
        const auto it = run.options.kueue->queue_index.find(run.jobs[i].queue);
        if (it == run.options.kueue->queue_index.end() || it->second != static_cast<int>(q)) continue;
        ++jobs_in;
        preempted += r.jobs[i].preemptions;
        if (r.jobs[i].first_start_s >= 0) waits.push_back(r.jobs[i].first_start_s - run.jobs[i].submit_s);
      }
      queues_json.push_back({{"name", cqs[q].name}, {"cohort", cqs[q].cohort}, {"nominal_gpus", cqs[q].nominal_gpus},
                             {"borrowing_limit_gpus", cqs[q].borrowing_limit_gpus < 0 ? json(nullptr) : json(cqs[q].borrowing_limit_gpus)},
                             {"jobs", jobs_in}, {"peak_gpus", r.peak_gpus[q]}, {"borrowed_gpu_hours", r.borrowed_gpu_s[q] / 3600},
                             {"preemptions_to_admit", r.preempted_by[q]}, {"jobs_preempted", preempted},
                             {"wait_s", waits.empty() ? json(nullptr) : distribution(waits)}});
    }
    doc["kueue"] = {{"file", run.options.kueue->file}, {"preemptions", r.preemptions}, {"cluster_queues", queues_json},
                    {"topology_aware", run.options.kueue->topology_aware()}};
  }
  doc["usd"] = run.usd_per_node_hour > 0 ? json(run.usd_per_node_hour * run.shape.nodes * r.makespan_s / 3600) : json(nullptr);
  return doc;
}

std::string to_text(const ClusterRun& run) {
  const auto& r = run.result;
  const Totals t = totals(run);
  std::string out;
  char line[400];
  std::snprintf(line, sizeof line, "%s: %zu jobs on %d x %s (%d %s), %s scheduling, %s placement\n", run.trace_file.c_str(), run.jobs.size(),
                run.shape.nodes, run.instance_type.c_str(), run.shape.nodes * run.shape.gpus_per_node, run.gpu.c_str(),
                to_string(run.options.policy).c_str(), to_string(run.options.placement).c_str());
  out += line;
  std::snprintf(line, sizeof line, "  makespan %s; %zu completed; GPU utilization %.1f %%; idle while jobs waited %.1f %%\n",
                duration(r.makespan_s).c_str(), t.jcts.size(), 100 * t.utilization, 100 * t.idle_waiting);
  out += line;
  for (const auto& [label, values] : {std::pair<const char*, const std::vector<double>*>{"queueing delay", &t.waits},
                                      {"job completion time", &t.jcts}}) {
    const json d = distribution(*values);
    std::snprintf(line, sizeof line, "  %s: mean %s, p50 %s, p90 %s, p99 %s\n", label, duration(d["mean"]).c_str(), duration(d["p50"]).c_str(),
                  duration(d["p90"]).c_str(), duration(d["p99"]).c_str());
    out += line;
  }
  std::snprintf(line, sizeof line, "  placement: %d of %zu jobs span more %s than they need\n", t.spread_more_than_needed, t.jcts.size(),
                run.shape.nodes_per_domain > 1 ? "NVLink domains" : "leaf switches");
  out += line;
  if (r.node_failures > 0 || !r.group_failures.empty()) {
    std::snprintf(line, sizeof line, "  failures: %d node failures, %d job restarts, %.0f GPU-hours lost (%.2f %% of capacity)\n",
                  r.node_failures, t.restarts, r.lost_node_s * run.shape.gpus_per_node / 3600, 100 * t.lost);
    out += line;
    if (!r.group_failures.empty()) {
      int jobs_hit = 0;
      for (const auto& g : r.group_failures) jobs_hit += static_cast<int>(g.jobs.size());
      std::snprintf(line, sizeof line, "    %zu %s failures (each took all its nodes out for %s), hitting %d running jobs\n", r.group_failures.size(),
                    run.shape.nodes_per_domain > 1 && run.shape.node_group.empty() ? "NVLink domain" : "leaf switch group",
                    duration(run.options.failures.group_repair_s).c_str(), jobs_hit);
      out += line;
    }
    if (run.options.failures.recovery == JobRecovery::checkpointless) {
      std::snprintf(line, sizeof line, "    checkpointless: %d failures recovered in process (%s pause each, the step in flight lost)\n",
                    r.checkpointless_recoveries, duration(run.options.failures.checkpointless_recovery_s).c_str());
      out += line;
    }
    if (r.hangs > 0 || r.software_restarts > 0) {
      std::snprintf(line, sizeof line, "    %d hangs (each held its nodes until the %s watchdog), %d software restarts on the same nodes\n", r.hangs,
                    duration(run.options.failures.watchdog_s).c_str(), r.software_restarts);
      out += line;
    }
  }
  if (run.options.failures.spare_nodes > 0) {
    std::snprintf(line, sizeof line, "  spares: %d nodes held, %d failed or evicted nodes replaced at once, %d found none free; %.0f spare GPU-hours idle\n",
                  run.options.failures.spare_nodes, r.spare_swaps, r.spares_exhausted, r.spare_node_s * run.shape.gpus_per_node / 3600);
    out += line;
  }
  if (run.options.contention_at) {
    std::snprintf(line, sizeof line, "  contention (%s model): %.0f GPU-hours of jobs' run time added by neighbours' traffic on shared leaf uplinks\n",
                  run.options.contention_model.c_str(), r.contention_node_s * run.shape.gpus_per_node / 3600);
    out += line;
  }
  if (!r.stragglers.empty()) {
    std::snprintf(line, sizeof line, "  stragglers: %zu nodes %.0f %% slower, %.0f GPU-hours of jobs' run time added\n", r.stragglers.size(),
                  100 * run.options.failures.straggler_slowdown, r.straggler_node_s * run.shape.gpus_per_node / 3600);
    out += line;
    if (run.options.failures.straggler_detect_s > 0) {
      std::snprintf(line, sizeof line, "    %zu evicted, each once a job had trained %s beside it (repaired in %s)\n", r.evictions.size(),
                    duration(run.options.failures.straggler_detect_s).c_str(), duration(run.options.failures.repair_s).c_str());
      out += line;
    }
  }
  if (run.options.kueue) {
    const auto& cqs = run.options.kueue->cluster_queues;
    std::snprintf(line, sizeof line, "  kueue: %d preemptions\n", r.preemptions);
    out += line;
    for (std::size_t q = 0; q < cqs.size(); ++q) {
      std::snprintf(line, sizeof line, "    %-16s cohort %-10s nominal %6.0f GPUs, peak %6.0f, borrowed %8.0f GPU-hours, preempted %d to admit its jobs\n",
                    cqs[q].name.c_str(), cqs[q].cohort.empty() ? "-" : cqs[q].cohort.c_str(), cqs[q].nominal_gpus, r.peak_gpus[q],
                    r.borrowed_gpu_s[q] / 3600, r.preempted_by[q]);
      out += line;
    }
  }
  if (run.usd_per_node_hour > 0) {
    out += "  cost " + units::format_usd(run.usd_per_node_hour * run.shape.nodes * r.makespan_s / 3600) + " for the makespan\n";
  }
  return out;
}

json timeline_json(const ClusterRun& run) {
  json events = json::array();
  events.push_back({{"ph", "M"}, {"name", "process_name"}, {"pid", 0}, {"args", {{"name", run.cluster_name}}}});
  for (int n = 0; n < run.shape.nodes; ++n) {
    events.push_back({{"ph", "M"}, {"name", "thread_name"}, {"pid", 0}, {"tid", n},
                      {"args", {{"name", "node " + std::to_string(n) + " (switch group " + std::to_string(n / run.shape.group_nodes()) + ")"}}}});
  }
  for (std::size_t j = 0; j < run.result.jobs.size(); ++j) {
    for (const auto& r : run.result.jobs[j].runs) {
      for (int n : r.nodes) {
        events.push_back({{"ph", "X"}, {"name", run.jobs[j].id + (r.interrupted ? " (failed)" : "")}, {"cat", run.jobs[j].queue},
                          {"pid", 0}, {"tid", n}, {"ts", r.start_s * 1e6}, {"dur", (r.end_s - r.start_s) * 1e6}});
      }
    }
  }
  for (const auto& g : run.result.group_failures) {  // a marker across the time line where a group went out
    events.push_back({{"ph", "i"}, {"s", "p"}, {"name", "group " + std::to_string(g.group) + " failed"}, {"cat", "failure"},
                      {"pid", 0}, {"tid", 0}, {"ts", g.time_s * 1e6}});
  }
  for (const auto& e : run.result.evictions) {  // a marker on the evicted node's track
    events.push_back({{"ph", "i"}, {"s", "t"}, {"name", "straggler evicted (" + run.jobs[e.job].id + ")"}, {"cat", "straggler"},
                      {"pid", 0}, {"tid", e.node}, {"ts", e.time_s * 1e6}});
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"}};
}

}  // namespace fmsim::cluster
