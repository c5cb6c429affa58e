#pragma once
// Where a serving scenario's replicas sit on the cluster, and the model of each pool's replicas.
// Replicas are packed in order (the prefill pool first): each pipeline stage takes TP consecutive
// GPUs that never straddle an NVLink domain.
#include <memory>
#include <vector>

#include "fmsim/inference/replica_model.hpp"
#include "fmsim/inference/serve_scenario.hpp"
#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::inference {

struct ReplicaPlacement {
  int pool = 0;
  std::vector<int> gpus;  ///< global GPU ordinals, stage-major: stage s, TP rank r at gpus[s * tp + r]
};

class ServingPlan {
 public:
  /// Throws InputError when the replicas do not fit on the cluster or a pool's model does not fit in HBM.
  explicit ServingPlan(const ServeScenario& scenario);
  ServingPlan(const ServingPlan&) = delete;
  ServingPlan& operator=(const ServingPlan&) = delete;

  const ServeScenario& scenario() const { return scenario_; }
  const topology::ClusterGraph& cluster() const { return cluster_; }
  const std::vector<ReplicaPlacement>& replicas() const { return replicas_; }
  const ReplicaModel& model(int pool) const { return *models_.at(static_cast<std::size_t>(pool)); }
  /// Instances the replicas occupy (partly used ones count whole, as they are billed whole).
  int nodes_used() const { return nodes_used_; }

 private:
  const ServeScenario& scenario_;
  topology::ClusterGraph cluster_;
  std::vector<ReplicaPlacement> replicas_;
  std::vector<std::unique_ptr<ReplicaModel>> models_;
  int nodes_used_ = 0;
};

}  // namespace fmsim::inference
