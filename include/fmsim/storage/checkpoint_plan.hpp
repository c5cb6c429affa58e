#pragma once
// What a checkpoint holds and how it is written: the plan read from a scenario's "checkpoint" section,
// and the bytes each GPU saves, taken from the memory model (docs/model.md, "Checkpoints").
#include <optional>
#include <string>
#include <vector>

#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/scenario.hpp"

namespace fmsim::storage {

/// Where a checkpoint goes: straight to FSx for Lustre or S3, to local NVMe first with an asynchronous
/// upload, or into a peer node's host memory over EFA ("checkpointless").
enum class Strategy { fsx, s3, nvme_fsx, nvme_s3, peer };
/// sync: the step waits until the first tier has the checkpoint; async: only for the copy to host memory.
enum class SaveMode { sync, async };
/// sharded: every GPU writes its deduplicated share (Megatron distributed checkpoint, PyTorch DCP);
/// gathered: the state is gathered to global rank 0, which writes one consolidated file.
enum class Layout { sharded, gathered };

std::string to_string(Strategy strategy);
std::string to_string(SaveMode mode);
std::string to_string(Layout layout);
std::optional<Strategy> parse_strategy(const std::string& text);
const std::vector<Strategy>& all_strategies();
/// "fsx, s3, nvme+fsx, nvme+s3, peer", for messages.
std::string strategy_names();

struct CheckpointPlan {
  Strategy strategy = Strategy::nvme_fsx;
  SaveMode mode = SaveMode::async;
  Layout layout = Layout::sharded;
  bool include_optimizer = true;
  long long interval_steps = 0;   ///< checkpoint every this many steps (0 = see interval_s)
  double interval_s = 0;          ///< or every this long, rounded to whole steps (both 0 = Young/Daly)
  int files_per_rank = 1;
  int keep = 2;                   ///< checkpoints kept on a tier: the last complete one and the one being written
  int peer_replicas = 1;          ///< peer strategy: copies held by other nodes
};

/// Reads the scenario's optional "checkpoint" section; errors name the file, key and value.
CheckpointPlan read_checkpoint_plan(const workload::Scenario& s);

/// Bytes per checkpoint. Weights are saved in BF16 (2 bytes/parameter: the FP8 copy is derived, not saved),
/// the optimizer as FP32 master weights and two Adam moments (12 bytes/parameter). Replicated state is
/// written once, spread over its replicas (Megatron's fully parallel save).
struct CheckpointContents {
  double total_bytes = 0;                 ///< unique bytes, the whole job
  double weights_bytes = 0, optimizer_bytes = 0;
  std::vector<double> rank_bytes;         ///< by global rank, what that GPU writes (sharded layout)
  std::vector<int> rank_node;             ///< by global rank, the node it runs on
  std::vector<double> node_bytes;         ///< by node, the sum over its GPUs
  double max_rank_bytes = 0;
  int files = 0;                          ///< files over the job
};

CheckpointContents checkpoint_contents(const workload::Scenario& s, const workload::MemoryReport& memory,
                                       const CheckpointPlan& plan, const std::vector<int>& rank_gpu);

/// Bytes per parameter in a checkpoint (see CheckpointContents).
inline constexpr double kCheckpointWeightBytes = 2.0;
inline constexpr double kCheckpointOptimizerBytes = 12.0;

}  // namespace fmsim::storage
