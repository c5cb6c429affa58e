#pragma once
// A shared cluster's job trace (`fmsim cluster CLUSTER.json JOBS.jsonl`): one JSON object per line, each
// a job that asks for whole nodes for a while. docs/formats.md, "Job traces".
#include <filesystem>
#include <string>
#include <vector>

namespace fmsim::cluster {

/// How a job's nodes must sit: anywhere (the placement policy's choice), preferably under one leaf switch
/// or NVLink domain (the fewest otherwise), or required under one (it waits until one group has room):
/// Slurm's `--switches=1`, Kueue's podset-preferred-topology / podset-required-topology annotations.
enum class TopologyRequest { none, preferred, required };
/// The level a topology request names: a placement group (leaf switch or NVLink domain: Kueue's rack
/// level, Slurm's leaf switch) or a block of groups (the switches above the leaves: Kueue's block level,
/// Slurm's second tree level; ClusterShape::group_block).
enum class TopologyLevel { group, block };

struct JobSpec {
  std::string id;
  double submit_s = 0;
  int nodes = 1;
  double duration_s = 0;          ///< run time on its nodes without failures
  double time_limit_s = 0;        ///< what the scheduler plans with (backfill); the duration unless given
  int priority = 0;               ///< higher first under the priority policy
  std::string queue = "default";  ///< tenant or partition (reported per queue)
  double checkpoint_interval_s = 0;  ///< work since the last checkpoint is lost on a failure; 0 = none kept
  /// Elastic (SageMaker HyperPod elastic training, TorchElastic): on a failure the job goes on without the
  /// failed node, down to this many nodes, at the global batch it had (so at nodes/requested the speed),
  /// and grows back when nodes are free. 0: not elastic.
  int min_nodes = 0;
  TopologyRequest topology = TopologyRequest::none;
  TopologyLevel topology_level = TopologyLevel::group;
  /// A training job given as a scenario and a step count instead of a duration: its run time is the
  /// simulated step time at the nodes it gets, times `steps` (duration_s is 0 until then).
  std::string scenario;  ///< absolute path ("" = the trace's duration)
  long long steps = 0;
};

/// Reads a JSON Lines job trace: keys `id`, `submit` (time, e.g. "90m" or seconds), `nodes` or `gpus` (a
/// multiple of `gpus_per_node`), `duration` (time) or `scenario` (a training scenario, relative to the
/// trace) with `steps`, `time_limit`, `priority`, `queue`, `checkpoint_interval`, `min_nodes`, `topology`
/// (preferred or required). Blank lines and lines starting with # are skipped. A bad line refuses the whole
/// trace (InputError naming the file, the line and the key); jobs come back ordered by submit time.
/// A file whose first line starts with "JobID|" is a `sacct --parsable2` export instead (columns JobID,
/// Submit, Elapsed, NNodes, and optionally Timelimit, Partition, Priority, State): job steps and jobs that
/// never ran are skipped, submit times count from the earliest. A file that is one JSON document with a
/// "jobs" list is a `sacct --json` export (Slurm 21.08 to 25.x; sacct_json.cpp), read the same way.
std::vector<JobSpec> read_job_trace(const std::filesystem::path& path, int gpus_per_node, int cluster_nodes);

}  // namespace fmsim::cluster
