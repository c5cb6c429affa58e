// Jobs merged into one trace (trace_merge.hpp).
#include "fmsim/workload/trace_merge.hpp"

#include <map>
#include <string>

#include "fmsim/common/error.hpp"

namespace fmsim::workload {

MergedTrace merge_traces(const std::vector<Trace>& traces, const std::vector<int>& steps) {
  if (steps.size() != traces.size()) throw std::logic_error("merge_traces: one step count per trace");
  MergedTrace out;
  Trace& merged = out.trace;
  merged.symmetric = false;
  merged.scenario = nlohmann::json::array();
  std::map<int, int> gpu_job;  // GPU -> the job that uses it
  for (std::size_t j = 0; j < traces.size(); ++j) {
    const Trace& t = traces[j];
    const std::string job = "job " + std::to_string(j + 1);
    if (t.symmetric) throw InputError(job + ": its trace is symmetric (one rank per stage); sharing a fabric needs every rank traced (full fidelity)");
    if (steps[j] < 1) throw std::logic_error("merge_traces: at least one step per trace");
    for (int gpu : t.rank_gpu) {
      auto [it, fresh] = gpu_job.emplace(gpu, static_cast<int>(j));
      if (!fresh) throw InputError(job + " and job " + std::to_string(it->second + 1) + " both use GPU " + std::to_string(gpu) + ": jobs sharing a fabric need their own GPUs");
    }
    const int rank_offset = merged.world;
    const int comm_offset = static_cast<int>(merged.comms.size());
    out.first_rank.push_back(rank_offset);
    merged.world += t.world;
    merged.rank_gpu.insert(merged.rank_gpu.end(), t.rank_gpu.begin(), t.rank_gpu.end());
    for (int r : t.ranks) merged.ranks.push_back(r + rank_offset);
    for (Communicator c : t.comms) {
      c.id += comm_offset;
      for (int& r : c.ranks) r += rank_offset;
      merged.comms.push_back(std::move(c));
    }
    merged.scenario.push_back(t.scenario);
    merged.model_flops_per_step += t.model_flops_per_step * steps[j];
    merged.tokens_per_step += t.tokens_per_step * steps[j];

    // Node ids to indices; each rank's first nodes (no dependencies) and last nodes (nothing waits on them).
    const int n = static_cast<int>(t.nodes.size());
    std::map<int, int> index_of;
    for (int i = 0; i < n; ++i) index_of[t.nodes[i].id] = i;
    std::vector<bool> has_successor(n, false);
    for (const auto& node : t.nodes) {
      for (int d : node.deps) has_successor[index_of.at(d)] = true;
    }
    std::map<int, std::vector<int>> last_of_rank;  // rank -> indices of its last nodes
    for (int i = 0; i < n; ++i) {
      if (!has_successor[i]) last_of_rank[t.nodes[i].rank].push_back(i);
    }
    for (int step = 0; step < steps[j]; ++step) {
      const int base = static_cast<int>(merged.nodes.size());
      const int previous = base - n;  // the previous step's first node
      for (int i = 0; i < n; ++i) {
        TraceNode node = t.nodes[i];
        node.id = base + i;
        for (int& d : node.deps) d = base + index_of.at(d);
        if (node.deps.empty() && step > 0) {
          for (int last : last_of_rank[t.nodes[i].rank]) node.deps.push_back(previous + last);
        }
        node.rank += rank_offset;
        if (node.comm >= 0) node.comm += comm_offset;
        if (node.peer >= 0) node.peer += rank_offset;
        merged.nodes.push_back(std::move(node));
        out.job_of_node.push_back(static_cast<int>(j));
        out.step_of_node.push_back(step);
      }
    }
  }
  return out;
}

}  // namespace fmsim::workload
