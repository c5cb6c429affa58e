#pragma once
// Simulated metrics over simulated time (`--metrics FILE`), in OpenMetrics text (openmetrics.hpp): a
// training step's phases per GPU, a serving run per replica, a checkpoint's save and restore, and the
// shared cluster's days (cluster_report.hpp). Names follow dcgm-exporter (DCGM_FI_*), the EFA driver's
// hardware counters (efa_*), Amazon FSx for Lustre's CloudWatch metrics (fsx_lustre_*) and fmsim's own
// application series (fmsim_*); docs/observability.md lists every series and what it is computed from.
#include <string>

#include <nlohmann/json.hpp>

#include "fmsim/report/openmetrics.hpp"
#include "fmsim/report/training_report.hpp"

namespace fmsim::inference {
struct ServeOutcome;
}  // namespace fmsim::inference

namespace fmsim::report {

/// One training step: `doc` is the run's result document (fmsim.run/1) built from `run`.
std::string run_metrics(const TrainingRun& run, const nlohmann::json& doc, const MetricsOptions& options);

/// A serving run: the outcome must hold its iterations (simulate_serving with record_timeline); `doc` is
/// the fmsim.serve/1 document.
std::string serve_metrics(const inference::ServeOutcome& outcome, const nlohmann::json& doc, const MetricsOptions& options);

/// One checkpoint save then one restore per strategy, from the `fmsim checkpoint` document
/// (fmsim.checkpoint/1).
std::string checkpoint_metrics(const nlohmann::json& doc, const MetricsOptions& options);

}  // namespace fmsim::report
