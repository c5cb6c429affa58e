#pragma once
// What a message-by-message (full fidelity) simulation costs, estimated from its programs before it
// starts, so that `--fidelity full` can say so and refuse what does not fit in memory.
#include <vector>

#include "fmsim/engine/network_sim.hpp"

namespace fmsim::collectives {

/// Engine cost per message and memory per object, fitted to `fmsim collective --fidelity full` runs on
/// this project's 2-core machine with SimGrid 3.32 (benchmarks/full_fidelity_cost.py; docs/performance.md
/// "Full fidelity": ring all_reduce on 128-1,024 GPUs, pairwise alltoall on 128-1,024). SimGrid re-shares
/// bandwidth among the flows active together at every completion, so a message costs more the more flows
/// run beside it: about kFullSecondsPerMessage x sqrt(active flows) on an idle machine (within 2x of those
/// runs; a loaded machine is slower). Memory is within 15 % of every measured peak.
inline constexpr double kFullSecondsPerMessage = 3e-7;
inline constexpr double kFullBytesPerCommAlive = 1536;  ///< a SimGrid comm, its mailbox entry, its activity
inline constexpr double kFullBytesPerActor = 16e3;      ///< an actor (one per rank) with its context
inline constexpr double kFullBaseBytes = 32e6;          ///< the process: catalog, graph, platform
/// Refuse when the estimate exceeds this share of the memory available now.
inline constexpr double kFullMemoryShare = 0.8;

/// Programs are simulated one after the other in one process, all held in memory.
struct FullCost {
  double messages = 0;        ///< sends over every program
  double active_flows = 0;    ///< sends of one step over all ranks, in the widest program
  double peak_in_flight = 0;  ///< comms alive at once in the widest program (sends within the window + receives)
  double program_bytes = 0;   ///< the programs themselves
  double ranks = 0;
  double seconds = 0;
  double memory_bytes() const;
  void add(const engine::SimProgram& program);
};

/// MemAvailable from /proc/meminfo; 0 when unknown.
double available_memory_bytes();

}  // namespace fmsim::collectives
