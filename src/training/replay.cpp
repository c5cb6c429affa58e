// Lowering a trace to an engine task graph and running it (see step_simulation.hpp).
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <deque>
#include <map>
#include <set>
#include <tuple>

#include <spdlog/spdlog.h>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/engine/task_graph.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "replay_internal.hpp"

namespace fmsim::training {

using workload::NodeType;
using workload::TraceNode;

double compute_node_s(const TraceNode& n, const hardware::GpuSpec& gpu) {
  if (n.duration_s >= 0) return n.duration_s;
  compute::ComputeModel model(gpu);
  switch (n.kernel) {
    case workload::Kernel::gemm: {
      const auto precision = n.fp4   ? compute::MathPrecision::fp4
                             : n.fp8 ? compute::MathPrecision::fp8
                                     : compute::MathPrecision::bf16;
      // `bytes`: the quantization traffic of its inputs (low_precision.cpp), a memory-bound kernel.
      // MXFP8's block-scaled GEMMs run below per-tensor FP8 ones (GpuSpec::gemm_mxfp8_rate).
      const double rate = n.fp4 ? compute::kFp4ModelGemmRate : n.fp8_block_scaled ? gpu.gemm_mxfp8_rate : 1.0;
      return n.repeat * model.gemm_s({n.m, n.n, n.k}, precision, n.sms_taken, n.fp8_split_accumulator) / rate +
             model.memory_s(n.bytes);
    }
    case workload::Kernel::attention_fwd:
      return model.attention_s(n.flops, false, n.attention_span, n.sms_taken, n.attention_flash2, n.attention_head_dim, n.attention_steps, n.fp8);
    case workload::Kernel::attention_bwd:
      return model.attention_s(n.flops, true, n.attention_span, n.sms_taken, n.attention_flash2, n.attention_head_dim, n.attention_steps, n.fp8);
    case workload::Kernel::memory:
    case workload::Kernel::optimizer: return model.memory_s(n.bytes);
  }
  return 0.0;
}

namespace {

class Lowering {
 public:
  Lowering(const workload::Trace& trace, const topology::ClusterGraph& cluster, const ReplayOptions& options)
      : trace_(trace), cluster_(cluster), net_(trace, cluster, options.rail_bandwidth_scale) {}

  engine::SimTaskGraph lower() {
    node_task_.assign(trace_.nodes.size(), -1);
    for (const auto& node : trace_.nodes) place(node);
    // Dependencies: data deps, plus the previous node of the same rank on the same stream.
    std::map<std::pair<int, std::string>, int> last_on_stream;
    std::vector<std::set<int>> deps(graph_.tasks.size());
    for (const auto& node : trace_.nodes) {
      const int task = node_task_[node.id];
      for (int dep : node.deps) {
        if (node_task_[dep] != task) deps[task].insert(node_task_[dep]);
      }
      if (!node.stream.empty()) {
        auto key = std::make_pair(node.rank, node.stream);
        auto it = last_on_stream.find(key);
        if (it != last_on_stream.end() && node_task_[it->second] != task) deps[task].insert(node_task_[it->second]);
        last_on_stream[key] = node.id;
      }
    }
    for (std::size_t i = 0; i < deps.size(); ++i) graph_.tasks[i].deps.assign(deps[i].begin(), deps[i].end());
    check_no_deadlock();
    for (const auto& [key, sides] : open_p2p_) {
      if (!sides[0].empty() || !sides[1].empty()) {
        throw InputError("trace: a " + std::string(sides[0].empty() ? "receive" : "send") + " between ranks " +
                         std::to_string(std::get<0>(key)) + " and " + std::to_string(std::get<1>(key)) + " (tag " +
                         std::to_string(std::get<2>(key)) + ") has no matching " + (sides[0].empty() ? "send" : "receive"));
      }
    }
    return std::move(graph_);
  }

  const std::vector<int>& node_task() const { return node_task_; }
  NetworkModel& network() { return net_; }
  /// Tasks of a symmetric trace that put bytes on a simulated GPU's rail (before merging).
  const std::map<int, NetworkModel::RailTraffic>& rail_traffic() const { return rail_traffic_; }

 private:
  int new_task() {
    graph_.tasks.emplace_back();
    return static_cast<int>(graph_.tasks.size()) - 1;
  }

  /// A cycle through joined sends/receives or collectives (e.g. two ranks that each send before they
  /// receive on one stream) would never start; the merging of pure delays assumes none.
  void check_no_deadlock() const {
    std::vector<std::vector<int>> preds(graph_.tasks.size());
    for (std::size_t i = 0; i < preds.size(); ++i) preds[i] = graph_.tasks[i].deps;
    const auto cycle = workload::find_cycle(preds);
    if (cycle.empty()) return;
    // A task joins the nodes of one transfer or collective: name two of them ("node 3 (...) = node 8 (...)").
    std::vector<std::vector<int>> nodes_of_task(graph_.tasks.size());
    for (std::size_t id = 0; id < trace_.nodes.size(); ++id) {
      auto& nodes = nodes_of_task[node_task_[id]];
      if (nodes.size() < 3) nodes.push_back(static_cast<int>(id));
    }
    auto name = [&](int task) {
      const auto& nodes = nodes_of_task[task];
      std::string text = workload::describe_node(trace_.nodes[nodes[0]]);
      if (nodes.size() > 1) text += " = " + workload::describe_node(trace_.nodes[nodes[1]]);
      return nodes.size() > 2 ? text + " = ..." : text;
    };
    throw InputError("trace: the ops wait on each other and none can start (a deadlock: sends and receives, or collectives, in "
                     "a different order on two ranks, or a dependency cycle): " + workload::describe_cycle(cycle, name));
  }

