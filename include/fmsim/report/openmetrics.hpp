#pragma once
// Time series in the OpenMetrics text format (https://prometheus.io/docs/specs/om/open_metrics_spec/),
// with a timestamp on every sample, as `promtool tsdb create-blocks-from openmetrics` loads them into a
// Prometheus data directory. Families keep their first-use order; each series' samples are written
// together in time order; counters carry the `_total` suffix, histograms `_bucket`/`_count`/`_sum`;
// the file ends with `# EOF`. Every series carries `simulated="true"` and the caller's common labels.
// docs/observability.md describes the series each command writes.
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace fmsim::report {

using MetricLabels = std::vector<std::pair<std::string, std::string>>;

enum class MetricType { gauge, counter, histogram };

/// Where the simulated time 0 lands on the wall clock, and the labels put on every series.
struct MetricsOptions {
  double start_unix_s = 1767225600;  ///< 2026-01-01T00:00:00Z: a fixed origin keeps the output reproducible
  MetricLabels labels;               ///< --metrics-label KEY=VALUE, after the command's own (scenario, simulated)
};

/// Parses --metrics-start: "now", Unix seconds, or an RFC 3339 UTC time ("2026-03-01T12:00:00Z").
/// Throws InputError naming the option and the value.
double parse_metrics_start(const std::string& text);

/// Parses one --metrics-label KEY=VALUE. The key must be a Prometheus label name that fmsim does not set
/// itself (a clash would make two series one); throws InputError naming the label otherwise.
std::pair<std::string, std::string> parse_metrics_label(const std::string& text);

/// A label value as the Prometheus text formats need it: backslash, double quote and newline escaped.
std::string escape_label_value(const std::string& value);

/// Label names fmsim's own series use (a user label may not take them).
const std::vector<std::string>& reserved_metric_labels();

class OpenMetricsWriter {
 public:
  explicit OpenMetricsWriter(MetricsOptions options) : options_(std::move(options)) {}

  /// Declares a family (a second declaration of the same name with another type or buckets is a program
  /// error: std::logic_error naming it). `unit` is empty or the suffix the name ends with ("seconds").
  void family(const std::string& name, MetricType type, const std::string& help, const std::string& unit = "",
              std::vector<double> buckets = {});
  /// A gauge or counter sample at simulated time `t_s`. Counters are cumulative values.
  void sample(const std::string& name, const MetricLabels& labels, double t_s, double value);
  /// A histogram sample at `t_s`: cumulative counts per bucket (the family's buckets, +Inf last), the
  /// count and the sum of all observations so far.
  void histogram(const std::string& name, const MetricLabels& labels, double t_s, const std::vector<double>& cumulative,
                 double sum);

  /// The document. Samples of one series at the same millisecond (Prometheus' resolution) keep the last.
  std::string text() const;
  std::size_t series_count() const;

 private:
  struct Point {
    long long t_ms;
    std::vector<double> values;  ///< gauge/counter: one; histogram: buckets..., count, sum
  };
  struct Series {
    std::string labels;  ///< rendered, without braces
    std::vector<Point> points;
  };
  struct Family {
    std::string name, help, unit;
    MetricType type = MetricType::gauge;
    std::vector<double> buckets;
    std::vector<Series> series;
    std::map<std::string, std::size_t> index;
  };
  Family& find(const std::string& name, MetricType type);
  Series& series_of(Family& f, const MetricLabels& labels);

  MetricsOptions options_;
  std::vector<Family> families_;
  std::map<std::string, std::size_t> index_;
};

/// Evenly spaced sample times over [0, end_s] (both ends included), at least 1 ms apart (Prometheus keeps
/// milliseconds) and at most `max_points` of them.
std::vector<double> sample_grid(double end_s, int max_points);

}  // namespace fmsim::report
