// The OpenMetrics writer (report/openmetrics.hpp) and the per-interval grid of the time-series exports.
#include <catch2/catch.hpp>

#include <cmath>

#include "../../src/report/metrics_grid.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/report/openmetrics.hpp"

using namespace fmsim::report;
using Catch::Matchers::Contains;
using Catch::Matchers::EndsWith;

TEST_CASE("OpenMetrics text: families, counters' _total, timestamps from the start, # EOF", "[metrics]") {
  MetricsOptions o;
  o.start_unix_s = 1000;
  o.labels = {{"site", "a\"b"}};
  OpenMetricsWriter w(o);
  w.family("g", MetricType::gauge, "a gauge");
  w.family("c_bytes", MetricType::counter, "a counter", "bytes");
  w.sample("g", {{"gpu", "0"}}, 0.5, 2);
  w.sample("c_bytes", {}, 0.0, 0);
  w.sample("c_bytes", {}, 1.25, 7);
  w.sample("g", {{"gpu", "0"}}, 0.0, 1);  // out of order: written sorted
  const std::string text = w.text();
  CHECK(text ==
        "# TYPE g gauge\n# HELP g a gauge\n"
        "g{gpu=\"0\",simulated=\"true\",site=\"a\\\"b\"} 1 1000.000\n"
        "g{gpu=\"0\",simulated=\"true\",site=\"a\\\"b\"} 2 1000.500\n"
        "# TYPE c_bytes counter\n# UNIT c_bytes bytes\n# HELP c_bytes a counter\n"
        "c_bytes_total{simulated=\"true\",site=\"a\\\"b\"} 0 1000.000\n"
        "c_bytes_total{simulated=\"true\",site=\"a\\\"b\"} 7 1001.250\n"
        "# EOF\n");
  CHECK(w.series_count() == 2);
}

TEST_CASE("OpenMetrics histogram: cumulative buckets with +Inf, count and sum per point", "[metrics]") {
  OpenMetricsWriter w(MetricsOptions{0, {}});
  w.family("lat_seconds", MetricType::histogram, "latency", "seconds", {0.1, 1});
  w.histogram("lat_seconds", {}, 2, {1, 3, 4}, 5.5);
  const std::string text = w.text();
  CHECK_THAT(text, Contains("lat_seconds_bucket{simulated=\"true\",le=\"0.1\"} 1 2.000\n"));
  CHECK_THAT(text, Contains("lat_seconds_bucket{simulated=\"true\",le=\"1\"} 3 2.000\n"));
  CHECK_THAT(text, Contains("lat_seconds_bucket{simulated=\"true\",le=\"+Inf\"} 4 2.000\n"));
  CHECK_THAT(text, Contains("lat_seconds_count{simulated=\"true\"} 4 2.000\n"));
  CHECK_THAT(text, Contains("lat_seconds_sum{simulated=\"true\"} 5.5 2.000\n"));
  CHECK_THROWS_AS(w.histogram("lat_seconds", {}, 3, {1, 2}, 0), std::logic_error);  // wrong bucket count
}

TEST_CASE("OpenMetrics: one sample per series per millisecond, the last one kept", "[metrics]") {
  OpenMetricsWriter w(MetricsOptions{0, {}});
  w.family("g", MetricType::gauge, "g");
  w.sample("g", {}, 1.0, 1);
  w.sample("g", {}, 1.0002, 2);
  const std::string text = w.text();
  CHECK_THAT(text, Contains("g{simulated=\"true\"} 2 1.000\n"));
  CHECK(text.find("} 1 1.000") == std::string::npos);
}

TEST_CASE("OpenMetrics: families are declared once, with a unit their name ends with", "[metrics]") {
  OpenMetricsWriter w(MetricsOptions{});
  w.family("x_seconds", MetricType::gauge, "x", "seconds");
  CHECK_NOTHROW(w.family("x_seconds", MetricType::gauge, "x again", "seconds"));
  CHECK_THROWS_AS(w.family("x_seconds", MetricType::counter, "x"), std::logic_error);
  CHECK_THROWS_AS(w.family("y", MetricType::gauge, "y", "bytes"), std::logic_error);
  CHECK_THROWS_AS(w.sample("undeclared", {}, 0, 1), std::logic_error);
}

TEST_CASE("metrics start times and labels parse or say why not", "[metrics]") {
  CHECK(parse_metrics_start("1767225600") == 1767225600);
  CHECK(parse_metrics_start("2026-01-01T00:00:00Z") == 1767225600);
  CHECK(parse_metrics_start("2026-03-01T12:30:15.5Z") == Approx(1767225600 + (59 * 86400) + 12 * 3600 + 30 * 60 + 15.5));
  CHECK(parse_metrics_start("now") > 1.7e9);
  CHECK_THROWS_WITH(parse_metrics_start("yesterday"), Contains("--metrics-start: 'yesterday' is not a time"));
  CHECK_THROWS_AS(parse_metrics_start("2026-13-01T00:00:00Z"), fmsim::InputError);
  CHECK_THROWS_AS(parse_metrics_start("2026-02-30T00:00:00Z"), fmsim::InputError);
  CHECK(parse_metrics_label("cluster=prod") == std::make_pair(std::string("cluster"), std::string("prod")));
  CHECK(parse_metrics_label("empty=") == std::make_pair(std::string("empty"), std::string("")));
  CHECK_THROWS_WITH(parse_metrics_label("gpu=1"), Contains("label 'gpu' clashes"));
  CHECK_THROWS_WITH(parse_metrics_label("simulated=false"), Contains("clashes"));
  CHECK_THROWS_WITH(parse_metrics_label("9lives=1"), Contains("not a Prometheus label name"));
  CHECK_THROWS_WITH(parse_metrics_label("__name__=x"), Contains("not a Prometheus label name"));
  CHECK_THROWS_WITH(parse_metrics_label("novalue"), Contains("is not KEY=VALUE"));
}

TEST_CASE("sample grid: both ends, at least 1 ms apart, bounded, and interval sums conserve what was spread", "[metrics]") {
  const auto t = sample_grid(10.0, 11);
  REQUIRE(t.size() == 11);
  CHECK(t.front() == 0);
  CHECK(t.back() == 10.0);
  CHECK(sample_grid(0.0005, 100).size() == 2);  // 0 and the end, a millisecond apart at most
  CHECK(sample_grid(1e6, 50).size() <= 51);
  fmsim::report::detail::MetricsGrid grid(10.0, 11);
  auto busy = grid.zeros();
  grid.add_time(busy, 0.5, 2.5);  // half of [0,1], all of [1,2], half of [2,3]
  CHECK(busy[0] == Approx(0.5));
  CHECK(busy[1] == Approx(1.0));
  CHECK(busy[2] == Approx(0.5));
  auto bytes = grid.zeros();
  grid.add_amount(bytes, 0.5, 2.5, 100);
  grid.add_amount(bytes, 9.5, 9.5, 7);  // instant: all in its interval
  double total = 0;
  for (double b : bytes) total += b;
  CHECK(total == Approx(107));
  CHECK(grid.cumulative(bytes).back() == Approx(107));
  CHECK(grid.cumulative(bytes).front() == 0);
}
