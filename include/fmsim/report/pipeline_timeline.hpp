#pragma once
// The pipeline time line of one simulated step, for reports: per pipeline stage, the start and end of
// each forward and backward pass (one micro-batch through one model chunk) and of the optimizer step,
// read off the replayed trace. Columns, not rows, so that a notebook turns a stage into a DataFrame.
#include <nlohmann/json.hpp>

#include "fmsim/report/training_report.hpp"

namespace fmsim::report {

/// {"stages": [{"pipeline_rank", "rank", "kind": ["F"|"B"|"O"...], "microbatch", "chunk", "start_s",
/// "end_s"}]} for the lowest rank of each pipeline stage; null when the trace was not built by fmsim
/// (a replayed foreign trace has no pass markers) or is too long to be worth embedding.
nlohmann::json pipeline_timeline(const TrainingRun& run);

}  // namespace fmsim::report
