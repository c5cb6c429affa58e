// Ring: NCCL's default for large messages. Every rank sends its successor 2(p-1)/p x S (all_reduce)
// or (p-1)/p x S (all_gather, reduce_scatter) over 2(p-1) or p-1 steps. Channels enter and leave
// each island on the same rail (NCCL builds rings NET -> GPUs -> NET with one NIC), so islands
// exchange rail-aligned traffic with the next island.
#include <cmath>

#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

double ring_factor(Op op, int ranks) {
  const double p = ranks;
  switch (op) {
    case Op::all_reduce: return 2.0 * (p - 1) / p;
    case Op::all_gather: case Op::reduce_scatter: return (p - 1) / p;
    default: return 1.0;  // broadcast, reduce: a pipelined chain moves S through every rank
  }
}

int ring_steps(Op op, int ranks) {
  switch (op) {
    case Op::all_reduce: return 2 * (ranks - 1);
    case Op::all_gather: case Op::reduce_scatter: return ranks - 1;
    default: return ranks;
  }
}

class Ring final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::ring; }

  std::optional<std::string> unsupported(Op op, const CommLayout&) const override {
    if (op == Op::alltoall || op == Op::sendrecv) return "ring does not implement " + to_string(op);
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::ll, Protocol::ll128, Protocol::simple}; }

  TrafficShape shape(Op op, const CommLayout& layout) const override {
    TrafficShape shape;
    double factor = ring_factor(op, layout.ranks);
    shape.nvlink_bytes_per_rank = layout.ranks_per_island > 1 ? factor : 0.0;
    if (layout.islands > 1) {
      shape.net_bytes_per_island = factor;
      shape.pattern = NetPattern::ring_next;
    }
    return shape;
  }

  double latency_s(Op op, const CommLayout& layout, Protocol protocol) const override {
    const bool multi = layout.islands > 1;
    const int steps = ring_steps(op, layout.ranks);
    const int inter = multi ? (op == Op::all_reduce ? 2 * (layout.islands - 1) : layout.islands - 1) : 0;
    double intra = tuning::nvlink_step_latency_s(id(), protocol);
    if (multi) intra = std::max(intra, tuning::ring_net_overhead_s(layout.amd_host, protocol));
    double net = tuning::network_step_latency_s(id(), protocol, layout.net_message_latency_s);
    double latency = tuning::base_latency_s(id(), protocol) + (steps - inter) * intra + inter * net;
    if (multi && op == Op::all_reduce && protocol == Protocol::simple) {
      latency *= tuning::kRingSimpleMultiNodeLatencyFactor;
    }
    return latency;
  }

  // One step of one channel is one network message of S / (p x channels) bytes, and a ring has one
  // step in flight per channel: below aws-ofi-nccl's stripe size a message uses one NIC of the rail.
  double rail_use(Op, const CommLayout& layout, double bytes) const override {
    if (layout.islands < 2) return 1.0;
    return tuning::rail_use(layout, bytes / (layout.ranks * tuning::kChannels), tuning::kChannels);
  }

  bool simulates_full(Op op) const override {
    return op == Op::all_reduce || op == Op::all_gather || op == Op::reduce_scatter;
  }

  std::optional<engine::SimProgram> full_program(Op op, const CommLayout& layout, double bytes) const override {
    if (op != Op::all_reduce && op != Op::all_gather && op != Op::reduce_scatter) return std::nullopt;
    const int p = layout.ranks, g = layout.ranks_per_island;
    // Rotating the island-local order by c gives channel c a distinct rail on every island crossing;
    // on one island every rotation is the same cycle, so one channel carries everything.
    const int channels = layout.islands > 1 ? g : 1;
    std::vector<std::vector<int>> successor(channels, std::vector<int>(p)), predecessor = successor;
    for (int c = 0; c < channels; ++c) {
      std::vector<int> order;
      for (const auto& island : layout.island_ranks) {
        for (int j = 0; j < g; ++j) order.push_back(island[(c + j) % g]);
      }
      for (int k = 0; k < p; ++k) {
        successor[c][order[k]] = order[(k + 1) % p];
        predecessor[c][order[(k + 1) % p]] = order[k];
      }
    }
    const int steps = ring_steps(op, p);
    const double chunk = bytes / p / channels;
    // Crossing the network, a chunk costs its bytes over the NICs its messages keep busy.
    const double net_chunk = chunk / rail_use(op, layout, bytes);
    auto size_to = [&](int rank, int peer) {
      return layout.island_of_rank(peer) != layout.island_of_rank(rank) ? net_chunk : chunk;
    };
    engine::SimProgram program;
    program.rank_host.resize(p);
    program.steps.assign(p, std::vector<engine::SimStep>(1));
    for (int rank = 0; rank < p; ++rank) {
      program.rank_host[rank] = rank;
      engine::SimStep& step = program.steps[rank][0];  // the same every step: stored once, repeated
      for (int c = 0; c < channels; ++c) {
        step.ops.push_back({true, successor[c][rank], size_to(rank, successor[c][rank])});
        step.ops.push_back({false, predecessor[c][rank], size_to(rank, predecessor[c][rank])});
      }
      step.repeat = steps;
    }
    return program;
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_ring() { return std::make_unique<Ring>(); }

}  // namespace fmsim::collectives
