#pragma once
// A Slurm topology.conf as the scheduler's view of the cluster (`fmsim cluster --topology-conf FILE`):
// topology/tree lines `SwitchName=S Nodes=HOSTLIST` (leaf switches; `SwitchName=U Switches=LIST` lines
// above them give the block level: the leaf switches under one upper switch) or topology/block lines `BlockName=B Nodes=HOSTLIST` (NVLink domains,
// Slurm 23.11+; `BlockSizes=` is read and ignored). Hostlists are Slurm's: `p5-[001-016]`, `gpu[1-4,7]`,
// `a,b,c`, several bracket groups per name. Nodes are numbered in order of first appearance and must be the
// cluster's node count. docs/formats.md, "Slurm topology.conf".
#include <filesystem>
#include <cstddef>
#include <string>
#include <vector>

namespace fmsim::cluster {

struct SlurmTopology {
  std::string plugin;                    ///< "tree" or "block"
  std::vector<std::string> group_names;  ///< leaf switches or blocks, in file order
  std::vector<std::string> node_names;   ///< by node index
  std::vector<int> node_group;           ///< by node index: its group
  /// tree: the block of each leaf switch (the upper switch whose Switches= names it, a block of its own where
  /// none does); empty when no Switches= line names a leaf switch.
  std::vector<int> group_block;
  std::vector<std::string> block_names;  ///< by block index: the upper switch (or the leaf switch alone)
};

/// Throws InputError naming the file, the line and what is wrong (an unknown key, a malformed hostlist, a
/// node under two leaf switches, a node count other than the cluster's).
SlurmTopology read_topology_conf(const std::filesystem::path& path, int cluster_nodes);

/// Slurm hostlist expansion: "node[01-03,7]" -> node01 node02 node03 node7. Throws std::invalid_argument
/// with the reason.
/// At most `max_hosts` names (std::invalid_argument past it, before they are all built).
std::vector<std::string> expand_hostlist(const std::string& hostlist, std::size_t max_hosts = std::size_t{1} << 20);

}  // namespace fmsim::cluster
