#pragma once
// Shared by the two sacct readers (job_trace.cpp: --parsable2; sacct_json.cpp: --json).
#include <algorithm>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/cluster/job_trace.hpp"
#include "fmsim/common/error.hpp"

namespace fmsim::cluster::detail {

/// The most jobs one run simulates.
inline constexpr std::size_t kMaxJobs = 1000000;

/// Submit times from the earliest, jobs in submit order; refuses an export with no job that ran.
inline std::vector<JobSpec> from_first_submission(std::vector<JobSpec> jobs, const std::string& file) {
  if (jobs.empty()) throw InputError(file + ": the sacct export holds no job that ran");
  double first = jobs.front().submit_s;
  for (const auto& job : jobs) first = std::min(first, job.submit_s);
  for (auto& job : jobs) job.submit_s -= first;
  std::stable_sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.submit_s < b.submit_s; });
  return jobs;
}

/// A job of `sacct --json` (Slurm 21.08 to 25.x): what read_job_trace needs to know of the document.
bool is_sacct_json(const nlohmann::json& doc);
std::vector<JobSpec> read_sacct_json(const nlohmann::json& doc, const std::string& file, int cluster_nodes);

}  // namespace fmsim::cluster::detail
