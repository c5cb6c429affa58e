// Chooses the algorithm and protocol per size like NCCL's tuner (lowest estimated time), and computes
// time = closed-form latency + bandwidth time (+ pipeline fill), where the network part of the
// bandwidth time comes from the engine: once per traffic shape in fast mode (flow times scale
// linearly with bytes, so one simulation at a reference size serves every size), or from every
// message of every size in full mode.
#include "fmsim/collectives/benchmark.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include <spdlog/spdlog.h>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/full_cost.hpp"
#include "fmsim/collectives/platform.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/units/format.hpp"

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
  std::vector<std::size_t> simulated;  // index in with_network of each job
  for (std::size_t i = 0; i < with_network.size(); ++i) {
    const auto& [model, shape] = with_network[i];
    engine::SimJob job;
    job.flows = pattern_flows(platform, layout, shape.pattern, shape.net_bytes_per_island * kReferenceBytes);
    // All-pairs traffic (alltoall) is timed by its most loaded link: every pair's transfer starts at once
    // and the per-GPU flows are many and symmetric, so the links share them as a fluid (what the
    // message-by-message referee gives, within 0.01 % on every placement tried). Simulated as aggregate
    // flows between leaf groups, max-min sharing let the lightly loaded group pairs finish first and left
    // the bottleneck under-used at the end: 12-20 % slow on a scattered 128-GPU alltoall (issue #28).
    if (shape.pattern == NetPattern::all_pairs || job.flows.size() > kMaxSimulatedShapeFlows) {
      spdlog::info("{} traffic shape: {} flows between leaf groups, timed by its bottleneck link",
                   to_string(model->id()), job.flows.size());
      seconds_per_byte[model->id()] =
          bottleneck_time_s(platform.platform, job.flows) / kReferenceBytes / tuning::kNetworkEfficiency;
      continue;
    }
    jobs.push_back(std::move(job));
    simulated.push_back(i);
  }
  if (jobs.empty()) return seconds_per_byte;
  spdlog::info("simulating {} network traffic shape(s) on {} nodes", jobs.size(), platform.platform.hosts.size());
  engine::SimStats stats = engine::simulate_in_child(platform.platform, jobs);
  for (std::size_t j = 0; j < simulated.size(); ++j) {
    seconds_per_byte[with_network[simulated[j]].first->id()] = stats.durations_s[j] / kReferenceBytes / tuning::kNetworkEfficiency;
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

/// The message-by-message program of a row's algorithm and protocol (LL/LL128 send their wire bytes);
/// empty where the algorithm has none (tree, NVLS, NVLS-tree).
std::optional<engine::SimProgram> full_program_of(const CommLayout& layout, Op op, const BenchmarkRow& row) {
  const AlgorithmModel& model = algorithm_model(row.algorithm);
  if (!model.simulates_full(op)) return std::nullopt;
  return model.full_program(op, layout, row.size_bytes / protocol_bandwidth_factor(row.protocol));
}

/// What a message-by-message simulation will cost, said before it starts; refused (InputError) when its
/// memory estimate exceeds what the machine has available. Each program is built, measured and dropped,
/// so that the refusal comes before the programs of every size are held at once.
void check_full_cost(const CommLayout& layout, Op op, const std::vector<BenchmarkRow>& rows) {
  FullCost cost;
  for (const auto& row : rows) {
    if (auto program = full_program_of(layout, op, row)) cost.add(*program);
  }
  if (cost.messages == 0) return;
  const double available_bytes = available_memory_bytes();
  if (available_bytes > 0 && cost.memory_bytes() > kFullMemoryShare * available_bytes) {
    throw InputError("--fidelity full on " + std::to_string(layout.ranks) + " GPUs would need about " +
                     units::format_bytes(cost.memory_bytes()) + " (" + fmt::format("{:.3g}", cost.messages) +
                     " messages, up to " + fmt::format("{:.3g}", cost.peak_in_flight) + " in flight) and this machine has " +
                     units::format_bytes(available_bytes) + " available: use the fast mode, fewer GPUs (--gpus) or "
                     "fewer sizes (-b/-e/-f)");
  }
  // Said before it starts, on stderr without -v: what the simulation will cost.
  spdlog::warn("full fidelity on {} GPUs: {:.3g} messages, about {} and {} (estimate){}", layout.ranks, cost.messages,
               units::format_time(cost.seconds), units::format_bytes(cost.memory_bytes()),
               cost.seconds > 60 ? "; the fast mode answers in under a second" : "");
}

/// Full fidelity: the tuner's choice of each row (the same as in fast mode) is re-timed message by
/// message where its algorithm has a program, sending the protocol's wire bytes; the LL throughput cap
/// still applies. Rows whose algorithm has no program (tree, NVLS, NVLS-tree) keep the fast-mode time
/// and say so (row.simulated = false, and a warning naming them).
void simulate_full_rows(const CommLayout& layout, const BenchmarkRequest& request, BenchmarkResult& result) {
  check_full_cost(layout, request.op, result.rows);
  std::vector<engine::SimJob> jobs;
  std::vector<engine::SimProgram> programs;
  std::vector<std::size_t> simulated_rows;
  std::vector<std::string> kept;
  std::vector<Algorithm> routed;
  for (std::size_t i = 0; i < result.rows.size(); ++i) {
    auto& row = result.rows[i];
    auto program = full_program_of(layout, request.op, row);
    row.simulated = program.has_value();
    if (!program) {
      const std::string name = to_string(row.algorithm) + "/" + to_string(row.protocol);
      if (std::find(kept.begin(), kept.end(), name) == kept.end()) kept.push_back(name);
      continue;
    }
    engine::SimJob job;
    job.is_program = true;
    job.program = std::move(*program);
    // Every size of one algorithm has the same peers: its first program gives the platform its routes.
    if (std::find(routed.begin(), routed.end(), row.algorithm) == routed.end()) {
      routed.push_back(row.algorithm);
      programs.push_back(job.program);
    }
    jobs.push_back(std::move(job));
    simulated_rows.push_back(i);
  }
  if (!kept.empty()) {
    std::string names;
    for (const auto& name : kept) names += (names.empty() ? "" : ", ") + name;
    spdlog::warn("--fidelity full: {} {} no message-level program; those sizes keep the fast-mode time "
                 "(marked 'fast' in the table, simulated: false in the JSON)",
                 names, kept.size() == 1 ? "has" : "have");
  }
  if (jobs.empty()) return;
  engine::SimPlatform platform = build_gpu_platform(layout, programs);
  spdlog::info("full fidelity: simulating {} sizes message by message on {} GPUs", jobs.size(), layout.ranks);
  engine::SimStats stats = engine::simulate_in_child(platform, jobs);
  for (std::size_t j = 0; j < simulated_rows.size(); ++j) {
    auto& row = result.rows[simulated_rows[j]];
    double bandwidth_s = stats.durations_s[j];
    if (row.protocol == Protocol::ll) {
      const double cap_Bps = tuning::ll_max_busbw_Bps(layout.sm_version, layout.amd_host, layout.islands);
      bandwidth_s = std::max(bandwidth_s, row.size_bytes * busbw_factor(request.op, layout.ranks) / cap_Bps);
    }
    row.time_s = row.latency_s + bandwidth_s;
  }
  result.simulated_messages += stats.messages;
  result.simulated_bytes_sent += stats.bytes_sent;
  result.simulated_bytes_received += stats.bytes_received;
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
  const auto list = candidates(layout, request.op, request.algorithm, request.protocol);
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
        // Each nccl-tests operation also pays the per-operation overhead (the same for every candidate).
        row.time_s = e.time_s + tuning::kOperationOverhead_s;
        row.latency_s = e.latency_s + tuning::kOperationOverhead_s;
        row.algorithm = candidate.model->id();
        row.protocol = candidate.protocol;
      }
    }
    result.rows.push_back(row);
  }

  if (request.fidelity == Fidelity::full) simulate_full_rows(layout, request, result);
  for (auto& row : result.rows) {
    row.algbw_GBps = row.size_bytes / row.time_s / 1e9;
    row.busbw_GBps = row.algbw_GBps * busbw_factor(request.op, layout.ranks);
  }
  return result;
}

}  // namespace fmsim::collectives
