#pragma once
// What a full-fidelity training step (every rank traced and replayed) costs, estimated before the trace is
// built, so that `fmsim run --fidelity full`, `fmsim contention` and scenario jobs of `fmsim cluster` say so
// and refuse what cannot fit in memory instead of being killed. The trace of every rank grows with the
// work of the step (global batch x layers x TP x CP ranks), not with the data-parallel size: Llama-3.1-405B
// at a global batch of 512 is 51.7 million trace nodes at 256 GPUs and at 1,024 alike.
#include <string>

#include <vector>

#include "fmsim/workload/scenario.hpp"

namespace fmsim::training {

/// Memory and time per trace node of a full-fidelity step on this project's 2-core x86_64 machine
/// (2026-11-27; docs/performance.md "Full fidelity of a training step"): Llama-3.1-405B on 256 H100 at
/// global batches 64 and 128, 6.5 and 12.9 million trace nodes, peak resident 3.84 and 7.61 GB (594 and
/// 588 bytes per node: the trace, its lowering to tasks, the merged task graph and the engine's copy in
/// the forked simulation), 71 and 144 s (11 us per node).
inline constexpr double kFullBytesPerTraceNode = 600;
inline constexpr double kFullSecondsPerTraceNode = 11e-6;
inline constexpr double kFullStepBaseBytes = 64e6;
/// Writing the full trace as JSON (`fmsim trace --fidelity full`) holds its JSON document: 4.92 GB peak for
/// 1.63 million nodes (the same model at a global batch of 16), 3,020 bytes per node.
inline constexpr double kFullTraceJsonBytesPerNode = 3020;

struct FullStepCost {
  double trace_nodes = 0;
  double memory_bytes = 0;
  double seconds = 0;
};

/// The full trace's size for `scenario` on `rank_gpu`, from the symmetric trace of the same step, built
/// here (each of its ranks stands for world / ranks ranks that do the same work).
FullStepCost estimate_full_step(const workload::Scenario& scenario, const std::vector<int>& rank_gpu,
                                double bytes_per_node = kFullBytesPerTraceNode);
/// The same for a trace of every rank with `trace_nodes` nodes.
FullStepCost full_step_cost(double trace_nodes, double bytes_per_node = kFullBytesPerTraceNode);

/// Logs the estimate; InputError naming `what` when it exceeds the share of memory available now.
void check_full_step_fits(const FullStepCost& cost, const std::string& what);

}  // namespace fmsim::training
