#pragma once
// Reinforcement-learning post-training (training.workload "rl", the scenario's "rl" section): one RL
// iteration generates responses with a serving engine (the rollout), scores them with forward passes
// (old-policy log-probabilities, the KL reference, a reward model, PPO's critic values), updates the
// policy (and PPO's critic) with training steps, and moves the new weights to the rollout engine.
// docs/model.md, "RL post-training", explains the composition; docs/formats.md the keys.
#include <string>

#include <nlohmann/json.hpp>

namespace fmsim::rl {

enum class Algorithm { grpo, ppo };
enum class Placement { colocated, disaggregated };
/// How the new weights reach the rollout: `full`, each rollout GPU receives every tensor whole and keeps
/// its slice (NeMo RL's refit, veRL's and OpenRLHF's weight update: docs/model.md); `sharded`, each
/// receives only its own shard (a resharding transfer).
enum class WeightSync { full, sharded };

struct RlSpec {
  Algorithm algorithm = Algorithm::grpo;
  int prompts = 0;            ///< prompts per iteration (B)
  int group_size = 1;         ///< responses generated per prompt (G): GRPO's group, 1 for PPO by default
  nlohmann::json prompt_tokens, response_tokens;  ///< length specs, as a serving workload's input/output_tokens
  int mini_batches = 1;       ///< optimizer steps per pass over the iteration's samples (ppo_mini_batch)
  int epochs = 1;             ///< passes over the samples (ppo_epochs)
  bool reference_model = true;   ///< a KL reference forward pass
  bool reward_model = false;     ///< a model-based reward: one more forward pass of the policy's size
  double packing_efficiency = 0.95;  ///< real tokens per packed training row of seq_length
  /// The samples are packed into rows of seq_length (NeMo RL's sequence_packing, veRL's remove-padding).
  /// Without packing each sample is a row of its own, and the batch is padded to its longest sample:
  /// NeMo RL's Megatron worker pads the data to input_ids.shape[1], the longest sequence it was given,
  /// for the update and the log-prob passes (megatron_policy_worker.py at v0.5.0).
  bool sequence_packing = true;
  Placement placement = Placement::colocated;
  int nodes = 0;              ///< instances the job takes (0 = the whole cluster); on an UltraServer part of a rack
  int rollout_nodes = 0;      ///< disaggregated: nodes of the rollout pool (the trainer takes the rest)
  int staleness = 0;          ///< disaggregated: iterations the rollout may run ahead of the trainer
  bool offload = true;        ///< colocated: trainer state to host memory while the rollout runs, and the
                              ///< rollout engine's weights while the trainer runs (vLLM/SGLang sleep mode)
  /// The KL reference's weights live in host memory and are swapped in for its forward pass (NeMo RL's
  /// use_reference_model): the policy's weights out and the reference's in, then the policy's back.
  bool reference_on_host = false;
  WeightSync weight_sync = WeightSync::full;
  nlohmann::json rollout;     ///< the rollout engine's serving section (TP, engine, precision, limits)
  std::uint64_t seed = 1;
  long long samples() const { return static_cast<long long>(prompts) * group_size; }
  /// Forward passes over the samples besides the rollout: old log-probs (always, as veRL's
  /// compute_log_prob), the reference, the reward model, PPO's critic values.
  int forward_passes() const {
    return 1 + (reference_model ? 1 : 0) + (reward_model ? 1 : 0) + (algorithm == Algorithm::ppo ? 1 : 0);
  }
  /// Training steps' worth of updates: the policy's, and PPO's critic (the policy's size) as many again.
  int update_models() const { return algorithm == Algorithm::ppo ? 2 : 1; }
};

/// Whether a training scenario document asks for RL (training.workload "rl").
bool is_rl_document(const nlohmann::json& document);

/// Reads and checks the "rl" section (InputError naming `origin`, the key and what was expected).
RlSpec read_rl_spec(const nlohmann::json& document, const std::string& origin);

std::string to_string(Algorithm algorithm);
std::string to_string(Placement placement);

}  // namespace fmsim::rl
