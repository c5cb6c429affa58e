// Pairwise: every rank sends directly to its peers, all at once (NCCL alltoall = p sends + p receives
// in one group; nccl-tests sendrecv = each rank to the next). The network part pays a per-peer cost,
// the mechanism that makes alltoall bandwidth fall as the number of remote peers grows.
#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

class Pairwise final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::pairwise; }

  std::optional<std::string> unsupported(Op op, const CommLayout&) const override {
    if (op != Op::alltoall && op != Op::sendrecv) return "pairwise implements alltoall and sendrecv";
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::simple}; }

  TrafficShape shape(Op op, const CommLayout& layout) const override {
    TrafficShape shape;
    const double p = layout.ranks, g = layout.ranks_per_island;
    if (op == Op::alltoall) {
      shape.nvlink_bytes_per_rank = (g - 1) / p;
      if (layout.islands > 1) {
        shape.net_bytes_per_island = g * (p - g) / p;
        shape.pattern = NetPattern::all_pairs;
      }
    } else {
      // Each rank sends S to the next rank. Inside a domain that is one NVLink transfer; across domains
      // one rank's flow, bound to its own rail: spread over the island's node aggregates, which hold
      // one rail per rank, it weighs g x S.
      shape.nvlink_bytes_per_rank = g > 1 ? 1.0 : 0.0;
      if (layout.islands > 1) {
        shape.net_bytes_per_island = g;
        shape.pattern = NetPattern::ring_next;
      }
    }
    return shape;
  }

  double latency_s(Op op, const CommLayout& layout, Protocol protocol) const override {
    double hop = layout.islands > 1
                     ? tuning::network_step_latency_s(Algorithm::ring, protocol, layout.net_message_latency_s)
                     : tuning::nvlink_step_latency_s(Algorithm::ring, protocol);
    double peers = op == Op::alltoall ? layout.ranks - layout.ranks_per_island : 0.0;
    return tuning::base_latency_s(id(), protocol) + hop + peers * tuning::kAlltoallPerPeerOverhead_s;
  }

  bool simulates_full(Op op) const override {
    (void)op;
    return true;
  }

  std::optional<engine::SimProgram> full_program(Op op, const CommLayout& layout, double bytes) const override {
    const int p = layout.ranks;
    engine::SimProgram program;
    program.rank_host.resize(p);
    program.steps.assign(p, std::vector<engine::SimStep>(1));
    for (int rank = 0; rank < p; ++rank) {
      program.rank_host[rank] = rank;
      auto& ops = program.steps[rank][0].ops;
      if (op == Op::alltoall) {
        for (int peer = 0; peer < p; ++peer) {
          if (peer == rank) continue;
          ops.push_back({true, peer, bytes / p});
          ops.push_back({false, peer, bytes / p});
        }
      } else {
        ops.push_back({true, (rank + 1) % p, bytes});
        ops.push_back({false, (rank + p - 1) % p, bytes});
      }
    }
    return program;
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_pairwise() { return std::make_unique<Pairwise>(); }

}  // namespace fmsim::collectives
