// `sacct --json` exports as job traces (sacct_support.hpp). The document is {"jobs": [...]} with, per job,
// job_id, partition, allocation_nodes, state.current (a string before Slurm 23.02, a list after),
// time.submission and time.elapsed (seconds), time.limit (minutes: a number before 23.02, then
// {"set", "infinite", "number"}), priority (likewise). Jobs that never ran (elapsed 0), or still pending or
// running, are skipped, as with --parsable2; the run time is the elapsed time, the plan time the limit.
#include <cmath>

#include "sacct_support.hpp"

namespace fmsim::cluster::detail {

namespace {

using nlohmann::json;

/// A Slurm number: a plain number, or {"set": bool, "infinite": bool, "number": n}. -1: absent, unset or
/// infinite.
double slurm_number(const json& job, const json::json_pointer& at, const std::string& where) {
  if (!job.contains(at)) return -1;
  const json& v = job.at(at);
  if (v.is_number()) return v.get<double>();
  if (v.is_object()) {
    if (v.value("infinite", false) || !v.value("set", true)) return -1;
    if (v.contains("number") && v["number"].is_number()) return v["number"].get<double>();
  }
  if (v.is_null()) return -1;
  throw InputError(where + at.to_string() + " = " + v.dump() + ": expected a number or {\"set\", \"infinite\", \"number\"}");
}

std::string state_of(const json& job) {
  if (!job.contains("state")) return "";
  const json& s = job["state"];
  const json& current = s.is_object() && s.contains("current") ? s["current"] : s;
  if (current.is_string()) return current.get<std::string>();
  if (current.is_array() && !current.empty() && current[0].is_string()) return current[0].get<std::string>();
  return "";
}

}  // namespace

bool is_sacct_json(const json& doc) { return doc.is_object() && doc.contains("jobs") && doc["jobs"].is_array(); }

std::vector<JobSpec> read_sacct_json(const json& doc, const std::string& file, int cluster_nodes) {
  std::vector<JobSpec> jobs;
  const json& list = doc["jobs"];
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = file + ": /jobs/" + std::to_string(i);
    const json& job = list[i];
    if (!job.is_object()) throw InputError(where + ": expected a job object (sacct --json)");
    const std::string state = state_of(job);
    if (state == "PENDING" || state == "RUNNING" || state == "REQUEUED") continue;
    const double elapsed = slurm_number(job, json::json_pointer("/time/elapsed"), where);
    if (elapsed < 0) throw InputError(where + "/time/elapsed: missing; expected the job's run time in seconds");
    if (elapsed == 0) continue;  // never ran (cancelled while pending)
    const double submission = slurm_number(job, json::json_pointer("/time/submission"), where);
    if (submission < 0) throw InputError(where + "/time/submission: missing; expected the submission time (Unix seconds)");
    const double nodes = slurm_number(job, json::json_pointer("/allocation_nodes"), where);
    if (nodes < 1 || nodes != std::floor(nodes)) {
      throw InputError(where + "/allocation_nodes: " + (nodes < 0 ? std::string("missing") : std::to_string(nodes)) +
                       "; expected the job's node count (>= 1)");
    }
    if (nodes > cluster_nodes) {
      throw InputError(where + "/allocation_nodes: " + std::to_string(static_cast<long long>(nodes)) + ": more than the cluster's " +
                       std::to_string(cluster_nodes) + " nodes (this job can never start here)");
    }
    if (elapsed > 3.2e9 || submission > 1e11) throw InputError(where + "/time: a time beyond 100 years");
    JobSpec spec;
    const json id = job.value("job_id", json());
    spec.id = id.is_number_integer() ? std::to_string(id.get<long long>()) : id.is_string() ? id.get<std::string>() : "job-" + std::to_string(i + 1);
    spec.submit_s = submission;
    spec.duration_s = elapsed;
    spec.nodes = static_cast<int>(nodes);
    spec.time_limit_s = elapsed;
    const double limit_min = slurm_number(job, json::json_pointer("/time/limit"), where);
    if (limit_min * 60 > elapsed) spec.time_limit_s = limit_min * 60;
    if (job.contains("partition") && job["partition"].is_string() && !job["partition"].get<std::string>().empty()) {
      spec.queue = job["partition"].get<std::string>();
    }
    const double priority = slurm_number(job, json::json_pointer("/priority"), where);
    if (priority >= 0) spec.priority = static_cast<int>(std::min(priority, 1000000.0));
    jobs.push_back(std::move(spec));
    if (jobs.size() > kMaxJobs) throw InputError(where + ": more than " + std::to_string(kMaxJobs) + " jobs (the most one run simulates)");
  }
  return from_first_submission(std::move(jobs), file);
}

}  // namespace fmsim::cluster::detail
