#pragma once
// One collective algorithm: which operations and hardware it supports, the traffic it puts on NVLink
// and on the network per byte of collective size, its latency, and (for the referee mode) the full
// message-by-message program. Implementations live in src/collectives/algorithms/, one per file.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "fmsim/collectives/collective.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/engine/network_sim.hpp"

namespace fmsim::collectives {

/// How islands exchange their network traffic (node k of one island to node k of another, rail-aligned).
enum class NetPattern {
  none,        ///< one island: no network traffic
  ring_next,   ///< island i -> island i+1
  all_pairs,   ///< island i -> every other island, equal shares
};

/// Traffic per byte of collective size S (nccl-tests "size"; for alltoall, the bytes each rank sends).
struct TrafficShape {
  double nvlink_bytes_per_rank = 0;  ///< x S: the busiest GPU's NVLink bytes in its busiest direction
  bool nvlink_is_nvls = false;       ///< NVLS efficiency instead of copy efficiency
  double net_bytes_per_island = 0;   ///< x S: bytes each island sends over the network
  NetPattern pattern = NetPattern::none;
  bool phases_add = false;           ///< NVLink and network phases run one after the other
  int fill_stages = 0;               ///< pipeline stages to fill (pipelined tree-like algorithms)
  /// Bytes F of one loop of an NVLS kernel (ranks of the domain x NVLS channels x chunk): NCCL shrinks
  /// the chunk for smaller messages, so the loop's fill costs the time of F S / (S + F) bytes (S for
  /// small S, F for large S). The fill is the larger of this and fill_stages x the time of
  /// min(S, kChannels x kPipelineChunkBytes). 0: no such loop.
  double fill_loop_bytes = 0;
  double net_chunk_overhead_s = 0;   ///< fixed cost of each network chunk beyond its wire time
};

class AlgorithmModel {
 public:
  virtual ~AlgorithmModel() = default;
  virtual Algorithm id() const = 0;
  /// Why this algorithm cannot run `op` on this layout, or nullopt when it can.
  virtual std::optional<std::string> unsupported(Op op, const CommLayout& layout) const = 0;
  virtual std::vector<Protocol> protocols() const = 0;
  virtual TrafficShape shape(Op op, const CommLayout& layout) const = 0;
  virtual double latency_s(Op op, const CommLayout& layout, Protocol protocol) const = 0;
  /// Fraction of each GPU's NICs its network messages keep busy at collective size `bytes`
  /// (tuning::rail_use); the network time is divided by it. 1 unless messages are small.
  virtual double rail_use(Op op, const CommLayout& layout, double bytes) const {
    (void)op, (void)layout, (void)bytes;
    return 1.0;
  }
  /// Whether full_program() implements `op` (cheap; full_program itself builds every message).
  virtual bool simulates_full(Op op) const {
    (void)op;
    return false;
  }
  /// The referee: every step of every rank as a message. Returns nullopt if not implemented.
  virtual std::optional<engine::SimProgram> full_program(Op op, const CommLayout& layout, double bytes) const {
    (void)op, (void)layout, (void)bytes;
    return std::nullopt;
  }
};

/// Every algorithm, in NCCL's id order (ties in cost go to the earlier one).
const std::vector<std::unique_ptr<AlgorithmModel>>& algorithm_registry();
const AlgorithmModel& algorithm_model(Algorithm algorithm);

/// Network bytes (x S) the busiest island sends (and receives) in an all_reduce over NCCL's double binary
/// tree of `islands` nodes: each tree carries S/2 up to the root and back down, so a node moves S/2 per
/// tree edge it touches; the time follows the node with the most edges over both trees (2 S from 4
/// nodes up: inner with two children in one tree, leaf in the other), not the average 2 (I-1)/I S.
double double_binary_tree_bytes_per_island(int islands);

std::unique_ptr<AlgorithmModel> make_ring();
std::unique_ptr<AlgorithmModel> make_tree();
std::unique_ptr<AlgorithmModel> make_nvls();
std::unique_ptr<AlgorithmModel> make_nvls_tree();
std::unique_ptr<AlgorithmModel> make_hierarchical();
std::unique_ptr<AlgorithmModel> make_pairwise();

}  // namespace fmsim::collectives