  /// A compute node with a given duration may not claim more FLOPs than the GPU's dense peak allows in
  /// that time (FP8 peak for an FP8 GEMM, BF16 otherwise): a trace of impossibly fast kernels would
  /// report an impossible MFU.
  void check_given_duration(const TraceNode& node) const {
    const auto& gpu = cluster_.spec.gpu;
    const double flops = node.kernel == workload::Kernel::gemm && node.m > 0 ? 2.0 * node.m * node.n * node.k * node.repeat : node.flops;
    const bool fp8 = node.fp8 && gpu.fp8_dense_flops > 0;
    const bool fp4 = node.fp4 && gpu.fp4_dense_flops > 0;
    const double peak = fp4 ? gpu.fp4_dense_flops : fp8 ? gpu.fp8_dense_flops : gpu.bf16_dense_flops;
    if (flops <= peak * node.duration_s) return;
    char text[256];
    if (node.duration_s <= 0) {
      std::snprintf(text, sizeof text, "%.4g FLOPs in duration_s = 0", flops);
    } else {
      std::snprintf(text, sizeof text, "%.4g FLOPs in duration_s = %.4g s, %.4g TFLOP/s: above the %s's dense %s peak of %.4g TFLOP/s",
                    flops, node.duration_s, flops / node.duration_s / 1e12, gpu.name.c_str(), fp4 ? "FP4" : fp8 ? "FP8" : "BF16", peak / 1e12);
    }
    throw InputError("trace: " + workload::describe_node(node) + " runs " + text);
  }

  void place(const TraceNode& node) {
    switch (node.type) {
      case NodeType::comp: {
        if (node.duration_s >= 0) check_given_duration(node);
        int task = new_task();
        graph_.tasks[task].delay_s = compute_node_s(node, cluster_.spec.gpu);
        node_task_[node.id] = task;
        return;
      }
      case NodeType::coll: return place_collective(node);
      case NodeType::send:
      case NodeType::recv: return place_p2p(node);
    }
  }

  void place_collective(const TraceNode& node) {
    const auto& comm = trace_.comms.at(node.comm);
    // The n-th call of a rank on a communicator matches the n-th call of every other member.
    const int sequence = calls_[{node.comm, node.rank}]++;
    const auto key = std::make_tuple(node.comm, sequence);
    auto it = joint_.find(key);
    if (it != joint_.end()) {
      const auto& first = trace_.nodes[it->second.first_node];
      if (first.op != node.op || first.comm_bytes != node.comm_bytes) {
        throw InputError("trace: rank " + std::to_string(node.rank) + " node " + std::to_string(node.id) + " (" + node.name +
                         ") does not match the collective of rank " + std::to_string(first.rank) + " (node " +
                         std::to_string(first.id) + ")");
      }
      node_task_[node.id] = it->second.task;
      return;
    }
    int task = new_task();
    node_task_[node.id] = task;
    const bool joint = net_.all_members_simulated(comm);
    if (!joint && !trace_.symmetric) {
      throw InputError("trace: collective node " + std::to_string(node.id) + " on communicator " + std::to_string(comm.id) +
                       " has members without nodes, and the trace is not marked symmetric");
    }
    const auto traffic = net_.fill_collective(graph_.tasks[task], comm, node, joint);
    if (!joint && traffic.bytes > 0) rail_traffic_[task] = traffic;
    if (joint) joint_[key] = {task, node.id};
  }

  void place_p2p(const TraceNode& node) {
    const int src = node.type == NodeType::send ? node.rank : node.peer;
    const int dst = node.type == NodeType::send ? node.peer : node.rank;
    auto& waiting = open_p2p_[std::make_tuple(src, dst, node.tag)];
    const int side = node.type == NodeType::send ? 0 : 1;
    if (!waiting[1 - side].empty()) {  // the matching side came first: join its transfer
      node_task_[node.id] = waiting[1 - side].front();
      waiting[1 - side].pop_front();
      return;
    }
    int task = new_task();
    node_task_[node.id] = task;
    const auto traffic = net_.fill_p2p(graph_.tasks[task], src, dst, node.comm_bytes);
    if (trace_.symmetric && traffic.bytes > 0) rail_traffic_[task] = traffic;
    waiting[side].push_back(task);
  }

