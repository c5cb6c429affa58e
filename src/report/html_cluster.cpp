// HTML report page for a shared-cluster run (fmsim.cluster/1, `fmsim cluster --json`): the summary, GPUs
// held by jobs over time against the cluster's capacity, a time line with a track per node (each job run
// a span, coloured by queue; runs cut short by a failure in red), and the queues' waiting times.
#include <algorithm>
#include <map>

#include "fmsim/report/svg_chart.hpp"
#include "result_reader.hpp"

namespace fmsim::report::detail {

namespace {

/// Tracks drawn at most (a 2,048-node cluster would be a page of lanes; the JSON has them all).
constexpr int kMaxNodeLanes = 64;
const std::vector<std::string> kQueueColors = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1", "#76b7b2", "#edc948", "#9c755f", "#bab0ac"};
const std::string kInterruptedColor = "#e15759";

std::string percentiles(const ResultReader& r, const std::string& key) {
  return duration_text(r.number(key + "/p50")) + " median, " + duration_text(r.number(key + "/p90")) + " p90, " +
         duration_text(r.number(key + "/p99")) + " p99, " + duration_text(r.number(key + "/max")) + " max";
}

}  // namespace

std::string cluster_page(const ResultReader& r) {
  const int nodes = static_cast<int>(r.integer("/cluster/nodes"));
  const double gpus = r.number("/cluster/gpus");
  const double span_s = r.number("/makespan_s");
  const std::string subtitle = std::to_string(nodes) + " x " + r.text("/cluster/instance_type") + " (" + with_unit(gpus, r.text("/cluster/gpu")) +
                               "), " + r.text("/policy") + " scheduling, " + r.text("/placement") + " placement";
  std::vector<std::pair<std::string, std::string>> facts = {
      {"jobs", with_unit(r.number("/completed"), "completed") + " of " + with_unit(r.number("/jobs"), "") + " from " + r.text("/trace")},
      {"makespan", duration_text(span_s)},
      {"utilisation", with_unit(100 * r.number("/utilization"), "%") + " of the GPU-hours held by jobs; " +
                          with_unit(100 * r.number("/idle_while_waiting"), "%") + " idle while jobs waited (fragmentation and blocking)"},
      {"queueing delay", percentiles(r, "/wait_s")},
      {"job completion time", percentiles(r, "/completion_s")},
      {"placement", with_unit(r.number("/jobs_spread_beyond_needed"), "jobs") + " on more " +
                        (r.text("/cluster/switch_group") == "nvlink_domain" ? "NVLink domains" : "leaf switches") + " than they need"},
      {"failures", with_unit(r.number("/failures/node_failures"), "node failures") + ", " + with_unit(r.number("/restarts"), "restarts") + ", " +
                       with_unit(100 * r.number("/lost_to_failures"), "%") + " of capacity lost to them"},
  };
  if (r.has("/usd") && r.at("/usd").is_number()) facts.push_back({"cost", "$" + with_unit(r.number("/usd"), "for the makespan")});

  // The run's time origin: the first submission (where the busy series starts).
  const auto& series = r.array("/busy_gpus_over_time");
  const double origin = series.empty() ? 0.0 : r.number("/busy_gpus_over_time/0/0");
  std::vector<std::pair<double, double>> busy;
  for (std::size_t i = 0; i < series.size(); ++i) {
    const std::string where = "/busy_gpus_over_time/" + std::to_string(i);
    busy.push_back({r.number(where + "/0") - origin, r.number(where + "/1")});
  }
  const bool days = span_s > 3 * 86400;
  const double scale = days ? 86400 : 3600;
  const std::string unit = days ? "days" : "hours";
  const std::string utilisation =
      section("utilisation", "GPUs held by jobs", "Held from a job's start to its end or failure; the dashed line is the cluster's capacity.",
              svg::step_area("cluster-busy", busy, span_s, scale, unit, gpus, with_unit(gpus, "GPUs"), "#4e79a7"));

  // A track per node (the first kMaxNodeLanes), a span per job run.
  std::map<std::string, int> queue_index;
  const int lanes_shown = std::min(nodes, kMaxNodeLanes);
  std::vector<svg::Lane> lanes(lanes_shown);
  for (int n = 0; n < lanes_shown; ++n) lanes[n].label = "node " + std::to_string(n);
  const auto& jobs = r.array("/per_job");
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    const std::string where = "/per_job/" + std::to_string(j);
    const std::string queue = r.text(where + "/queue");
    const int style = queue_index.emplace(queue, static_cast<int>(queue_index.size()) % static_cast<int>(kQueueColors.size())).first->second;
    const auto& runs = r.array(where + "/runs");
    for (std::size_t k = 0; k < runs.size(); ++k) {
      const std::string run = where + "/runs/" + std::to_string(k);
      const double start = r.number(run + "/start_s") - origin, end = r.number(run + "/end_s") - origin;
      if (!r.at(run + "/interrupted").is_boolean()) r.fail(run + "/interrupted", "should be true or false");
      const bool interrupted = r.at(run + "/interrupted").get<bool>();
      const std::string title = r.text(where + "/id") + " (" + queue + "), " + duration_text(end - start) + (interrupted ? ", cut by a failure" : "");
      const auto& on = r.array(run + "/nodes");
      for (std::size_t n = 0; n < on.size(); ++n) {
        const long long node = r.integer(run + "/nodes/" + std::to_string(n));
        if (node < 0 || node >= nodes) r.fail(run + "/nodes/" + std::to_string(n), "should be a node of the cluster (0 to " + std::to_string(nodes - 1) + ")");
        if (node < lanes_shown) lanes[node].spans.push_back({start, end, interrupted ? static_cast<int>(kQueueColors.size()) : style, title});
      }
    }
  }
  std::vector<std::string> colors = kQueueColors;
  colors.push_back(kInterruptedColor);
  std::vector<svg::Part> key;
  for (const auto& [queue, index] : queue_index) key.push_back({"queue " + queue, 0, kQueueColors[index]});
  key.push_back({"run cut by a failure", 0, kInterruptedColor});
  const std::string note = lanes_shown < nodes ? "The first " + std::to_string(lanes_shown) + " of " + std::to_string(nodes) +
                                                     " nodes; every job run is in the JSON (per_job[].runs) and on the Perfetto time line (--timeline)."
                                               : "A track per node; hover a span for the job.";
  const std::string timeline = section("timeline", "Jobs on nodes", note,
                                       svg::timeline("cluster-timeline", lanes, span_s, colors, scale, unit) + svg::legend(key));

  std::vector<std::pair<std::string, std::string>> queues;
  for (const auto& [queue, doc] : r.at("/queues").items()) {
    (void)doc;
    std::string token;  // a JSON pointer token: ~ and / escaped
    for (char c : queue) token += c == '~' ? std::string("~0") : c == '/' ? std::string("~1") : std::string(1, c);
    const std::string where = "/queues/" + token;
    queues.push_back({queue, with_unit(r.number(where + "/jobs"), "jobs") + ", waited " + percentiles(r, where + "/wait_s")});
  }
  const std::string queue_table = section("queues", "Queues", "Queueing delay per queue (tenant or partition).", facts_table(queues));
  return html_page(r.text_or("/cluster/name", "cluster"), subtitle,
                   section("summary", "Summary", "", facts_table(facts)) + utilisation + timeline + queue_table);
}

}  // namespace fmsim::report::detail
