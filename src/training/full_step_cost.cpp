// Full-fidelity step cost (full_step_cost.hpp).
#include "fmsim/training/full_step_cost.hpp"

#include <spdlog/spdlog.h>

#include "fmsim/collectives/full_cost.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/units/format.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::training {

FullStepCost full_step_cost(double trace_nodes, double bytes_per_node) {
  FullStepCost cost;
  cost.trace_nodes = trace_nodes;
  cost.memory_bytes = kFullStepBaseBytes + trace_nodes * bytes_per_node;
  cost.seconds = trace_nodes * kFullSecondsPerTraceNode;
  return cost;
}

FullStepCost estimate_full_step(const workload::Scenario& scenario, const std::vector<int>& rank_gpu, double bytes_per_node) {
  const workload::Trace symmetric = workload::build_trace(scenario, rank_gpu, false);
  const double ranks = symmetric.ranks.empty() ? 1.0 : static_cast<double>(symmetric.ranks.size());
  return full_step_cost(static_cast<double>(symmetric.nodes.size()) * scenario.parallelism.world() / ranks, bytes_per_node);
}

void check_full_step_fits(const FullStepCost& cost, const std::string& what) {
  const double available = collectives::available_memory_bytes();
  spdlog::info("{}: full fidelity: about {:.0f} trace nodes, {} and {:.0f} s (estimate)", what, cost.trace_nodes,
               units::format_bytes(cost.memory_bytes), cost.seconds);
  if (available > 0 && cost.memory_bytes > collectives::kFullMemoryShare * available) {
    throw InputError(what + ": --fidelity full would hold about " + units::format_bytes(cost.memory_bytes) + " (" +
                     std::to_string(static_cast<long long>(cost.trace_nodes)) + " trace nodes of every rank) but " +
                     units::format_bytes(available) +
                     " is available: use the fast mode (the default), a smaller global batch, or a larger machine");
  }
  if (cost.seconds > 60) spdlog::warn("{}: full fidelity will take about {:.0f} s; the fast mode answers in under a second", what, cost.seconds);
}

}  // namespace fmsim::training
