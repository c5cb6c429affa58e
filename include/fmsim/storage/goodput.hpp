#pragma once
// Failures and goodput over a whole training run. Failures arrive as a Poisson process whose rate is the
// sum of per-component rates (per GPU and per node; defaults derived from the Llama 3 interruption table,
// docs/model.md "Failures"). Each costs detection, relaunch (with NCCL initialisation), the restore, and
// the work done since the last durable checkpoint. A seeded Monte Carlo replays the run many times.
#include <cstdint>

#include "fmsim/workload/scenario.hpp"

namespace fmsim::storage {

/// Llama 3 405B, 54 days on 16,384 H100 in 2,048 nodes (calibration fail-llama3-405b-54day-interruptions):
/// 268 GPU-attributed unexpected interruptions (faulty GPU, HBM3, SRAM, GPU system processor, silent data
/// corruption, thermal) over 16,384 x 1,296 GPU-hours, and 151 others (host components, network
/// switches and cables, host maintenance, software, NCCL watchdog) over 2,048 x 1,296 node-hours.
inline constexpr double kGpuFailuresPerGpuHour = 268.0 / (16384.0 * 54 * 24);
inline constexpr double kNodeFailuresPerNodeHour = 151.0 / (2048.0 * 54 * 24);

/// restart: the job stops, is relaunched on a spare node and rolls back to its last durable checkpoint.
/// in_process: the healthy ranks stay up, a spare node joins, communicators are rebuilt and the rank
/// state comes back from peer copies (SageMaker HyperPod's checkpointless training: "recovery in under 2
/// minutes" instead of 15-30 minutes, AWS blog "Checkpointless training on Amazon SageMaker HyperPod",
/// 2025); the rollback is still to the last saved state, which with the peer strategy saved every step
/// is the last step.
enum class Recovery { restart, in_process };
std::string to_string(Recovery recovery);

struct FailureModel {
  double gpu_failures_per_gpu_hour = kGpuFailuresPerGpuHour;
  double node_failures_per_node_hour = kNodeFailuresPerNodeHour;
  double detection_s = 300;   ///< estimate: MegaScale detects and diagnoses in < 10 min
  double relaunch_s = 180;    ///< estimate: reschedule onto a spare node, start containers, build the model
  double nccl_init_s = 30;    ///< MegaScale: < 30 s at > 10,000 GPUs with its optimised initialisation
  Recovery recovery = Recovery::restart;
  /// In-process recovery: an in-job health agent detects the fault (estimate), and the surviving processes
  /// re-form the job around the spare without a relaunch (estimate); with the NCCL initialisation above the
  /// total, 105 s, sits within HyperPod's published "under 2 minutes".
  double in_process_detection_s = 30;
  double in_process_restart_s = 45;
  std::uint64_t seed = 1;
  int trials = 200;
};

/// Reads the scenario's optional "failures" section (errors name file, key and value).
FailureModel read_failure_model(const workload::Scenario& s);

/// Time from a failure until training resumes, before the state restore: detection, relaunch (restart
/// only) and the NCCL initialisation.
double recovery_restart_s(const FailureModel& model);
/// Failures per second of the whole job.
double job_failure_rate_per_s(const FailureModel& model, int gpus, int nodes);

struct GoodputInputs {
  double work_s = 0;          ///< failure-free compute time of the whole run (steps x step time)
  double interval_s = 0;      ///< compute time between checkpoints
  double stall_s = 0;         ///< training blocked per checkpoint
  double durable_s = 0;       ///< checkpoint start to durable (>= stall)
  double restart_s = 0;       ///< detection + relaunch + NCCL init
  double restore_s = 0;
  double failures_per_s = 0;
  std::uint64_t seed = 1;
  int trials = 200;
};

struct GoodputResult {
  double goodput = 0;               ///< work_s / wall time (mean over trials of the wall time)
  /// "monte_carlo" (seeded replay) or "closed_form" (the expectation of the same renewal process, used
  /// where the replays would draw more than kMaxReplayFailures failures in all). In the closed form a
  /// stall cut short by a failure counts as lost work (the replay counts it as stall); totals agree.
  const char* method = "monte_carlo";
  double wall_s = 0;                ///< mean
  double interruptions = 0;         ///< mean failures during the run
  double lost_work_s = 0;           ///< mean compute redone after failures
  double checkpoint_stall_s = 0;    ///< mean time blocked by checkpoints
  double recovery_s = 0;            ///< mean time in detection, relaunch and restore
};

/// Above this many expected failures over all replayed runs (20,000 per run at the default 200 trials)
/// the Monte Carlo would take minutes to hours (the count grows as e^(rate x (interval + stall)) per
/// checkpoint interval), so the closed form is used.
inline constexpr double kMaxReplayFailures = 4e6;

/// Refused (InputError) when the expected time to train is not finite or exceeds this: the run never ends.
inline constexpr double kMaxTimeToTrain_s = 1e6 * 365.25 * 24 * 3600;

GoodputResult simulate_goodput(const GoodputInputs& in);

/// The expectation of the run simulate_goodput replays, for exponential failures (restart-from-checkpoint
/// renewal argument; e.g. Daly 2006, eq. 8, with failures also during recovery): each of the work/interval
/// segments of S = interval + stall seconds needs e^(rate S) - 1 failed attempts of mean length
/// (e^(rate S) - 1)/rate - S in total, and each failure a recovery of R = restart + restore that itself
/// restarts on a failure: (e^(rate R) - 1)/rate seconds and e^(rate R) failures per failed attempt.
/// The last segment has no checkpoint. Approximation: a checkpoint counts as durable when its stall ends.
GoodputResult expected_goodput(const GoodputInputs& in);

/// Daly's first-order optimum compute time between checkpoints: sqrt(2 delta M) - delta for delta < 2M,
/// else M (Daly 2006, "A higher order estimate of the optimum checkpoint interval").
double young_daly_interval_s(double checkpoint_cost_s, double mtbf_s);

}  // namespace fmsim::storage
