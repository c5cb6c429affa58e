// Jobs sharing a fabric (shared_fabric.hpp).
#include "fmsim/training/shared_fabric.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <spdlog/spdlog.h>

#include "fmsim/common/error.hpp"
#include "fmsim/training/full_step_cost.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/trace_merge.hpp"

namespace fmsim::training {

SharedFabricResult simulate_shared_fabric(std::vector<FabricJob> jobs, const topology::ClusterGraph& cluster, int max_steps) {
  if (jobs.empty()) throw InputError("no jobs to place on the fabric");
  SharedFabricResult result;
  std::vector<workload::Trace> traces;
  std::map<std::string, std::set<int>> link_jobs;  // link -> the jobs that used it alone
  double longest = 0;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    spdlog::info("{}: its step alone", jobs[j].name);
    const StepResult alone = simulate_step(jobs[j].trace, cluster);
    SharedJobResult r;
    r.name = jobs[j].name;
    r.alone_s = alone.step_time_s;
    result.jobs.push_back(r);
    longest = std::max(longest, alone.step_time_s);
    for (const auto& link : alone.links) link_jobs[link.name].insert(static_cast<int>(j));
    traces.push_back(std::move(jobs[j].trace));
  }
  std::vector<int> steps;
  for (auto& r : result.jobs) {
    r.steps = r.alone_s > 0 ? std::clamp(static_cast<int>(std::ceil(longest / r.alone_s - 1e-9)), 1, max_steps) : 1;
    steps.push_back(r.steps);
  }
  // The merged trace and its replay, beside the jobs' own traces (held until it is built).
  double merged_nodes = 0;
  for (std::size_t j = 0; j < traces.size(); ++j) merged_nodes += static_cast<double>(traces[j].nodes.size()) * (steps[j] + 1);
  check_full_step_fits(full_step_cost(merged_nodes), "all " + std::to_string(jobs.size()) + " jobs together");
  const workload::MergedTrace merged = workload::merge_traces(traces, steps);
  traces.clear();
  traces.shrink_to_fit();
  spdlog::info("all {} jobs together: {} ranks, {} trace nodes", jobs.size(), merged.trace.world, merged.trace.nodes.size());
  const StepResult together = simulate_step(merged.trace, cluster);
  result.shared_run_s = together.step_time_s;
  result.flows = together.flows;
  std::vector<double> end(jobs.size(), 0.0);
  for (std::size_t i = 0; i < merged.trace.nodes.size(); ++i) {
    end[merged.job_of_node[i]] = std::max(end[merged.job_of_node[i]], together.node_end_s[i]);
  }
  for (std::size_t j = 0; j < jobs.size(); ++j) result.jobs[j].shared_s = end[j] / result.jobs[j].steps;
  for (const auto& link : together.links) {
    auto it = link_jobs.find(link.name);
    if (it == link_jobs.end() || it->second.size() < 2) continue;
    result.shared_links.push_back({link.name, std::vector<int>(it->second.begin(), it->second.end()), link.bytes, link.utilization});
  }
  std::sort(result.shared_links.begin(), result.shared_links.end(),
            [](const SharedLink& a, const SharedLink& b) { return a.utilization > b.utilization; });
  return result;
}

}  // namespace fmsim::training
