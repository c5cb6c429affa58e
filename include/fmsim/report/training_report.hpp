#pragma once
// Results of `fmsim run`: the derived metrics (tokens/s, model TFLOP/s, MFU, cost), the versioned JSON
// document (schema "fmsim.run/1", docs/formats.md), the text summary and the Perfetto time line.
#include <string>

#include <nlohmann/json.hpp>

#include <optional>

#include "fmsim/storage/assessment.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/scenario.hpp"

namespace fmsim::report {

struct TrainingRun {
  const workload::Scenario* scenario = nullptr;
  const workload::Trace* trace = nullptr;
  const topology::ClusterGraph* cluster = nullptr;
  workload::MemoryReport memory;
  training::StepResult step;
  std::string fidelity;
  double wall_s = 0;
  /// The scenario's checkpoint plan over the whole run, when it has a "checkpoint" section.
  std::optional<storage::Assessment> checkpoint;
};

struct TrainingMetrics {
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  double model_tflops_per_gpu = 0;
  double mfu = 0;                 ///< model FLOP/s over dense BF16 peak (the usual convention)
  double mfu_precision_peak = 0;  ///< over the dense peak of the training precision (FP8 peak for FP8)
  double usd_per_hour = 0, usd_per_step = 0, usd_per_million_tokens = 0;
  bool priced = false;
};

TrainingMetrics metrics_of(const TrainingRun& run);
nlohmann::json run_to_json(const TrainingRun& run);
std::string run_summary(const TrainingRun& run);
/// Chrome trace-event JSON: a process per node, a thread per (rank, stream).
nlohmann::json run_timeline(const TrainingRun& run);

}  // namespace fmsim::report
