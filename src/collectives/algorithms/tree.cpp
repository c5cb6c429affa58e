// Tree: NCCL's double binary tree between islands with a chain inside each island (all_reduce only).
// Latency grows with log2(islands) instead of the rank count; bandwidth is that of a pipeline whose
// stages must fill before it streams.
#include <algorithm>
#include <cmath>

#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

/// Edges of `rank` in NCCL's binary tree over n ranks (trees.cc ncclGetBtree): a rank's level is its
/// lowest set bit; the root (rank 0) has one child; a parent is found by clearing that bit and setting
/// the next one (or just clearing it past the end).
int btree_edges(int n, int rank) {
  int bit = 1;
  while (bit < n && !(bit & rank)) bit <<= 1;
  if (rank == 0) return n > 1 ? 1 : 0;
  int edges = 1;  // the parent
  const int low = bit >> 1;
  if (low > 0) {
    ++edges;  // rank - low is always in range
    for (int step = low; step > 0; step >>= 1) {
      if (rank + step < n) {
        ++edges;
        break;
      }
    }
  }
  return edges;
}

}  // namespace

double double_binary_tree_bytes_per_island(int islands) {
  // The second tree mirrors the first (even counts) or shifts it by one (odd counts), ncclGetDtree.
  int busiest = 0;
  for (int r = 0; r < islands; ++r) {
    const int second = islands % 2 == 0 ? islands - 1 - r : (r - 1 + islands) % islands;
    busiest = std::max(busiest, btree_edges(islands, r) + btree_edges(islands, second));
  }
  return busiest / 2.0;
}

namespace {

class Tree final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::tree; }

  std::optional<std::string> unsupported(Op op, const CommLayout& layout) const override {
    if (op != Op::all_reduce) return "tree implements all_reduce only";
    if (layout.islands < 2) return "tree needs more than one NVLink domain";
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::ll, Protocol::ll128, Protocol::simple}; }

  TrafficShape shape(Op, const CommLayout& layout) const override {
    TrafficShape shape;
    const double islands = layout.islands;
    // Chain: a middle GPU forwards S towards the root and S back down.
    shape.nvlink_bytes_per_rank = layout.ranks_per_island > 1 ? 2.0 : 0.0;
    shape.net_bytes_per_island = double_binary_tree_bytes_per_island(layout.islands);
    shape.pattern = NetPattern::ring_next;
    shape.fill_stages = 2 * (layout.ranks_per_island - 1 + static_cast<int>(std::ceil(std::log2(islands))));
    return shape;
  }

  double latency_s(Op, const CommLayout& layout, Protocol protocol) const override {
    double intra = tuning::nvlink_step_latency_s(id(), protocol);
    double net = tuning::network_step_latency_s(id(), protocol, layout.net_message_latency_s);
    return tuning::base_latency_s(id(), protocol) +
           2.0 * ((layout.ranks_per_island - 1) * intra + std::log2(static_cast<double>(layout.islands)) * net);
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_tree() { return std::make_unique<Tree>(); }

}  // namespace fmsim::collectives
