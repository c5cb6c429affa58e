#pragma once
// A shared cluster over days (`fmsim cluster`): jobs arrive, a scheduler policy admits and places them
// on whole nodes, they run, nodes fail and come back, interrupted jobs requeue and resume from their last
// checkpoint. A discrete-event simulation in plain C++ (no network: a job's run time is its trace's).
// docs/model.md, "Shared cluster".
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "fmsim/cluster/failure_causes.hpp"
#include "fmsim/cluster/job_trace.hpp"
#include "fmsim/cluster/kueue.hpp"

namespace fmsim::cluster {

/// fifo: strict arrival order (the first job that does not fit blocks the rest). backfill: Slurm's
/// sched/backfill in its EASY form (the first job that does not fit gets a reservation at the earliest time
/// enough nodes free up; later jobs start now if they fit and do not delay it). priority: higher priority
/// first (then arrival), with the same backfill.
/// kueue: Kubernetes with Kueue (kueue.hpp): quota per ClusterQueue with cohort borrowing and preemption,
/// jobs in priority then arrival order, any that fits its quota and the free nodes admitted (BestEffortFIFO).
enum class Policy { fifo, backfill, priority, kueue };
/// topology: Slurm's topology/tree and topology/block (the fewest leaf switches, or NVLink domains on
/// UltraServer clusters: best fit into one, else the emptiest first). spread: the Kubernetes default
/// scheduler's least-allocated scoring, which spreads a gang's pods over the emptiest switches.
enum class Placement { topology, spread };
/// How a running job recovers from a failure of one of its nodes (or a software fault or a hang):
/// - restart: it stops and runs again from its last checkpoint (on a hot spare at once, or through the
///   queue), paying FailureModel::restart_s;
/// - checkpointless: SageMaker HyperPod's checkpointless training: the healthy processes stay up, a
///   replacement node (a hot spare, else a free node) joins, and the state comes from the peers that hold
///   the same shards (peer-to-peer state replication), so only the step in flight is lost; the job pauses
///   for FailureModel::checkpointless_recovery_s. With no replacement node free it restarts as above.
enum class JobRecovery { restart, checkpointless };

struct ClusterShape {
  int nodes = 1;
  int gpus_per_node = 8;
  int nodes_per_leaf = 16;   ///< leaf switch (rail group) size
  int nodes_per_domain = 1;  ///< NVLink domain (18 instances of a GB200 NVL72; 1 for 8-GPU instances)
  /// The placement group (leaf switch or block) of each node, when a Slurm topology.conf gives them
  /// (topology_conf.hpp); empty: consecutive groups of group_nodes().
  std::vector<int> node_group;
  int group_nodes() const { return nodes_per_domain > 1 ? nodes_per_domain : nodes_per_leaf; }
  int group_of(int node) const { return node_group.empty() ? node / group_nodes() : node_group[node]; }
  int groups() const;
  /// The nodes of each group, in node order.
  std::vector<std::vector<int>> group_members() const;
  /// The level above the groups (Kueue's block, the switches above Slurm's leaf switches): each group's
  /// block, from a topology.conf's `Switches=` lines or --block-groups; empty: no such level.
  std::vector<int> group_block;
  int blocks() const;
  /// The groups of each block, in group order (empty without a block level).
  std::vector<std::vector<int>> block_groups() const;
};

struct FailureModel {
  double node_failures_per_node_hour = 0;  ///< 0: no failures
  double repair_s = 4 * 3600.0;            ///< a failed node is back after this
  double restart_s = 600.0;                ///< an interrupted job's restart cost when it runs again
  double rescale_s = 60.0;                 ///< an elastic job's pause when it shrinks or grows (estimate)
  /// A hung collective is detected after this (PyTorch's ProcessGroupNCCL timeout: torch.distributed's
  /// default 10 minutes for NCCL, Megatron's --distributed-timeout-minutes 10); the job holds its nodes
  /// without progress until then.
  double watchdog_s = 600.0;
  /// Stragglers (MegaScale, NSDI'24, calibration fail-megascale-restarts-and-recovery: ~0.5 % of machines,
  /// ~10 % slower): this fraction of nodes, drawn once per seed, runs slower by straggler_slowdown; a
  /// synchronous job runs at its slowest node's pace.
  double straggler_fraction = 0;
  double straggler_slowdown = 0.10;
  /// Given straggler nodes, besides the drawn ones (a node known to run slow).
  std::vector<int> straggler_nodes;
  /// Straggler detection and eviction: 0, never; > 0, a job that has trained this long (its restart pause
  /// excluded) on nodes with a straggler evicts it (MegaScale's monitoring finds and diagnoses within 10
  /// minutes): the node goes to repair (repair_s) and returns at full speed, the job goes on as from a
  /// failure of that node (elastic: without it; checkpointless: in process on a replacement; else from its
  /// last checkpoint, on a hot spare when there is one).
  double straggler_detect_s = 0;
  /// Hot spares: nodes held out of scheduling that replace a failed node of a running job at once (the job
  /// restarts from its checkpoint on the rest of its nodes and the spare instead of waiting in the queue);
  /// a repaired node refills the pool before it returns to scheduling.
  int spare_nodes = 0;
  /// Correlated failures: a whole placement group (a leaf switch with the nodes under it, or an NVLink
  /// domain on UltraServer clusters: a switch tray, the rack's power or cooling) goes out at once, every
  /// node in it unusable until the group is repaired after group_repair_s. 0: none.
  double group_failures_per_group_hour = 0;
  double group_repair_s = 4 * 3600.0;
  JobRecovery recovery = JobRecovery::restart;
  /// The checkpointless pause: detection by an in-job agent (30 s) + re-forming the job without a relaunch
  /// (45 s) + NCCL initialisation (30 s), the estimates `fmsim checkpoint` uses for in-process recovery
  /// (storage/goodput.hpp), within AWS's "under 2 minutes".
  double checkpointless_recovery_s = 105.0;
  struct Injected {
    double time_s = 0;
    int node = 0;
    /// The failure's kind: a cause of that recovery is drawn from the table (hardware by default).
    Recovery recovery = Recovery::repair;
  };
  /// Failures of given nodes at given times (seconds of the trace), besides the random ones.
  std::vector<Injected> injected;
  struct InjectedGroup {
    double time_s = 0;
    int group = 0;
  };
  /// Failures of given placement groups at given times.
  std::vector<InjectedGroup> injected_groups;
  std::uint64_t seed = 1;
};

/// The run time of job `job` (one with a scenario) on `nodes` (cluster node indices), called when it first
/// starts: the simulated step time at that placement times its steps (cluster_timing.cpp).
using DurationAt = std::function<double(int job, const std::vector<int>& nodes)>;

/// For scenario jobs running together on leaf switches they share (`jobs`, indices into the trace, and
/// their nodes): each one's contention factor, its step alone over its step beside the others (<= 1).
using ContentionAt = std::function<std::vector<double>(const std::vector<int>& jobs, const std::vector<std::vector<int>>& nodes)>;

struct SimOptions {
  Policy policy = Policy::backfill;
  const KueueConfig* kueue = nullptr;  ///< needed by Policy::kueue
  Placement placement = Placement::topology;
  FailureModel failures;
  DurationAt duration_at;  ///< needed when a job has a scenario
  /// Set: scenario jobs slow each other where they share leaf uplinks (`fmsim cluster --contention`);
  /// unset: every job runs at its own pace.
  ContentionAt contention_at;
  std::string contention_model;  ///< with contention_at: "fast", "aligned" or "full" (reported)
};

struct JobRun {
  double start_s = 0, end_s = 0;
  std::vector<int> nodes;
  bool interrupted = false;  ///< ended by a failure or preemption (an elastic rescale ends a run without it)
};

struct JobOutcome {
  double first_start_s = -1, end_s = -1;
  double duration_s = 0;     ///< its run time without failures (a scenario job's, at its placement)
  int restarts = 0;          ///< runs cut short: failures and preemptions
  int preemptions = 0;       ///< of which by Kueue preemption
  int rescales = 0;          ///< elastic: times it went on with fewer nodes or grew back
  int groups_spanned = 0;    ///< leaf switches (or NVLink domains) of its first placement
  int min_groups = 0;        ///< the fewest it could have spanned
  double lost_s = 0;         ///< run time lost to failures: work since the last checkpoint, hangs and restarts
  double straggler_s = 0;    ///< run time added by straggler nodes in its placements
  double contention_s = 0;   ///< run time added by other jobs' traffic on links it shares
  int hangs = 0;             ///< runs a hung collective stopped (detected by the watchdog)
  int spare_swaps = 0;       ///< failed nodes a hot spare replaced
  int checkpointless_recoveries = 0;  ///< failures it went on from in process (JobRecovery::checkpointless)
  int group_failures = 0;    ///< placement-group failures that hit it
  int straggler_evictions = 0;  ///< straggler nodes detected in its placement and evicted
  std::vector<JobRun> runs;
};

struct ClusterResult {
  std::vector<JobOutcome> jobs;     ///< in trace order (after sorting by submit time)
  double makespan_s = 0;            ///< first submit to last completion
  double busy_node_s = 0;           ///< node-seconds held by jobs (lost work included)
  double lost_node_s = 0;           ///< of which lost to failures
  double down_node_s = 0;           ///< node-seconds in repair
  double idle_while_waiting_node_s = 0;  ///< free nodes while some job waited (fragmentation and blocking)
  std::vector<std::pair<double, int>> busy_nodes;  ///< (time, nodes busy) at every change
  std::vector<std::pair<double, int>> down_nodes;  ///< (time, nodes out: in repair or in a failed group) at every change
  int node_failures = 0;
  int preemptions = 0;
  int hangs = 0;                 ///< failures that hung a running job (watchdog)
  int software_restarts = 0;     ///< software failures: the job restarted on the same nodes
  int spare_swaps = 0;           ///< failed nodes replaced by a hot spare
  int spares_exhausted = 0;      ///< hardware failures (or straggler evictions) of a running job's node(s) with no spare left
  double spare_node_s = 0;       ///< node-seconds held as spares (their cost)
  std::vector<int> stragglers;   ///< the straggler nodes
  struct Eviction {
    double time_s = 0;
    int node = 0;
    int job = 0;  ///< the job whose monitoring found it
  };
  std::vector<Eviction> evictions;  ///< straggler nodes evicted (FailureModel::straggler_detect_s), in time order
  double straggler_node_s = 0;   ///< node-seconds of jobs' run time added by stragglers
  double contention_node_s = 0;  ///< node-seconds of jobs' run time added by contention
  /// Kueue: per ClusterQueue (config order), GPU-seconds used beyond its nominal quota (borrowed), the
  /// most GPUs it held, and the jobs of its queues it preempted to admit its own.
  std::vector<double> borrowed_gpu_s, peak_gpus;
  std::vector<int> preempted_by;
  struct Failure {
    double time_s = 0;
    int node = 0;
    int cause = 0;  ///< index into llama3_failure_causes()
    int gpu = 0;    ///< the node's GPU a GPU-attributed cause hit
    int job = -1;   ///< the job running on the node, if any
  };
  std::vector<Failure> failures;  ///< every node failure, in time order
  struct GroupFailure {
    double time_s = 0;
    int group = 0;
    int nodes = 0;          ///< nodes in the group
    std::vector<int> jobs;  ///< the jobs running on its nodes
  };
  std::vector<GroupFailure> group_failures;  ///< every placement-group failure, in time order
  int checkpointless_recoveries = 0;  ///< failures jobs went on from in process
  long long events = 0;
};

/// Simulates the trace to its end. Deterministic for a seed.
ClusterResult simulate_cluster(const ClusterShape& shape, const std::vector<JobSpec>& jobs, const SimOptions& options);

std::string to_string(Policy policy);
std::string to_string(Placement placement);
std::string to_string(JobRecovery recovery);

}  // namespace fmsim::cluster
