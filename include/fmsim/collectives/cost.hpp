#pragma once
// NCCL-like choice of algorithm and protocol for one collective, and its cost split into the parts a
// simulation needs: closed-form latency and NVLink time, and the bytes each GPU puts on the network.
// Used by `fmsim collective` (benchmark.cpp) and by the training replay.
#include <optional>
#include <vector>

#include "fmsim/collectives/algorithm.hpp"

namespace fmsim::collectives {

struct Candidate {
  const AlgorithmModel* model = nullptr;
  Protocol protocol = Protocol::simple;
};

/// Algorithms and protocols that can run `op` on `layout`, optionally forced. Throws InputError when
/// none (or the forced one) can run it.
std::vector<Candidate> candidates(const CommLayout& layout, Op op, std::optional<Algorithm> algorithm,
                                  std::optional<Protocol> protocol);

/// Payload bytes per wire byte of a protocol (LL sends a flag with every 4 bytes of data, LL128 with
/// every 120 of 128); a message-by-message simulation sends bytes / this factor.
double protocol_bandwidth_factor(Protocol protocol);

struct Estimate {
  double time_s = 0;      ///< latency + bandwidth time + pipeline fill
  double latency_s = 0;
  double bandwidth_s = 0;
  double fill_s = 0;
  double nvlink_s = 0;    ///< the NVLink part of bandwidth_s, slowed by the protocol
  double net_s = 0;       ///< the network part, likewise, and divided by rail_use
  double rail_use = 1;    ///< fraction of each GPU's NICs the messages keep busy (AlgorithmModel::rail_use)
  TrafficShape shape;
};

/// Cost of one candidate at `bytes`, given the network seconds per byte of collective size.
/// Network time per wire byte is stretched by this when each network chunk costs a fixed time beyond
/// its wire time (TrafficShape::net_chunk_overhead_s): 1 + overhead / (chunk bytes / rail rate).
double net_chunk_factor(const TrafficShape& shape, const CommLayout& layout);

Estimate estimate(const Candidate& candidate, Op op, const CommLayout& layout, double bytes, double net_seconds_per_byte);

struct CollectiveCost {
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  double time_s = 0;              ///< alone on an idle fabric, rails at the achieved efficiency
  double fixed_s = 0;             ///< latency + pipeline fill (+ NVLink time when phases add)
  double nvlink_s = 0;            ///< NVLink time when it runs beside the network phase, else 0
  double net_bytes_per_gpu = 0;   ///< bytes each GPU sends over its rail
  NetPattern pattern = NetPattern::none;
};

/// The cheapest algorithm for `op` of `bytes` on `layout`, the network priced per GPU rail (each rank
/// sends through its own NICs, rail-aligned), as NCCL's tuner would rank them.
CollectiveCost collective_cost(const CommLayout& layout, Op op, double bytes);

}  // namespace fmsim::collectives
