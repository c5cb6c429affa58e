#pragma once
// Checkpoint save and restore as engine activities on the cluster: every node copies its GPUs' shards to
// host memory over PCIe, then writes them to NVMe, FSx for Lustre (file stripes on OSTs behind the
// file system's network), S3 (multipart parts through the per-instance limit, PUT/GET requests through
// the per-prefix request rate) or a peer's memory over EFA. All transfers of all nodes run at once and
// share each resource max-min fairly, so a thousand writers contend for FSx throughput and request
// rates queue small parts. docs/model.md ("Checkpoints") lists every resource and its figure.
#include <string>

#include "fmsim/storage/checkpoint_plan.hpp"
#include "fmsim/topology/cluster_spec.hpp"

namespace fmsim::storage {

struct PhaseResult {
  double time_s = 0;
  std::string bottleneck;          ///< the most utilised resource over the phase, e.g. "FSx disk (40 OSTs)"
  double bottleneck_utilization = 0;
};

struct CheckpointIo {
  double stall_s = 0;             ///< training blocked per checkpoint
  double first_tier_s = 0;        ///< start to written on the first tier (NVMe, the remote tier, or the peer)
  PhaseResult save;               ///< start to durable: survives the loss of any one node
  double export_s = 0;            ///< start to exported to S3 by an FSx data repository association (0: none)
  PhaseResult restore;            ///< after relaunch: every GPU holds its state again (one node replaced)
};

/// Throws InputError (naming the scenario file) when the cluster lacks the tier the strategy needs or the
/// checkpoint does not fit it (FSx capacity, NVMe, host memory for peer copies).
void check_strategy(const topology::ClusterSpec& cluster, const CheckpointContents& contents, const CheckpointPlan& plan,
                    const std::string& where);

/// Simulates one save and one restore (two engine runs, each in a forked child).
CheckpointIo simulate_checkpoint_io(const topology::ClusterSpec& cluster, const CheckpointContents& contents,
                                    const CheckpointPlan& plan);

/// Requests are flows of this many "bytes" over links whose bandwidth is the request rate times it, so
/// that request rates and byte rates share one max-min solver (and stay far above its precision).
inline constexpr double kRequestUnitBytes = 1e6;

}  // namespace fmsim::storage
