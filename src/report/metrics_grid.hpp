#pragma once
// Sample times and per-interval accumulation for the time-series exports (run, serve, checkpoint and
// cluster metrics): interval i runs from t[i] to t[i+1]; a gauge sampled at t[i+1] reports interval i
// (what a scraper sees over its last period), a counter at t[i] the total up to t[i].
#include <algorithm>
#include <vector>

#include "fmsim/report/openmetrics.hpp"

namespace fmsim::report::detail {

class MetricsGrid {
 public:
  MetricsGrid(double end_s, int max_points) : t(sample_grid(end_s, max_points)) {}

  std::vector<double> t;

  std::size_t intervals() const { return t.size() > 1 ? t.size() - 1 : 1; }
  double width(std::size_t i) const { return t.size() > 1 ? t[i + 1] - t[i] : 0.0; }
  std::vector<double> zeros() const { return std::vector<double>(intervals(), 0.0); }

  /// Adds to each interval the seconds of [s, e] that fall in it.
  void add_time(std::vector<double>& acc, double s, double e) const { spread(acc, s, e, -1.0); }
  /// Spreads `amount` over [s, e] in proportion to time (all of it into s's interval when e <= s).
  void add_amount(std::vector<double>& acc, double s, double e, double amount) const { spread(acc, s, e, amount); }

  /// Running totals at each sample time from per-interval amounts (0 at t[0]).
  std::vector<double> cumulative(const std::vector<double>& per_interval) const {
    std::vector<double> out(t.size(), 0.0);
    for (std::size_t i = 1; i < t.size(); ++i) out[i] = out[i - 1] + per_interval[i - 1];
    return out;
  }

 private:
  std::size_t index_of(double x) const {
    if (t.size() < 2) return 0;
    auto it = std::upper_bound(t.begin(), t.end(), x);
    std::size_t i = it == t.begin() ? 0 : static_cast<std::size_t>(it - t.begin()) - 1;
    return std::min(i, t.size() - 2);
  }
  void spread(std::vector<double>& acc, double s, double e, double amount) const {
    if (t.size() < 2) {
      acc[0] += amount < 0 ? std::max(0.0, e - s) : amount;
      return;
    }
    if (!(e > s)) {
      if (amount > 0) acc[index_of(s)] += amount;
      return;
    }
    for (std::size_t i = index_of(s); i < t.size() - 1 && t[i] < e; ++i) {
      const double overlap = std::min(e, t[i + 1]) - std::max(s, t[i]);
      if (overlap > 0) acc[i] += amount < 0 ? overlap : amount * overlap / (e - s);
    }
  }
};

}  // namespace fmsim::report::detail
