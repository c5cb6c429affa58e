// Algorithm/protocol choice and cost of one collective (see cost.hpp).
#include "fmsim/collectives/cost.hpp"

#include <algorithm>
#include <cmath>

#include "fmsim/collectives/tuning.hpp"
#include "fmsim/common/error.hpp"

namespace fmsim::collectives {
double protocol_bandwidth_factor(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return tuning::kLlBandwidthFactor;
    case Protocol::ll128: return tuning::kLl128BandwidthFactor;
    case Protocol::simple: return 1.0;
  }
  return 1.0;
}

double net_chunk_factor(const TrafficShape& shape, const CommLayout& layout) {
  const double chunk_wire_s = tuning::kPipelineChunkBytes / (layout.rail_Bps * tuning::kNetworkEfficiency);
  return 1.0 + shape.net_chunk_overhead_s / chunk_wire_s;
}

std::vector<Candidate> candidates(const CommLayout& layout, Op op, std::optional<Algorithm> algorithm,
                                  std::optional<Protocol> protocol) {
  std::vector<Candidate> out;
  for (const auto& model : algorithm_registry()) {
    if (algorithm && model->id() != *algorithm) continue;
    if (auto why = model->unsupported(op, layout)) {
      if (algorithm) throw InputError("--algo " + to_string(model->id()) + ": " + *why);
      continue;
    }
    for (Protocol p : model->protocols()) {
      if (protocol && p != *protocol) continue;
      out.push_back({model.get(), p});
    }
  }
  if (out.empty()) {
    throw InputError("no algorithm" + std::string(protocol ? " with protocol " + to_string(*protocol) : "") + " can run " +
                     to_string(op) + " on " + std::to_string(layout.ranks) + " GPUs");
  }
  return out;
}

Estimate estimate(const Candidate& candidate, Op op, const CommLayout& layout, double bytes, double net_seconds_per_byte) {
  Estimate e;
  e.shape = candidate.model->shape(op, layout);
  const TrafficShape& shape = e.shape;
  const double slow = protocol_bandwidth_factor(candidate.protocol);
  const double nvlink_Bps = layout.nvlink_Bps * (shape.nvlink_is_nvls ? layout.nvls_efficiency : layout.nvlink_copy_efficiency);
  e.nvlink_s = shape.nvlink_bytes_per_rank * bytes / nvlink_Bps / slow;
  e.rail_use = candidate.model->rail_use(op, layout, bytes);
  e.net_s = net_seconds_per_byte * bytes / slow / e.rail_use * net_chunk_factor(shape, layout);
  double bandwidth_s = shape.phases_add ? e.nvlink_s + e.net_s : std::max(e.nvlink_s, e.net_s);
  if (candidate.protocol == Protocol::ll) {
    double ll_cap = tuning::ll_max_busbw_Bps(layout.sm_version, layout.amd_host, layout.islands);
    bandwidth_s = std::max(bandwidth_s, bytes * busbw_factor(op, layout.ranks) / ll_cap);
  }
  const double staged = shape.fill_stages * std::min(bytes, tuning::kChannels * tuning::kPipelineChunkBytes);
  const double loop = shape.fill_loop_bytes > 0 ? shape.fill_loop_bytes * bytes / (bytes + shape.fill_loop_bytes) : 0.0;
  e.fill_s = bytes > 0 ? bandwidth_s * std::max(staged, loop) / bytes : 0.0;
  e.bandwidth_s = bandwidth_s;
  e.latency_s = candidate.model->latency_s(op, layout, candidate.protocol);
  e.time_s = e.latency_s + bandwidth_s + e.fill_s;
  return e;
}

CollectiveCost collective_cost(const CommLayout& layout, Op op, double bytes) {
  CollectiveCost best;
  best.time_s = INFINITY;
  for (const auto& candidate : candidates(layout, op, std::nullopt, std::nullopt)) {
    const double per_gpu = candidate.model->shape(op, layout).net_bytes_per_island / layout.ranks_per_island;
    Estimate e = estimate(candidate, op, layout, bytes, per_gpu / (layout.rail_Bps * tuning::kNetworkEfficiency));
    if (e.time_s >= best.time_s) continue;
    best.algorithm = candidate.model->id();
    best.protocol = candidate.protocol;
    best.time_s = e.time_s;
    best.pattern = e.shape.pattern;
    // Split the bandwidth time into what the replay simulates (network bytes on rails, slowed like the
    // whole by the protocol) and what it keeps in closed form.
    best.net_bytes_per_gpu = e.shape.pattern == NetPattern::none
                                 ? 0.0
                                 : per_gpu * bytes / protocol_bandwidth_factor(candidate.protocol) / e.rail_use *
                                       net_chunk_factor(e.shape, layout);
    best.fixed_s = e.latency_s + e.fill_s;
    best.nvlink_s = 0;
    if (best.net_bytes_per_gpu <= 0) {
      best.fixed_s += e.bandwidth_s;  // NVLink only (with the LL cap, if any)
    } else if (e.shape.phases_add) {
      best.fixed_s += e.bandwidth_s - e.net_s;
    } else {
      best.nvlink_s = e.nvlink_s;
    }
  }
  return best;
}

}  // namespace fmsim::collectives
