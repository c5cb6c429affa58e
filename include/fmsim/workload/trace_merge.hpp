#pragma once
// Several training jobs on one fabric as one trace (`fmsim contention`, training/shared_fabric.hpp): each
// job's full trace (every rank traced) with its ranks, communicators and nodes renumbered after the jobs
// before it, repeated a number of steps back to back, so the engine replays all jobs at once and their
// flows share whatever links their placements have in common.
#include <vector>

#include "fmsim/workload/trace.hpp"

namespace fmsim::workload {

struct MergedTrace {
  Trace trace;
  std::vector<int> job_of_node;   ///< per node of `trace`: the index of the job it came from
  std::vector<int> step_of_node;  ///< per node: which of its job's repeated steps (0-based)
  std::vector<int> first_rank;    ///< per job: its rank 0 in the merged numbering
};

/// Merges `traces` (each traced for every rank, on GPUs no other job uses), trace i repeated `steps[i]`
/// times: each repeated step's first nodes on a rank wait for the previous step's last nodes on that rank.
/// InputError for a symmetric trace (its untraced ranks would hide the shared links) or a GPU used twice.
MergedTrace merge_traces(const std::vector<Trace>& traces, const std::vector<int>& steps);

}  // namespace fmsim::workload
