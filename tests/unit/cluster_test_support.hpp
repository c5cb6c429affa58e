#pragma once
// Jobs, cluster shapes and injected failures for the shared-cluster simulation's tests by hand
// (cluster_sim_test.cpp, cluster_recovery_test.cpp).
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "fmsim/cluster/cluster_sim.hpp"

namespace fmsim::test {

/// A job of `nodes` for `duration_s` (its time limit), submitted at `submit_s`, checkpointing every
/// `checkpoint_s` (0: never).
inline cluster::JobSpec job(const std::string& id, double submit_s, int nodes, double duration_s, double checkpoint_s = 0) {
  cluster::JobSpec j;
  j.id = id;
  j.submit_s = submit_s;
  j.nodes = nodes;
  j.duration_s = duration_s;
  j.time_limit_s = duration_s;
  j.checkpoint_interval_s = checkpoint_s;
  return j;
}

/// `nodes` nodes in placement groups (leaf switches) of `per_group`.
inline cluster::ClusterShape shape(int nodes, int per_group) {
  cluster::ClusterShape s;
  s.nodes = nodes;
  s.nodes_per_leaf = per_group;
  return s;
}

/// A failure of `node` at `time_s` of the given kind.
inline cluster::FailureModel::Injected injected(double time_s, int node, cluster::Recovery recovery) {
  cluster::FailureModel::Injected f;
  f.time_s = time_s;
  f.node = node;
  f.recovery = recovery;
  return f;
}

/// Every job completed, every second it ran was its work, lost to a failure (work past a checkpoint,
/// restarts) or added by stragglers and contention, and its runs' node-seconds add up to the cluster's busy
/// node-seconds.
inline void check_time_conserved(const std::vector<cluster::JobSpec>& jobs, const cluster::ClusterResult& r) {
  double held = 0;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const auto& out = r.jobs[i];
    REQUIRE(out.end_s > 0);
    double ran = 0;
    for (const auto& run : out.runs) {
      ran += run.end_s - run.start_s;
      held += (run.end_s - run.start_s) * run.nodes.size();
      CHECK(std::set<int>(run.nodes.begin(), run.nodes.end()).size() == run.nodes.size());  // no node held twice
    }
    CHECK(ran == Approx(jobs[i].duration_s + out.lost_s + out.straggler_s + out.contention_s).epsilon(1e-9));
  }
  CHECK(held == Approx(r.busy_node_s).epsilon(1e-9));
}

}  // namespace fmsim::test
