// Job traces for `fmsim cluster` (job_trace.hpp): JSON Lines, one job per line, checked line by line.
#include "fmsim/cluster/job_trace.hpp"

#include <algorithm>
#include <cmath>
#include <fstream>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::cluster {

namespace {

constexpr std::size_t kMaxJobs = 1000000;
constexpr double kMaxSeconds = 3.2e9;  // about 100 years: beyond it a run never ends in any useful sense

/// A time key: a quantity ("90m", "2h") or a number of seconds.
double seconds_of(config::ObjectReader& r, const nlohmann::json& object, const std::string& key, double fallback, bool required) {
  if (!object.contains(key)) {
    if (required) r.required_value(key);  // throws, naming the key
    return fallback;
  }
  const auto& value = object[key];
  double s = 0;
  if (value.is_number()) {
    s = value.get<double>();
    r.required_value(key);  // mark as read
  } else {
    s = r.required_quantity(key, units::Dimension::time);
  }
  if (!std::isfinite(s) || s < 0 || s > kMaxSeconds) r.fail(key, "a time from 0 to 100 years, like \"90m\", \"2h\" or a number of seconds");
  return s;
}

}  // namespace

std::vector<JobSpec> read_job_trace(const std::filesystem::path& path, int gpus_per_node, int cluster_nodes) {
  config::require_regular_file(path, "the job trace");
  std::ifstream in(path);
  if (!in) throw InputError(path.string() + ": cannot be read");
  std::vector<JobSpec> jobs;
  std::string line;
  int number = 0;
  while (std::getline(in, line)) {
    ++number;
    const auto first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    const std::string where = path.string() + ":" + std::to_string(number);
    const config::JsonFile parsed = config::parse_json_text(line, where);
    if (!parsed.root.is_object()) throw InputError(where + ": expected one JSON object per line (a job)");
    config::ObjectReader r(parsed.root, where);
    JobSpec job;
    job.id = r.string_or("id", "job-" + std::to_string(jobs.size() + 1));
    job.submit_s = seconds_of(r, parsed.root, "submit", 0, false);
    if (r.has("nodes") == r.has("gpus")) r.fail("nodes", "either \"nodes\" or \"gpus\" (a multiple of " + std::to_string(gpus_per_node) + "), not both nor neither");
    if (r.has("nodes")) {
      job.nodes = static_cast<int>(r.required_int("nodes", 1));
    } else {
      const auto gpus = r.required_int("gpus", 1);
      if (gpus % gpus_per_node != 0) {
        r.fail("gpus", "a multiple of the cluster's " + std::to_string(gpus_per_node) + " GPUs per node (jobs take whole nodes)");
      }
      job.nodes = static_cast<int>(gpus / gpus_per_node);
    }
    if (job.nodes > cluster_nodes) {
      r.fail(r.has("nodes") ? "nodes" : "gpus", "at most the cluster's " + std::to_string(cluster_nodes) + " nodes (" +
                                                   std::to_string(cluster_nodes * gpus_per_node) + " GPUs): this job can never start");
    }
    job.duration_s = seconds_of(r, parsed.root, "duration", 0, true);
    if (!(job.duration_s > 0)) r.fail("duration", "a run time above zero");
    job.time_limit_s = seconds_of(r, parsed.root, "time_limit", job.duration_s, false);
    if (job.time_limit_s < job.duration_s) {
      r.fail("time_limit", "at least the duration (a job that outlives its limit would be killed; give the duration it really runs)");
    }
    job.priority = static_cast<int>(r.int_or("priority", 0, -1000000, 1000000));
    job.queue = r.string_or("queue", "default");
    job.checkpoint_interval_s = seconds_of(r, parsed.root, "checkpoint_interval", 0, false);
    r.reject_unknown_keys();
    jobs.push_back(std::move(job));
    if (jobs.size() > kMaxJobs) throw InputError(where + ": more than " + std::to_string(kMaxJobs) + " jobs (the most one run simulates)");
  }
  if (jobs.empty()) throw InputError(path.string() + ": the trace holds no jobs");
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit_s < b.submit_s; });
  return jobs;
}

}  // namespace fmsim::cluster