  struct Joint {
    int task = 0;
    int first_node = 0;
  };
  const workload::Trace& trace_;
  const topology::ClusterGraph& cluster_;
  NetworkModel net_;
  engine::SimTaskGraph graph_;
  std::vector<int> node_task_;
  std::map<std::pair<int, int>, int> calls_;
  std::map<std::tuple<int, int>, Joint> joint_;
  std::map<std::tuple<int, int, int>, std::array<std::deque<int>, 2>> open_p2p_;  // (src, dst, tag) -> unmatched sends, receives
  std::map<int, NetworkModel::RailTraffic> rail_traffic_;
};

}  // namespace

StepResult simulate_step(const workload::Trace& trace, const topology::ClusterGraph& cluster, const ReplayOptions& options) {
  if (static_cast<int>(trace.rank_gpu.size()) != trace.world) {
    throw InputError("trace: rank_gpu lists " + std::to_string(trace.rank_gpu.size()) + " GPUs for a world of " +
                     std::to_string(trace.world) + " ranks");
  }
  for (int gpu : trace.rank_gpu) {
    if (gpu < 0 || gpu >= cluster.spec.total_gpus()) {
      throw InputError("trace: GPU " + std::to_string(gpu) + " is outside the cluster (" + std::to_string(cluster.spec.total_gpus()) + " GPUs)");
    }
  }
  if (!(options.rail_bandwidth_scale > 0) || !std::isfinite(options.rail_bandwidth_scale)) {
    throw InternalError("simulate_step: rail bandwidth scale must be positive and finite");
  }
  Lowering lowering(trace, cluster, options);
  engine::SimTaskGraph graph = lowering.lower();
  engine::SimPlatform platform = lowering.network().platform();
  ReducedGraph reduced = reduce_pure_delays(graph);
  spdlog::info("replaying {} trace nodes of {} ranks as {} tasks ({} after merging pure delays)", trace.nodes.size(),
               trace.ranks.size(), graph.tasks.size(), reduced.graph.tasks.size());
  engine::TaskTimes times = engine::simulate_tasks_in_child(platform, reduced.graph);

  StepResult result;
  result.step_time_s = times.makespan_s;
  result.tasks = static_cast<long long>(reduced.graph.tasks.size());
  result.flows = times.flows;
  result.simulated_ranks = static_cast<int>(trace.ranks.size());
  const auto& node_task = lowering.node_task();
  result.node_start_s.resize(trace.nodes.size());
  result.node_end_s.resize(trace.nodes.size());
  for (std::size_t i = 0; i < trace.nodes.size(); ++i) {
    const int original = node_task[i];
    const int merged = reduced.task_of[original];
    result.node_start_s[i] = times.start_s[merged] + reduced.member_start_s[original];
    result.node_end_s[i] = reduced.member_end_s[original] < 0 ? times.end_s[merged]
                                                              : times.start_s[merged] + reduced.member_end_s[original];
  }
  for (std::size_t link = 0; link < platform.links.size(); ++link) {
    const double utilization = result.step_time_s > 0
                                   ? times.link_bytes[link] / (platform.links[link].bandwidth_Bps * result.step_time_s)
                                   : 0.0;
    if (utilization > result.busiest_link.utilization) {
      result.busiest_link = {platform.links[link].name, times.link_bytes[link], utilization};
    }
    if (times.link_bytes[link] > 0) result.links.push_back({platform.links[link].name, times.link_bytes[link], utilization});
  }
  // Per simulated GPU: a symmetric trace's network tasks each belong to one simulated rank (a pipeline
  // send, shared by two, is counted once: the bytes it sends).
  std::map<int, std::vector<std::pair<double, double>>> crossing;  // rank -> in-flight intervals
  for (const auto& [task, traffic] : lowering.rail_traffic()) {
    const int merged = reduced.task_of[task];
    const double start = times.start_s[merged] + reduced.member_start_s[task];
    const double end = reduced.member_end_s[task] < 0 ? times.end_s[merged] : times.start_s[merged] + reduced.member_end_s[task];
    auto& t = result.cross_leaf;
    t.net_bytes += traffic.bytes;
    t.cross_bytes += traffic.bytes * traffic.cross_share;
    t.net_busy_s += end - start;
    t.cross_busy_s += (end - start) * traffic.cross_share;
    for (const auto& [leaf, share] : traffic.leaf_shares) t.leaf_cross_busy_s[leaf] += (end - start) * share;
    if (traffic.cross_share > 0) crossing[traffic.rank].push_back({start, end});
  }
  for (auto& [rank, spans] : crossing) {  // overlapping transfers (two streams) count their union once
    std::sort(spans.begin(), spans.end());
    double reach = -INFINITY;
    for (const auto& [start, end] : spans) {
      if (end > reach) result.cross_leaf.cross_active_s += end - std::max(start, reach);
      reach = std::max(reach, end);
    }
  }
  if (!trace.ranks.empty()) {
    const double ranks = static_cast<double>(trace.ranks.size());
    auto& t = result.cross_leaf;
    for (double* v : {&t.net_bytes, &t.cross_bytes, &t.net_busy_s, &t.cross_busy_s, &t.cross_active_s}) *v /= ranks;
    for (auto& [leaf, busy] : t.leaf_cross_busy_s) busy /= ranks;
  }
  attribute_time(trace, result);
  return result;
}

}  // namespace fmsim::training
