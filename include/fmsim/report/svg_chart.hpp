#pragma once
// Inline SVG charts for the HTML report: rows of horizontal stacked bars on one axis (step breakdown,
// memory against HBM, latency percentiles against an SLO) and a lane time line (pipeline passes).
// Pure strings, no script: a page built from them renders the same with JavaScript off.
#include <string>
#include <vector>

namespace fmsim::report::svg {

/// A value to three significant figures without trailing zeros: "1234", "56.7", "2.5", "0.00123".
std::string compact_number(double value);

struct Part {
  std::string label;
  double value = 0;
  std::string color;  ///< CSS colour, e.g. "#4e79a7"
};

struct Row {
  std::string label;
  std::vector<Part> parts;  ///< stacked left to right
};

struct Limit {
  double value = 0;   ///< <= 0: none
  std::string label;  ///< e.g. "HBM 80 GB"
};

/// Horizontal stacked bars, one per row, on a shared axis from 0; `scale` divides values for the axis
/// labels (1e9 with unit "GB" shows bytes as GB). Each part carries a tooltip with its value.
std::string stacked_rows(const std::string& id, const std::vector<Row>& rows, double scale, const std::string& unit,
                         const Limit& limit = {});

struct Span {
  double start = 0, end = 0;
  int style = 0;      ///< index into the chart's colours
  std::string title;  ///< tooltip
};

struct Lane {
  std::string label;
  std::vector<Span> spans;
};

/// Lanes of spans on a time axis from 0 to `end_s` (seconds, shown in ms below 1 s).
std::string timeline(const std::string& id, const std::vector<Lane>& lanes, double end_s, const std::vector<std::string>& colors);
/// The same with the axis in `unit`, seconds divided by `scale` (3600, "hours").
std::string timeline(const std::string& id, const std::vector<Lane>& lanes, double end_s, const std::vector<std::string>& colors,
                     double scale, const std::string& unit);

/// A step function over time, filled beneath: (time s, value) at each change, held until the next and to
/// `end_s`; the horizontal axis in `x_unit` (seconds / x_scale), a line at `ceiling` (the capacity).
std::string step_area(const std::string& id, const std::vector<std::pair<double, double>>& points, double end_s, double x_scale,
                      const std::string& x_unit, double ceiling, const std::string& ceiling_label, const std::string& color);

/// An HTML legend: a coloured square and a label per part (the part's value when `with_values`).
std::string legend(const std::vector<Part>& parts, double scale = 1, const std::string& unit = "", bool with_values = false);

}  // namespace fmsim::report::svg
