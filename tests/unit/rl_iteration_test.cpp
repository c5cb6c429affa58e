// RL post-training: how an iteration's phases add up under each placement (closed forms), and the
// weight-transfer bytes.
#include <catch2/catch.hpp>

#include "fmsim/rl/rl_iteration.hpp"

using namespace fmsim::rl;

namespace {

RlPhases phases() {
  RlPhases p;
  p.generation_s = 60;
  p.generation_tail_s = 20;
  p.forward_s = 10;
  p.update_s = 25;
  p.weight_sync_s = 2;
  p.handover_s = 1;
  return p;
}

}  // namespace

TEST_CASE("colocated: every phase in turn on the same GPUs") {
  const RlTiming t = compose_iteration(phases(), Placement::colocated, 0);
  CHECK(t.iteration_s == Approx(60 + 10 + 25 + 2 + 1));
  CHECK(t.rollout_busy_s == Approx(60));
  CHECK(t.trainer_busy_s == Approx(35));
  // Neither role runs during the weight and state moves.
  CHECK(t.rollout_idle_s == Approx(3));
  CHECK(t.trainer_idle_s == Approx(3));
}

TEST_CASE("disaggregated, staleness 0: the pools alternate and each idles while the other works") {
  const RlTiming t = compose_iteration(phases(), Placement::disaggregated, 0);
  CHECK(t.iteration_s == Approx(60 + 2 + 10 + 25));  // no handover: the trainer keeps its GPUs
  CHECK(t.rollout_idle_s == Approx(t.iteration_s - 60));
  CHECK(t.trainer_idle_s == Approx(t.iteration_s - 35));
}

TEST_CASE("disaggregated, staleness >= 1: generation overlaps training, the weight transfer stops both") {
  for (int staleness : {1, 2}) {
    const RlTiming t = compose_iteration(phases(), Placement::disaggregated, staleness);
    CHECK(t.iteration_s == Approx(std::max(60.0, 35.0) + 2));
  }
  RlPhases slow_trainer = phases();
  slow_trainer.update_s = 80;
  CHECK(compose_iteration(slow_trainer, Placement::disaggregated, 1).iteration_s == Approx(90 + 2));
  // Overlap never makes an iteration longer than the alternating schedule, nor shorter than either pool's work.
  const double overlapped = compose_iteration(phases(), Placement::disaggregated, 1).iteration_s;
  CHECK(overlapped <= compose_iteration(phases(), Placement::disaggregated, 0).iteration_s);
  CHECK(overlapped >= 60);
}

TEST_CASE("a full BF16 copy of the policy is two bytes per parameter") {
  CHECK(weight_sync_bytes(8.03e9) == Approx(16.06e9));
  CHECK(weight_sync_bytes(0) == 0);
}

TEST_CASE("forward passes and updates by algorithm") {
  RlSpec grpo;
  CHECK(grpo.forward_passes() == 2);  // old log-probs and the KL reference
  grpo.reference_model = false;
  CHECK(grpo.forward_passes() == 1);
  CHECK(grpo.update_models() == 1);
  RlSpec ppo;
  ppo.algorithm = Algorithm::ppo;
  ppo.reward_model = true;
  CHECK(ppo.forward_passes() == 4);  // old log-probs, reference, reward model, critic values
  CHECK(ppo.update_models() == 2);   // actor and critic
}
