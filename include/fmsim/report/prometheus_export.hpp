#pragma once
// Prometheus text exposition (format 0.0.4) of a result document, so that simulated runs sit in the same
// dashboards as measured ones. Per-GPU series use dcgm-exporter's names where one fits
// (DCGM_FI_DEV_GPU_UTIL, DCGM_FI_DEV_FB_USED, DCGM_FI_DEV_FB_FREE, DCGM_FI_PROF_NVLINK_TX_BYTES) and its
// labels (gpu, Hostname, modelName); run-level figures are fmsim_*. Every series has simulated="true".
#include <string>

#include <nlohmann/json.hpp>

namespace fmsim::report {

/// Gauges of a fmsim.run/1, fmsim.serve/1 or fmsim.checkpoint/1 document; InputError naming `file`
/// otherwise.
std::string prometheus_text(const nlohmann::json& result, const std::string& file);

}  // namespace fmsim::report
