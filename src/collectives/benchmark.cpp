// Chooses the algorithm and protocol per size like NCCL's tuner (lowest estimated time), and computes
// time = closed-form latency + bandwidth time (+ pipeline fill), where the network part of the
// bandwidth time comes from the engine: once per traffic shape in fast mode (flow times scale
// linearly with bytes, so one simulation at a reference size serves every size), or from every
// message of every size in full mode.
#include "fmsim/collectives/benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include <spdlog/spdlog.h>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/platform.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"

namespace fmsim::collectives {
namespace {

constexpr double kReferenceBytes = 1073741824.0;  // 1 GiB: large enough that integer rounding vanishes
constexpr double kFloatBytes = 4.0;

/// Network seconds per byte of collective size for each candidate algorithm, from one simulation.
std::map<Algorithm, double> simulate_network_shapes(const CommLayout& layout, Op op,
                                                    const std::vector<Candidate>& list, BenchmarkResult& result) {
  std::map<Algorithm, double> seconds_per_byte;
  std::vector<std::pair<const AlgorithmModel*, TrafficShape>> with_network;  // each model once
  std::vector<NetPattern> patterns;
  for (const auto& candidate : list) {
    seconds_per_byte[candidate.model->id()] = 0.0;
    TrafficShape shape = candidate.model->shape(op, layout);
    if (shape.pattern == NetPattern::none || shape.net_bytes_per_island <= 0) continue;
    bool known = false;
    for (const auto& entry : with_network) known = known || entry.first == candidate.model;
    if (known) continue;
    with_network.emplace_back(candidate.model, shape);
    patterns.push_back(shape.pattern);
  }
  if (with_network.empty()) return seconds_per_byte;
  NodePlatform platform = build_node_platform(layout, patterns);
  std::vector<engine::SimJob> jobs;
  for (const auto& [model, shape] : with_network) {
    engine::SimJob job;
    job.flows = pattern_flows(platform, layout, shape.pattern, shape.net_bytes_per_island * kReferenceBytes);
    jobs.push_back(std::move(job));
  }
  spdlog::info("simulating {} network traffic shape(s) on {} nodes", jobs.size(), platform.platform.hosts.size());
  engine::SimStats stats = engine::simulate_in_child(platform.platform, jobs);
  for (std::size_t i = 0; i < with_network.size(); ++i) {
    seconds_per_byte[with_network[i].first->id()] = stats.durations_s[i] / kReferenceBytes / tuning::kNetworkEfficiency;
  }
  result.simulated_messages += stats.messages;
  result.simulated_bytes_sent += stats.bytes_sent;
  result.simulated_bytes_received += stats.bytes_received;
  return seconds_per_byte;
}

/// Rounds a size down the way nccl-tests does: whole 4-byte elements, and for operations that split
/// the buffer over ranks a whole number of elements per rank.
double round_size(Op op, double bytes, int ranks) {
  double unit = kFloatBytes;
  if (op == Op::all_gather || op == Op::reduce_scatter || op == Op::alltoall) unit *= ranks;
  return std::floor(bytes / unit) * unit;
}

}  // namespace

std::vector<double> size_sweep(double min_bytes, double max_bytes, double factor) {
  if (min_bytes < 1) throw InputError("-b: the smallest size must be at least 1 byte");
  if (max_bytes < min_bytes) throw InputError("-e: the largest size is below the smallest (-b)");
  if (factor < 2) throw InputError("-f: the size factor must be at least 2");
  std::vector<double> sizes;
  for (double size = min_bytes; size <= max_bytes * (1 + 1e-12); size *= factor) sizes.push_back(size);
  return sizes;
}

BenchmarkResult run_benchmark(const CommLayout& layout, const BenchmarkRequest& request) {
  if (layout.ranks < 2) throw InputError("a collective needs at least 2 GPUs");
  BenchmarkResult result;
  const auto list = candidates(layout, request.op, request.algorithm, request.protocol,
                               request.fidelity == Fidelity::full);
  const auto net_seconds_per_byte = simulate_network_shapes(layout, request.op, list, result);

  std::vector<double> sizes;
  for (double size : request.sizes_bytes) {
    double rounded = round_size(request.op, size, layout.ranks);
    if (rounded > 0) sizes.push_back(rounded);
  }
  for (double size : sizes) {
    BenchmarkRow row;
    row.size_bytes = size;
    row.count = size / kFloatBytes;
    double best = INFINITY;
    for (const auto& candidate : list) {
      Estimate e = estimate(candidate, request.op, layout, size, net_seconds_per_byte.at(candidate.model->id()));
      if (e.time_s < best) {
        best = e.time_s;
        row.time_s = e.time_s;
        row.latency_s = e.latency_s;
        row.algorithm = candidate.model->id();
        row.protocol = candidate.protocol;
      }
    }
    result.rows.push_back(row);
  }

  if (request.fidelity == Fidelity::full) {
    std::vector<engine::SimJob> jobs;
    std::vector<engine::SimProgram> programs;
    for (const auto& row : result.rows) {
      engine::SimJob job;
      job.is_program = true;
      job.program = *algorithm_model(row.algorithm).full_program(request.op, layout, row.size_bytes);
      programs.push_back(job.program);
      jobs.push_back(std::move(job));
    }
    engine::SimPlatform platform = build_gpu_platform(layout, programs);
    spdlog::info("full fidelity: simulating {} sizes message by message on {} GPUs", jobs.size(), layout.ranks);
    engine::SimStats stats = engine::simulate_in_child(platform, jobs);
    for (std::size_t i = 0; i < result.rows.size(); ++i) {
      result.rows[i].time_s = result.rows[i].latency_s + stats.durations_s[i];
    }
    result.simulated_messages += stats.messages;
    result.simulated_bytes_sent += stats.bytes_sent;
    result.simulated_bytes_received += stats.bytes_received;
  }
  for (auto& row : result.rows) {
    row.algbw_GBps = row.size_bytes / row.time_s / 1e9;
    row.busbw_GBps = row.algbw_GBps * busbw_factor(request.op, layout.ranks);
  }
  return result;
}

}  // namespace fmsim::collectives
