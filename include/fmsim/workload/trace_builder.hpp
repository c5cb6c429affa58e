#pragma once
// Lowers a scenario into the per-rank op graph of one training step (trace.hpp): Megatron's pipeline
// schedule, per-layer kernels with FLOPs and bytes, TP/SP, CP, EP collectives, pipeline sends, DP
// gradient reduce-scatter and parameter all-gather in buckets, and the optimizer step.
#include <vector>

#include "fmsim/workload/scenario.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::workload {

/// Megatron rank order tp-cp-dp-pp: rank = tp_r + tp (cp_r + cp (dp_r + dp pp_r)).
struct RankCoords {
  int tp = 0, cp = 0, dp = 0, pp = 0;
};
RankCoords coords_of(const Parallelism& p, int rank);
int rank_of(const Parallelism& p, const RankCoords& c);

/// The scenario as a trace embeds it: `resolved` with the cluster expanded in place (its topology file
/// merged with the overrides) and a model config path made absolute, so that the trace replays from
/// any working directory.
nlohmann::json self_contained_scenario(const Scenario& scenario);

/// The totals a trace carries for its scenario: tokens per step (global batch x sequence) and the
/// model FLOPs per step (Megatron accounting, for MFU).
struct StepTotals {
  double tokens = 0;
  double model_flops = 0;
};
StepTotals step_totals(const Scenario& scenario);

/// `all_ranks`: every rank (the referee); else one representative per pipeline stage (tp, cp, dp
/// rank 0), which stands for the others by symmetry.
Trace build_trace(const Scenario& scenario, const std::vector<int>& rank_gpu, bool all_ranks);

}  // namespace fmsim::workload
