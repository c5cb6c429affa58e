#pragma once
// One checkpoint strategy judged over a whole run: simulated save/stall/restore, the checkpoint interval
// (configured, or Young/Daly), and goodput, time and cost to train under injected failures. Shared by
// `fmsim checkpoint` (all strategies side by side) and `fmsim run` (the configured one, amortised).
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/storage/checkpoint_io.hpp"
#include "fmsim/storage/checkpoint_plan.hpp"
#include "fmsim/storage/goodput.hpp"

namespace fmsim::storage {

/// How long the run is: steps and their failure-free compute time.
struct RunLength {
  long long steps = 0;
  double tokens = 0;
  double work_s = 0;
  std::string source;  ///< "training.total_tokens", "training.train_iters" or the default's description
};

/// From training.total_tokens or training.train_iters; else 30 days of failure-free compute.
RunLength run_length(const workload::Scenario& s, double step_time_s);

struct Assessment {
  std::string name;                ///< the row's name when not its strategy's (fmsim checkpoint's "checkpointless")
  CheckpointPlan plan;
  bool available = true;
  std::string unavailable_reason;
  CheckpointIo io;
  long long interval_steps = 0;
  double young_daly_interval_s = 0;
  long long young_daly_interval_steps = 0;
  std::string interval_source;     ///< "checkpoint.interval_steps", "checkpoint.interval" or "Young/Daly"
  Recovery recovery = Recovery::restart;
  double restart_s = 0;            ///< per failure, before the restore (recovery_restart_s)
  GoodputResult goodput;
  double usd = 0;                  ///< time to train x cluster price (0 when unpriced)
};

/// Simulates `plan` on the scenario. Throws InputError when the strategy cannot run on this cluster
/// (see check_strategy); `fmsim checkpoint` catches it per strategy to list it as unavailable.
Assessment assess(const workload::Scenario& s, const CheckpointContents& contents, const CheckpointPlan& plan,
                  const FailureModel& failures, double step_time_s, const RunLength& run);

nlohmann::json to_json(const Assessment& a, double step_time_s);

}  // namespace fmsim::storage
