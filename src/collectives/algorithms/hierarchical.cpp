// Hierarchical: a ring reduce-scatter inside each NVLink domain, a ring all-reduce between domains
// among the GPUs that hold the same shard (rail-aligned), a ring all-gather inside each domain; the
// phases run one after the other (as in framework-level hierarchical all-reduce, not pipelined).
#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

/// Appends a ring phase over `members` (in order): `steps` steps, each sending `chunk` bytes.
void ring_phase(engine::SimProgram& program, const std::vector<int>& members, int steps, double chunk) {
  const int n = static_cast<int>(members.size());
  if (n < 2) return;
  for (int k = 0; k < n; ++k) {
    int rank = members[k], next = members[(k + 1) % n], previous = members[(k + n - 1) % n];
    if (steps < 1) continue;
    engine::SimStep step;
    step.ops.push_back({true, next, chunk});
    step.ops.push_back({false, previous, chunk});
    step.repeat = steps;
    program.steps[rank].push_back(step);
  }
}

class Hierarchical final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::hierarchical; }

  std::optional<std::string> unsupported(Op op, const CommLayout& layout) const override {
    if (op != Op::all_reduce && op != Op::all_gather && op != Op::reduce_scatter) {
      return "hierarchical implements all_reduce, all_gather and reduce_scatter";
    }
    if (layout.islands < 2 || layout.ranks_per_island < 2) {
      return "hierarchical needs several NVLink domains with several GPUs each";
    }
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::simple}; }

  TrafficShape shape(Op op, const CommLayout& layout) const override {
    TrafficShape shape;
    const double g = layout.ranks_per_island, islands = layout.islands;
    const double reductions = op == Op::all_reduce ? 2.0 : 1.0;
    shape.nvlink_bytes_per_rank = reductions * (g - 1) / g;
    shape.net_bytes_per_island = reductions * (islands - 1) / islands;
    shape.pattern = NetPattern::ring_next;
    shape.phases_add = true;
    return shape;
  }

  double latency_s(Op op, const CommLayout& layout, Protocol protocol) const override {
    const double reductions = op == Op::all_reduce ? 2.0 : 1.0;
    double intra = tuning::nvlink_step_latency_s(Algorithm::ring, protocol);
    double net = tuning::network_step_latency_s(Algorithm::ring, protocol, layout.net_message_latency_s);
    return tuning::base_latency_s(id(), protocol) +
           reductions * ((layout.ranks_per_island - 1) * intra + (layout.islands - 1) * net);
  }

  // The inter-domain phase moves S / (g x domains) per GPU and step, split over the GPU's channels.
  double rail_use(Op, const CommLayout& layout, double bytes) const override {
    return tuning::rail_use(layout, bytes / (layout.islands * tuning::kChannels), tuning::kChannels);
  }

  bool simulates_full(Op op) const override {
    (void)op;
    return true;
  }

  std::optional<engine::SimProgram> full_program(Op op, const CommLayout& layout, double bytes) const override {
    const int g = layout.ranks_per_island, islands = layout.islands;
    engine::SimProgram program;
    program.rank_host.resize(layout.ranks);
    for (int rank = 0; rank < layout.ranks; ++rank) program.rank_host[rank] = rank;
    program.steps.assign(layout.ranks, {});
    // Shard position j of every island forms one inter-domain ring.
    std::vector<std::vector<int>> peers(g);
    for (const auto& island : layout.island_ranks) {
      for (int j = 0; j < g; ++j) peers[j].push_back(island[j]);
    }
    const double intra_chunk = bytes / g, inter_chunk = bytes / g / islands;
    if (op == Op::all_reduce || op == Op::reduce_scatter) {
      for (const auto& island : layout.island_ranks) ring_phase(program, island, g - 1, intra_chunk);
    }
    const int inter_steps = op == Op::all_reduce ? 2 * (islands - 1) : islands - 1;
    const double inter_cost = inter_chunk / rail_use(op, layout, bytes);
    for (const auto& ring : peers) ring_phase(program, ring, inter_steps, inter_cost);
    if (op == Op::all_reduce || op == Op::all_gather) {
      for (const auto& island : layout.island_ranks) ring_phase(program, island, g - 1, intra_chunk);
    }
    return program;
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_hierarchical() { return std::make_unique<Hierarchical>(); }

}  // namespace fmsim::collectives
