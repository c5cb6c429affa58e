#pragma once
// One RL iteration from its phases (rl_spec.hpp): how generation, scoring, training and the weight
// transfer add up under each placement. Closed forms, tested on their own (tests/unit/rl_iteration_test).
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/hardware/catalog.hpp"
#include "fmsim/rl/rl_spec.hpp"

namespace fmsim::rl {

/// Wall time of each phase of one iteration, in seconds.
struct RlPhases {
  double generation_s = 0;       ///< the rollout: every response of the iteration finished (its slowest included)
  double generation_tail_s = 0;  ///< of which: after 90 % of the responses had finished (the long tail)
  double forward_s = 0;          ///< old log-probs, reference, reward model, critic values: all forward passes
  double update_s = 0;           ///< the policy's (and PPO's critic's) optimizer steps
  double weight_sync_s = 0;      ///< the new policy weights into the rollout engine's layout
  double handover_s = 0;         ///< colocated: trainer state to host memory and back around the rollout
};

struct RlTiming {
  double iteration_s = 0;
  double rollout_busy_s = 0, trainer_busy_s = 0;  ///< generating; scoring and training
  double rollout_idle_s = 0, trainer_idle_s = 0;  ///< the rest of the iteration (weight moves included)
};

/// Colocated: the same GPUs run every phase in turn (generation + forward + update + weight sync +
/// handover). Disaggregated, staleness 0: the pools alternate (generation + weight sync + forward +
/// update; each pool idles while the other works). Disaggregated, staleness >= 1: the rollout generates
/// iteration i + 1 while the trainer trains on iteration i, and both stop for the weight transfer:
/// max(generation, forward + update) + weight sync.
RlTiming compose_iteration(const RlPhases& phases, Placement placement, int staleness);

/// One phase on one role's GPUs within an iteration (seconds from its start), for time lines.
struct RlSpan {
  std::string role;   ///< "rollout" or "trainer" (colocated: the same GPUs, two lanes)
  std::string phase;  ///< generation, forward, update, weight_sync, handover
  double start_s = 0, end_s = 0;
};

/// The iteration's phases placed in time as compose_iteration adds them up (colocated: offload, rollout,
/// reload, scoring, training, transfer; staleness >= 1: the rollout's generation beside the trainer's
/// work, then the transfer on both).
std::vector<RlSpan> iteration_timeline(const RlPhases& phases, Placement placement, int staleness);

/// Bytes of one full copy of the policy's weights as the rollout engine loads them (BF16).
double weight_sync_bytes(double parameters);

/// Everything one RL iteration's simulation found (rl_run.cpp).
struct RlResult {
  RlSpec spec;
  std::string name;
  RlPhases phases;
  RlTiming timing;
  int total_gpus = 0, rollout_gpus = 0, trainer_gpus = 0, nodes = 0;
  int rollout_replicas = 0, rollout_tp = 1, rollout_pp = 1;
  int trainer_tp = 1, trainer_pp = 1, trainer_dp = 1;
  double mean_prompt_tokens = 0, mean_response_tokens = 0;
  double generation_output_tokens_per_s = 0;  ///< the rollout engine alone
  double update_step_s = 0;            ///< one optimizer step of one model
  int update_steps = 0;                ///< optimizer steps per iteration (all models)
  int packed_rows_per_step = 0;        ///< global batch of one optimizer step: packed rows of seq_length, or
                                       ///< (sequence_packing false) one sample per row; rounded to micro-batch x DP
  int seq_length = 0;
  /// Tokens each sample occupies in the update and forward passes: the mean sample (packed) or the
  /// longest, to which an unpacked batch is padded.
  double sample_row_tokens = 0;
  double forward_pass_s = 0;           ///< one forward pass over the samples
  double weight_bytes = 0;             ///< one full copy (BF16)
  double handover_bytes_per_gpu = 0;   ///< colocated: trainer state and the engine's weights, out and back
  double reference_swap_s = 0;         ///< a host-resident reference: its swap around its forward pass
  double trainer_memory_bytes = 0, hbm_bytes = 0;
  std::string gpu, instance_type;
  std::optional<double> usd_per_hour;
  double samples_per_s() const { return timing.iteration_s > 0 ? spec.samples() / timing.iteration_s : 0.0; }
  double response_tokens_per_s() const { return samples_per_s() * mean_response_tokens; }
};

/// Simulates one RL iteration of a training scenario document whose training.workload is "rl" (after
/// --set): the rollout and the forward passes through the serving simulation, the updates through the
/// training step's, the weight transfer through the collective model. InputError on bad input.
RlResult simulate_rl_iteration(const nlohmann::json& document, const std::string& origin, const std::filesystem::path& base_dir,
                               const hardware::Catalog& catalog, bool allow_oom);

nlohmann::json to_json(const RlResult& result);
/// The iteration as Chrome trace events (Perfetto): one track per role.
nlohmann::json timeline_json(const RlResult& result);
std::string to_text(const RlResult& result);

}  // namespace fmsim::rl
