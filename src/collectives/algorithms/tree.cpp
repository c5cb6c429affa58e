// Tree: NCCL's double binary tree between islands with a chain inside each island (all_reduce only).
// Latency grows with log2(islands) instead of the rank count; bandwidth is that of a pipeline whose
// stages must fill before it streams.
#include <cmath>

#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
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
    // Double binary tree: each island is inner in one tree and a leaf in the other, 2 (I-1)/I x S out.
    shape.net_bytes_per_island = 2.0 * (islands - 1) / islands;
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
