#pragma once
// What `fmsim cluster` reports: queueing delay and job completion time distributions, utilisation over
// time, idle capacity while jobs wait, placement spread, failures; as text, JSON (fmsim.cluster/1) and a
// Chrome trace time line with a track per node.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/cluster/cluster_sim.hpp"
#include "fmsim/report/openmetrics.hpp"

namespace fmsim::cluster {

struct ClusterRun {
  std::string cluster_name, trace_file, gpu, instance_type;
  ClusterShape shape;
  SimOptions options;
  std::vector<JobSpec> jobs;
  ClusterResult result;
  double usd_per_node_hour = 0;  ///< 0: no price
  double wall_s = 0;
  int contention_neighbourhoods = 0;  ///< distinct neighbourhood shapes the contention model priced
  int contention_replays = 0;         ///< step replays the fast contention model ran (memoized)
};

nlohmann::json to_json(const ClusterRun& run);
std::string to_text(const ClusterRun& run);
/// Every job run as a span on each of its nodes' tracks (Perfetto); interrupted runs end in "failed".
nlohmann::json timeline_json(const ClusterRun& run);
/// Time series of the run over simulated days in OpenMetrics text (cluster_metrics.cpp): busy, down and
/// free nodes, jobs running and waiting per queue, GPU utilisation, node failures and their XID errors.
std::string cluster_metrics(const ClusterRun& run, const report::MetricsOptions& options);

}  // namespace fmsim::cluster
