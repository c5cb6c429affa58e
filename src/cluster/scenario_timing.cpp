// Scenario jobs of `fmsim cluster` timed at their placement (scenario_timing.hpp).
#include "fmsim/cluster/scenario_timing.hpp"

#include <algorithm>

#include "fmsim/common/error.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/training/full_step_cost.hpp"
#include "fmsim/training/shared_fabric.hpp"
#include <spdlog/spdlog.h>
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/scenario.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::cluster {

workload::Trace trace_on_nodes(const std::filesystem::path& cluster_file, const topology::ClusterSpec& spec, const std::string& scenario,
                               const std::vector<int>& nodes, const hardware::Catalog& catalog, const std::string& origin, std::optional<bool> all_ranks) {
  config::JsonFile file = workload::load_scenario_document(scenario, {}, "training scenario");
  file.root["cluster"] = nlohmann::json{{"base", std::filesystem::absolute(cluster_file).string()}};
  auto& par = file.root["parallelism"];
  const int gpus = static_cast<int>(nodes.size()) * spec.gpus_per_node;
  auto int_of = [&par](const char* key) { return par.contains(key) && par[key].is_number_integer() ? par[key].get<int>() : 1; };
  const int model_parallel = int_of("tensor_model_parallel_size") * int_of("pipeline_model_parallel_size") * int_of("context_parallel_size");
  if (model_parallel < 1 || gpus % model_parallel != 0) {
    throw InputError(origin + ": the job's " + std::to_string(gpus) + " GPUs are not a multiple of its TP x PP x CP = " +
                     std::to_string(model_parallel) + " (expected a job size the scenario's layout divides)");
  }
  par["data_parallel_size"] = gpus / model_parallel;
  const workload::Scenario s = workload::scenario_from_json(file.root, origin, std::filesystem::path(scenario).parent_path(), catalog);
  const auto memory = workload::estimate_memory(s);
  if (memory.oom) throw InputError(origin + ": does not fit: " + workload::describe_oom(memory));
  std::vector<int> rank_gpu;
  rank_gpu.reserve(gpus);
  for (int n : nodes) {
    for (int local = 0; local < spec.gpus_per_node; ++local) rank_gpu.push_back(n * spec.gpus_per_node + local);
  }
  const bool full = all_ranks.value_or(s.fidelity == workload::Fidelity::full);
  if (full) training::check_full_step_fits(training::estimate_full_step(s, rank_gpu), origin);
  return workload::build_trace(s, rank_gpu, full);
}

ScenarioTiming::ScenarioTiming(const std::filesystem::path& cluster_file, topology::ClusterSpec spec, const hardware::Catalog& catalog)
    : cluster_file_(std::filesystem::absolute(cluster_file)), catalog_(catalog), spec_(std::move(spec)) {}

double ScenarioTiming::step_s(const JobSpec& job, const std::vector<int>& nodes) {
  const auto& spec = spec_;
  const int group = spec.nvlink_domain_nodes > 1 ? spec.nvlink_domain_nodes : spec.fabric.nodes_per_leaf;
  std::map<int, int> per_group;
  for (int n : nodes) ++per_group[n / group];
  std::vector<int> shape;
  for (const auto& [g, count] : per_group) shape.push_back(count);
  std::sort(shape.rbegin(), shape.rend());
  const auto key = std::make_pair(job.scenario, shape);
  if (const auto hit = memo_.find(key); hit != memo_.end()) return hit->second;

  const std::string origin = job.scenario + " (job " + job.id + ")";
  const auto trace = trace_on_nodes(cluster_file_, spec, job.scenario, nodes, catalog_, origin, std::nullopt);
  if (!graph_) graph_ = topology::build_cluster_graph(spec_);
  const double step = training::simulate_step(trace, *graph_).step_time_s;
  ++simulations_;
  memo_.emplace(key, step);
  return step;
}

std::vector<double> ScenarioTiming::contention_factors(const std::vector<const JobSpec*>& jobs, const std::vector<std::vector<int>>& nodes) {
  // The neighbourhood's shape: per job its scenario and (leaf, nodes under it), leaves renumbered in order
  // of first use over the jobs sorted by that shape, so that a shifted copy of a neighbourhood hits the memo.
  // Each leaf also carries the nodes under it (a cluster's last leaf may hold fewer: a smaller uplink).
  if (!graph_) graph_ = topology::build_cluster_graph(spec_);
  using Shape = std::pair<std::string, std::vector<std::array<int, 3>>>;
  std::vector<std::pair<Shape, std::size_t>> shaped;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    std::map<int, int> per;
    for (int n : nodes[i]) ++per[graph_->leaf_group_of_node(n)];
    std::vector<std::array<int, 3>> leaves;
    for (const auto& [leaf, count] : per) leaves.push_back({leaf, count, graph_->nodes_in_leaf_group(leaf)});
    shaped.push_back({{jobs[i]->scenario, leaves}, i});
  }
  std::sort(shaped.begin(), shaped.end());
  std::map<int, int> renumber;
  std::vector<Shape> key;
  for (auto& [shape, index] : shaped) {
    for (auto& leaf : shape.second) leaf[0] = renumber.emplace(leaf[0], static_cast<int>(renumber.size())).first->second;
    key.push_back(shape);
  }
  std::vector<double> by_shape;
  if (auto hit = contention_memo_.find(key); hit != contention_memo_.end()) {
    by_shape = hit->second;
  } else if (contention_model_ != ContentionModel::full) {
    std::vector<const JobSpec*> sorted_jobs;
    std::vector<std::vector<int>> sorted_nodes;
    for (const auto& [shape, index] : shaped) {
      sorted_jobs.push_back(jobs[index]);
      sorted_nodes.push_back(nodes[index]);
    }
    by_shape = fast_contention_factors(sorted_jobs, sorted_nodes);
    ++contention_simulations_;
    contention_memo_.emplace(key, by_shape);
  } else {
    try {
      std::vector<training::FabricJob> fabric_jobs;
      for (const auto& [shape, index] : shaped) {
        const auto& job = *jobs[index];
        const std::string origin = job.scenario + " (job " + job.id + ")";
        fabric_jobs.push_back({job.id, trace_on_nodes(cluster_file_, spec_, job.scenario, nodes[index], catalog_, origin, true)});
      }
      const auto shared = training::simulate_shared_fabric(std::move(fabric_jobs), *graph_);
      for (const auto& r : shared.jobs) by_shape.push_back(r.shared_s > 0 ? std::min(1.0, r.alone_s / r.shared_s) : 1.0);
      ++contention_simulations_;
    } catch (const InputError& error) {
      // Every job here already ran alone, so this is the full-fidelity cost of the neighbourhood: it runs
      // without contention, and says so (once per neighbourhood shape).
      spdlog::warn("--contention: jobs {} together are not simulated, they run at their own pace: {}", jobs.front()->id, error.what());
      by_shape.assign(jobs.size(), 1.0);
      ++contention_skipped_;
    }
    contention_memo_.emplace(key, by_shape);
  }
  std::vector<double> factors(jobs.size(), 1.0);
  for (std::size_t k = 0; k < shaped.size(); ++k) factors[shaped[k].second] = by_shape[k];
  return factors;
}

double ScenarioTiming::duration(const JobSpec& job, const std::vector<int>& nodes) {
  return static_cast<double>(job.steps) * step_s(job, nodes);
}

}  // namespace fmsim::cluster
