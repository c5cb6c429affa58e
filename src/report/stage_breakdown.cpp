// Per-pipeline-stage step breakdown (stage_breakdown.hpp).
#include "fmsim/report/stage_breakdown.hpp"

#include <cstdio>

#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::report {

const std::vector<std::string>& breakdown_keys() {
  static const std::vector<std::string> keys = {"compute", "tp_comm", "cp_comm", "ep_comm", "pp_comm", "dp_comm", "optimizer", "host", "bubble"};
  return keys;
}

namespace {

double value_of(const std::map<std::string, double>& breakdown, const std::string& key) {
  auto it = breakdown.find(key);
  return it == breakdown.end() ? 0.0 : it->second;
}

}  // namespace

int critical_pipeline_rank(const TrainingRun& run) {
  return workload::coords_of(run.scenario->parallelism, run.step.critical_rank).pp;
}

std::vector<StageBreakdown> stage_breakdown(const TrainingRun& run) {
  const double step = run.step.step_time_s;
  std::map<int, StageBreakdown> stages;
  for (const auto& [rank, breakdown] : run.step.rank_breakdown_s) {
    StageBreakdown row;
    row.pipeline_rank = workload::coords_of(run.scenario->parallelism, rank).pp;
    row.rank = rank;
    row.busy_s = step - value_of(breakdown, "bubble");
    for (const auto& key : breakdown_keys()) row.breakdown_s[key] = value_of(breakdown, key);
    auto [it, inserted] = stages.try_emplace(row.pipeline_rank, row);
    // The critical rank stands for its own stage; elsewhere the busiest rank (the lowest among ties).
    const bool critical = rank == run.step.critical_rank;
    if (!inserted && (critical || (it->second.rank != run.step.critical_rank && row.busy_s > it->second.busy_s))) it->second = row;
  }
  std::vector<StageBreakdown> out;
  for (auto& [stage, row] : stages) out.push_back(std::move(row));
  return out;
}

nlohmann::json stage_breakdown_json(const TrainingRun& run) {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& row : stage_breakdown(run)) {
    rows.push_back({{"pipeline_rank", row.pipeline_rank}, {"rank", row.rank}, {"busy_s", row.busy_s}, {"breakdown_s", row.breakdown_s}});
  }
  return rows;
}

std::string stage_breakdown_table(const TrainingRun& run) {
  const auto rows = stage_breakdown(run);
  if (rows.size() < 2) return "";
  std::vector<std::string> columns;
  for (const auto& key : breakdown_keys()) {
    bool shown = key == "compute" || key == "bubble";
    for (const auto& row : rows) shown = shown || row.breakdown_s.at(key) > 0;
    if (shown) columns.push_back(key);
  }
  const double step = run.step.step_time_s;
  std::string out = "  per pipeline stage (its busiest rank; exposed time in s, each row sums to the step; * critical):\n";
  char cell[64];
  std::snprintf(cell, sizeof cell, "    %5s %7s", "stage", "rank");
  out += cell;
  for (const auto& key : columns) {
    std::snprintf(cell, sizeof cell, " %10s", key.c_str());
    out += cell;
  }
  std::snprintf(cell, sizeof cell, " %7s\n", "busy");
  out += cell;
  for (const auto& row : rows) {
    std::snprintf(cell, sizeof cell, "    %4d%s %7d", row.pipeline_rank, row.rank == run.step.critical_rank ? "*" : " ", row.rank);
    out += cell;
    for (const auto& key : columns) {
      std::snprintf(cell, sizeof cell, " %10.3f", row.breakdown_s.at(key));
      out += cell;
    }
    std::snprintf(cell, sizeof cell, " %5.1f %%\n", step > 0 ? 100 * row.busy_s / step : 0.0);
    out += cell;
  }
  return out;
}

}  // namespace fmsim::report
