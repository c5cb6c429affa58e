#pragma once
// The geometry of a communicator on a cluster: which ranks share an NVLink domain (an "island", what
// NCCL calls a node: an 8-GPU instance, or a whole GB200 NVL72), and the hardware figures the cost
// models need.
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"

namespace fmsim::collectives {

struct CommLayout {
  const topology::ClusterGraph* cluster = nullptr;
  std::vector<int> rank_gpu;                  ///< rank -> global GPU ordinal
  int ranks = 0;
  int islands = 0;                            ///< NVLink domains spanned
  int ranks_per_island = 0;                   ///< g: equal in every island (checked)
  std::vector<std::vector<int>> island_ranks; ///< ranks of each island, in rank order
  std::vector<std::vector<int>> island_nodes; ///< instances of each island that hold ranks, in order
  int nodes_per_island = 0;                   ///< instances per island holding ranks (equal, checked)

  double nvlink_Bps = 0;       ///< per GPU per direction (catalog)
  double nvlink_copy_efficiency = 0;  ///< achieved fraction of nvlink_Bps for copy traffic (catalog, per generation)
  double nvls_efficiency = 0;         ///< achieved fraction of nvlink_Bps for NVLS traffic (catalog, per generation)
  double rail_Bps = 0;         ///< scale-out bandwidth per GPU rail per direction (catalog)
  double net_message_latency_s = 0;
  double net_switch_latency_s = 0;
  bool nvlink_sharp = false;   ///< NVLS available
  int sm_version = 0;
  bool amd_host = false;       ///< NCCL picks different LL limits on AMD hosts
  int nics_per_gpu = 1;        ///< NICs fused into one GPU's rail (p5: 4 x 100 Gb/s EFA)
  bool striped_rails = false;  ///< aws-ofi-nccl on EFA: a message is striped over the rail's NICs by size

  int island_of_rank(int rank) const;
  int node_of_rank(int rank) const { return cluster->node_of_gpu(rank_gpu[rank]); }
};

/// Builds the layout. Throws InputError when islands hold different numbers of ranks (NCCL would
/// fall back to slower paths that fmsim does not model) or when a rank's GPU is repeated.
CommLayout make_layout(const topology::ClusterGraph& cluster, std::vector<int> rank_gpu);

/// Whether ranks on `rank_gpu` fill every NVLink domain they touch with the same number of ranks and
/// nodes, the layouts make_layout accepts (a caller with another way to price the rest asks first).
bool spans_domains_evenly(const topology::ClusterGraph& cluster, const std::vector<int>& rank_gpu);

}  // namespace fmsim::collectives
