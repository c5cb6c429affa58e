#pragma once
// Which shard of a sharded command this process is (fmsim sweep, fmsim search): --shard-index and
// --shard-count, else a Slurm job array's task (SLURM_ARRAY_TASK_ID - SLURM_ARRAY_TASK_MIN of
// SLURM_ARRAY_TASK_COUNT), else a Kubernetes Indexed Job's JOB_COMPLETION_INDEX with an explicit count.
#include <utility>

namespace fmsim::cli {

/// {index, count}; {0, 1} when nothing names a shard. Throws InputError on an inconsistent pair.
std::pair<int, int> shard_of(int shard_index, int shard_count);

}  // namespace fmsim::cli
