#pragma once
// A task graph for the engine, as plain data: tasks with dependencies, each a fixed delay followed by
// a phase in which flows cross the network while another delay runs beside them. This is what a
// training step lowers to: compute kernels are delays, collectives are latency + NVLink time + flows
// that contend for links, pipeline sends are flows. Nothing here includes SimGrid.
#include <vector>

#include "fmsim/engine/network_sim.hpp"

namespace fmsim::engine {

struct SimTask {
  double delay_s = 0;           ///< phase 1: a fixed time (kernel, latency)
  double overlap_delay_s = 0;   ///< phase 2, alongside the flows (e.g. NVLink part of a collective)
  std::vector<SimFlow> flows;   ///< phase 2: transfers that share links with every other active flow
  std::vector<int> deps;        ///< tasks (indices) that must have finished before this one starts
};

struct SimTaskGraph {
  std::vector<SimTask> tasks;
  /// Run each task in its own actor. The default (one controller waiting on every activity in flight,
  /// with a helper per multi-flow task) is fastest for long chains of few concurrent tasks, as in a
  /// training step; graphs with thousands of concurrent tasks (all nodes writing a checkpoint) need this.
  bool actor_per_task = false;
};

struct TaskTimes {
  std::vector<double> start_s, end_s;  ///< per task
  double makespan_s = 0;
  std::vector<double> link_bytes;      ///< bytes that crossed each platform link
  long long flows = 0;
};

/// Runs the graph (one SimGrid run; see simulate()). Throws InternalError on a cycle or invalid input.
TaskTimes simulate_tasks(const SimPlatform& platform, const SimTaskGraph& graph);

/// simulate_tasks() in a forked child process.
TaskTimes simulate_tasks_in_child(const SimPlatform& platform, const SimTaskGraph& graph);

}  // namespace fmsim::engine
