// Per-GPU activity of a simulated step, from the trace's node times and the replay's link loads.
#include "fmsim/report/gpu_usage.hpp"

#include <map>

#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

/// Ranks' GPUs sit in one NVLink domain.
bool one_nvlink_domain(const workload::Trace& trace, const std::vector<int>& ranks, int gpus_per_domain) {
  if (ranks.empty()) return false;
  const int domain = trace.rank_gpu[ranks.front()] / gpus_per_domain;
  for (int r : ranks) {
    if (trace.rank_gpu[r] / gpus_per_domain != domain) return false;
  }
  return true;
}

}  // namespace

json gpu_usage(const TrainingRun& run) {
  const auto& trace = *run.trace;
  const auto& spec = run.scenario->cluster;
  const auto& step = run.step;
  const int gpus_per_domain = spec.gpus_per_node * spec.nvlink_domain_nodes;
  std::map<int, double> busy_s, nvlink_bytes;
  std::map<int, const workload::Communicator*> nvlink_comms;  // communicators inside one NVLink domain
  for (const auto& c : trace.comms) {
    if (one_nvlink_domain(trace, c.ranks, gpus_per_domain)) nvlink_comms[c.id] = &c;
  }
  for (const auto& node : trace.nodes) {
    const double duration = step.node_end_s[node.id] - step.node_start_s[node.id];
    if (node.type == workload::NodeType::comp && node.stream == "compute") busy_s[node.rank] += duration;
    const auto comm = node.type == workload::NodeType::coll ? nvlink_comms.find(node.comm) : nvlink_comms.end();
    if (comm != nvlink_comms.end()) {
      nvlink_bytes[node.rank] += node.comm_bytes * collectives::busbw_factor(node.op, static_cast<int>(comm->second->ranks.size()));
    } else if (node.type == workload::NodeType::send && one_nvlink_domain(trace, {node.rank, node.peer}, gpus_per_domain)) {
      nvlink_bytes[node.rank] += node.comm_bytes;
    }
  }
  std::map<std::string, double> link_bytes;
  for (const auto& link : step.links) link_bytes[link.name] = link.bytes;
  std::map<int, double> hbm_of_stage;
  for (const auto& b : run.memory.by_pipeline_rank) hbm_of_stage[b.pipeline_rank] = b.total_bytes;

  json gpus = json::array();
  for (int rank : trace.ranks) {
    const int gpu = trace.rank_gpu[rank];
    const int stage = workload::coords_of(run.scenario->parallelism, rank).pp;
    const auto rail = link_bytes.find("gpu" + std::to_string(gpu) + "-rail-up");
    gpus.push_back({{"rank", rank},
                    {"pipeline_rank", stage},
                    {"node", gpu / spec.gpus_per_node},
                    {"local_gpu", gpu % spec.gpus_per_node},
                    {"compute_busy_fraction", step.step_time_s > 0 ? busy_s[rank] / step.step_time_s : 0.0},
                    {"hbm_used_bytes", hbm_of_stage.count(stage) ? hbm_of_stage[stage] : run.memory.peak.total_bytes},
                    {"nvlink_tx_bytes", nvlink_bytes[rank]},
                    {"network_tx_bytes", rail == link_bytes.end() ? 0.0 : rail->second}});
  }
  return gpus;
}

}  // namespace fmsim::report
