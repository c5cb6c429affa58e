#pragma once
// What each simulated GPU did during the step, as a monitoring agent would see it: how busy its compute
// stream was, HBM in use, NVLink bytes it sent, and bytes it sent over its EFA rail. Feeds the result
// document's "gpus" list and, from there, the Prometheus export.
#include <nlohmann/json.hpp>

#include "fmsim/report/training_report.hpp"

namespace fmsim::report {

/// One object per simulated rank (a symmetric run simulates one rank per pipeline stage, standing for
/// its TP/CP/DP peers): rank, pipeline_rank, node, local_gpu, compute_busy_fraction, hbm_used_bytes,
/// nvlink_tx_bytes (collectives and sends whose members share one NVLink domain, at nccl-tests' bus
/// factor; cross-domain collectives' NVLink legs are not counted), network_tx_bytes (its rail's uplink).
nlohmann::json gpu_usage(const TrainingRun& run);

}  // namespace fmsim::report
