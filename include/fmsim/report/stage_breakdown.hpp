#pragma once
// The step breakdown per pipeline stage: for each stage, its busiest simulated rank's time line split
// into compute, exposed communication by kind, optimizer and bubble (each row sums to the step time).
// The critical rank of the step (the busiest of all) is one of these rows.
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/report/training_report.hpp"

namespace fmsim::report {

/// Breakdown classes in display order.
const std::vector<std::string>& breakdown_keys();

struct StageBreakdown {
  int pipeline_rank = 0;
  int rank = 0;                               ///< the stage's busiest simulated rank
  double busy_s = 0;                          ///< step time less bubble
  std::map<std::string, double> breakdown_s;  ///< every key of breakdown_keys()
};

/// One row per pipeline stage that has simulated ranks, in stage order.
std::vector<StageBreakdown> stage_breakdown(const TrainingRun& run);
/// The pipeline stage of the critical rank.
int critical_pipeline_rank(const TrainingRun& run);
/// [{"pipeline_rank", "rank", "busy_s", "breakdown_s"}, ...] for the run document.
nlohmann::json stage_breakdown_json(const TrainingRun& run);
/// The text table of the summary (empty with one stage): a column per class that any stage has.
std::string stage_breakdown_table(const TrainingRun& run);

}  // namespace fmsim::report
