#pragma once
// Several training jobs on one fabric (`fmsim contention`): each job's step simulated alone at its
// placement, then all of them replayed together on the engine (one merged trace, workload/trace_merge.hpp)
// so that their flows share the links their placements have in common (on the rail-optimized fabric: the
// leaf switches' uplinks to the spine, a contended resource where the fabric is oversubscribed). Shorter
// steps are repeated so that every job runs through the longest one's step; a job's shared step time is
// the mean of its repeated steps.
#include <string>
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::training {

struct FabricJob {
  std::string name;
  workload::Trace trace;  ///< traced for every rank (full fidelity), on its own GPUs
};

struct SharedJobResult {
  std::string name;
  double alone_s = 0;   ///< its step on the fabric with no other job
  double shared_s = 0;  ///< its mean step while the others run
  int steps = 0;        ///< steps replayed in the shared run
  double slowdown() const { return alone_s > 0 ? shared_s / alone_s - 1.0 : 0.0; }
};

struct SharedLink {
  std::string name;
  std::vector<int> jobs;   ///< the jobs whose traffic crossed it when each ran alone
  double bytes = 0;        ///< in the shared run
  double utilization = 0;  ///< bytes / (bandwidth x the shared run's time)
};

struct SharedFabricResult {
  std::vector<SharedJobResult> jobs;
  std::vector<SharedLink> shared_links;  ///< links more than one job used, busiest first
  double shared_run_s = 0;               ///< simulated time of the shared run
  long long flows = 0;
};

/// Simulates the jobs alone and together. At most `max_steps` repeated steps per job (a job more than
/// that many times shorter than the longest runs that many steps, the rest of the longest step alone).
/// The jobs' traces are moved into the merged one (a full trace is large: they are not copied).
SharedFabricResult simulate_shared_fabric(std::vector<FabricJob> jobs, const topology::ClusterGraph& cluster, int max_steps = 32);

}  // namespace fmsim::training
