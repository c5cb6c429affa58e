// Time series of one checkpoint save and one restore for every strategy of `fmsim checkpoint`
// (time_series.hpp). The save starts at 0: training is blocked for the stall, the first tier (NVMe, the
// remote tier itself, or the peer's memory) is written by first_tier_time_s, and a second tier (the
// "+fsx" / "+s3" of a two-tier strategy) drains from then until the save is durable (save_time_s); each
// tier's bytes are spread evenly over its window (the engine run reports the phase times and the
// binding resource, not a rate curve). The restore follows after a pause of a tenth of the save (at least
// a second) and reads the whole checkpoint. FSx for Lustre series follow the file system's CloudWatch
// metrics (DataWriteBytes, DataReadBytes, MetadataOperations: one create and one close per file saved, one
// open and one close per file restored); NVMe writes follow node-exporter (node_disk_written_bytes_total).
#include <algorithm>

#include "fmsim/report/time_series.hpp"
#include "metrics_grid.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

struct Window {
  double start = 0, end = 0;
};

/// Linear ramp of `total` over `w` at time t.
double ramp(const Window& w, double t, double total) {
  if (t <= w.start) return 0;
  if (t >= w.end || w.end <= w.start) return total;
  return total * (t - w.start) / (w.end - w.start);
}

std::vector<std::string> tiers_of(const std::string& strategy) {
  std::vector<std::string> tiers;
  std::size_t from = 0;
  while (true) {
    const auto plus = strategy.find('+', from);
    tiers.push_back(strategy.substr(from, plus == std::string::npos ? std::string::npos : plus - from));
    if (plus == std::string::npos) break;
    from = plus + 1;
  }
  return tiers;
}

void declare(OpenMetricsWriter& w) {
  w.family("fmsim_checkpoint_training_blocked", MetricType::gauge, "1 while training is blocked by the checkpoint save.");
  w.family("fmsim_checkpoint_written_bytes", MetricType::counter, "Checkpoint bytes written to each tier.", "bytes");
  w.family("fmsim_checkpoint_restored_bytes", MetricType::counter, "Checkpoint bytes read back by the restore.", "bytes");
  w.family("fsx_lustre_data_write_bytes", MetricType::counter, "Bytes written to the FSx for Lustre file system (CloudWatch DataWriteBytes).", "bytes");
  w.family("fsx_lustre_data_read_bytes", MetricType::counter, "Bytes read from the FSx for Lustre file system (CloudWatch DataReadBytes).", "bytes");
  w.family("fsx_lustre_metadata_operations", MetricType::counter, "Metadata operations on FSx for Lustre (CloudWatch MetadataOperations).");
  w.family("node_disk_written_bytes", MetricType::counter, "Bytes written to the instances' NVMe drives, all nodes together.", "bytes");
  w.family("fmsim_checkpoint_save_seconds", MetricType::gauge, "Start of the save to durable.", "seconds");
  w.family("fmsim_checkpoint_restore_seconds", MetricType::gauge, "Restore after a relaunch.", "seconds");
  w.family("fmsim_checkpoint_goodput_ratio", MetricType::gauge, "Share of wall time spent on useful training over the whole run.", "ratio");
  w.family("fmsim_checkpoint_expected_interruptions", MetricType::gauge, "Failures expected over the whole run.");
}

}  // namespace

std::string checkpoint_metrics(const json& doc, const MetricsOptions& options) {
  const std::string scenario = doc.contains("scenario") && doc["scenario"].is_object() ? doc["scenario"].value("name", "") : "";
  const double bytes = doc.value("checkpoint_bytes", 0.0);
  const double files = doc.value("files", 0.0);
  double horizon = 0;
  for (const auto& s : doc.at("strategies")) {
    if (!s.value("available", false)) continue;
    const double save = s.value("save_time_s", 0.0), restore = s.value("restore_time_s", 0.0);
    horizon = std::max(horizon, save + std::max(1.0, 0.1 * save) + restore);
  }
  const detail::MetricsGrid grid(horizon, 600);
  OpenMetricsWriter w(options);
  declare(w);
  for (const auto& s : doc.at("strategies")) {
    if (!s.value("available", false)) continue;
    const std::string strategy = s.value("strategy", "");
    const double save = s.value("save_time_s", 0.0), first = std::min(save, s.value("first_tier_time_s", save));
    const double stall = s.value("step_stall_s", 0.0), restore = s.value("restore_time_s", 0.0);
    const Window restore_window{save + std::max(1.0, 0.1 * save), save + std::max(1.0, 0.1 * save) + restore};
    const auto tiers = tiers_of(strategy);
    // The first tier is written by first_tier_time_s; a second drains from then to durable.
    std::vector<std::pair<std::string, Window>> writes;
    writes.push_back({tiers.front(), {0.0, first}});
    if (tiers.size() > 1) writes.push_back({tiers.back(), {first < save ? first : 0.0, save}});
    // Node-local copies restore surviving ranks; the replaced node's ranks read the durable tier: the
    // restore is labelled with the tier it reads most from (the first for nvme+*, else the durable one).
    const std::string restore_tier = tiers.front() == "nvme" ? "nvme" : tiers.back();
    const MetricLabels base = {{"strategy", strategy}, {"scenario", scenario}};
    for (double t : grid.t) {
      w.sample("fmsim_checkpoint_training_blocked", base, t, t < stall ? 1.0 : 0.0);
      double fsx_write = 0, nvme_write = 0;
      for (const auto& [tier, window] : writes) {
        MetricLabels labels = base;
        labels.insert(labels.begin() + 1, {"tier", tier});
        const double written = ramp(window, t, bytes);
        w.sample("fmsim_checkpoint_written_bytes", labels, t, written);
        if (tier == "fsx") fsx_write = written;
        if (tier == "nvme") nvme_write = written;
      }
      MetricLabels restored = base;
      restored.insert(restored.begin() + 1, {"tier", restore_tier});
      const double read = ramp(restore_window, t, bytes);
      w.sample("fmsim_checkpoint_restored_bytes", restored, t, read);
      if (std::find(tiers.begin(), tiers.end(), "fsx") != tiers.end()) {
        const double fsx_read = restore_tier == "fsx" ? read : 0.0;
        const double fsx_window_start = writes.back().second.start;
        const double meta = (t >= fsx_window_start ? 2 * files : 0.0) + (restore_tier == "fsx" && t >= restore_window.start ? 2 * files : 0.0);
        w.sample("fsx_lustre_data_write_bytes", base, t, fsx_write);
        w.sample("fsx_lustre_data_read_bytes", base, t, fsx_read);
        w.sample("fsx_lustre_metadata_operations", base, t, meta);
      }
      if (tiers.front() == "nvme") w.sample("node_disk_written_bytes", base, t, nvme_write);
    }
    const double end = grid.t.back();
    w.sample("fmsim_checkpoint_save_seconds", base, end, save);
    w.sample("fmsim_checkpoint_restore_seconds", base, end, restore);
    w.sample("fmsim_checkpoint_goodput_ratio", base, end, s.value("goodput", 0.0));
    w.sample("fmsim_checkpoint_expected_interruptions", base, end, s.value("expected_interruptions", 0.0));
  }
  return w.text();
}

}  // namespace fmsim::report
