#pragma once
// Kubernetes + Kueue admission for `fmsim cluster --kueue FILE` (docs/model.md, "Shared cluster"): GPU
// quotas per ClusterQueue, cohorts whose members borrow each other's unused quota (up to a borrowing
// limit), all-or-nothing admission of a job's whole gang, and preemption: a ClusterQueue reclaims its
// nominal quota from cohort members that borrowed it (reclaimWithinCohort), and a job may preempt lower
// priority jobs of its own queue (withinClusterQueue: LowerPriority). Read from Kueue's own YAML
// (kueue.x-k8s.io/v1beta1 ClusterQueue, LocalQueue, ResourceFlavor; v1alpha1 Topology) with yaml-cpp.
#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace fmsim::cluster {

enum class PreemptWithin { never, lower_priority };
enum class Reclaim { never, lower_priority, any };

struct ClusterQueueSpec {
  std::string name;
  std::string cohort;              ///< "" = none
  double nominal_gpus = 0;         ///< nvidia.com/gpu nominalQuota, summed over flavors
  double borrowing_limit_gpus = -1;  ///< -1: unlimited (Kueue's default)
  PreemptWithin within = PreemptWithin::never;
  Reclaim reclaim = Reclaim::never;
};

struct KueueConfig {
  std::vector<ClusterQueueSpec> cluster_queues;
  std::map<std::string, int> queue_index;  ///< LocalQueue and ClusterQueue names -> cluster_queues index
  /// Topology-aware scheduling (Kueue TAS): Topology objects (kueue.x-k8s.io/v1alpha1, name -> its level
  /// node labels, outermost first) and the ResourceFlavors that name one (spec.topologyName). With one,
  /// jobs may ask for their nodes under one leaf switch or NVLink domain (JobSpec::topology, Kueue's
  /// podset-required-topology / podset-preferred-topology annotations).
  std::map<std::string, std::vector<std::string>> topologies;
  std::vector<std::string> tas_flavors;
  std::vector<std::string> flavor_topology;  ///< the Topology each of tas_flavors names
  bool topology_aware() const { return !tas_flavors.empty(); }
  std::string file;
};

/// Reads a (multi-document) Kueue YAML file. Throws InputError naming the file, the document, the key and
/// what was expected (a missing name, a non-numeric quota, a LocalQueue of an unknown ClusterQueue, a
/// malformed YAML).
KueueConfig read_kueue(const std::filesystem::path& path);

}  // namespace fmsim::cluster
