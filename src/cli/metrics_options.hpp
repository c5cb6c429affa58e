#pragma once
// The --metrics FILE, --metrics-start TIME and --metrics-label KEY=VALUE options that run, serve,
// checkpoint and cluster share (docs/observability.md).
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "fmsim/report/openmetrics.hpp"

namespace fmsim::cli {

struct MetricsCli {
  std::string file;
  std::string start;
  std::vector<std::string> labels;
};

void add_metrics_options(CLI::App* sub, MetricsCli& m);

/// The writer options, validated (InputError naming the option and the value). Call before simulating,
/// so that a bad option costs nothing.
report::MetricsOptions metrics_options(const MetricsCli& m);

}  // namespace fmsim::cli
