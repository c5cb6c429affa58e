// --metrics options (metrics_options.hpp).
#include "metrics_options.hpp"

#include "fmsim/common/error.hpp"

namespace fmsim::cli {

void add_metrics_options(CLI::App* sub, MetricsCli& m) {
  sub->add_option("--metrics", m.file, "write simulated time series in OpenMetrics text ('-' = stdout; docs/observability.md)");
  sub->add_option("--metrics-start", m.start, "wall-clock time of simulated time 0: now, Unix seconds or 2026-01-01T00:00:00Z (the default)");
  sub->add_option("--metrics-label", m.labels, "add a label to every series: KEY=VALUE (repeatable)");
}

report::MetricsOptions metrics_options(const MetricsCli& m) {
  report::MetricsOptions o;
  if ((!m.start.empty() || !m.labels.empty()) && m.file.empty()) {
    throw InputError(std::string(m.start.empty() ? "--metrics-label" : "--metrics-start") + " needs --metrics FILE");
  }
  if (!m.start.empty()) o.start_unix_s = report::parse_metrics_start(m.start);
  for (const auto& label : m.labels) {
    const auto kv = report::parse_metrics_label(label);
    for (const auto& [k, v] : o.labels) {
      if (k == kv.first) throw InputError("--metrics-label: label '" + k + "' given twice");
    }
    o.labels.push_back(kv);
  }
  return o;
}

}  // namespace fmsim::cli
