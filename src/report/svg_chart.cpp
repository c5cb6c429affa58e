// SVG bar and time-line charts with "nice" axis ticks (1, 2, 5 x 10^k).
#include "fmsim/report/svg_chart.hpp"

#include "fmsim/common/markup_escape.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fmsim::report::svg {

namespace {

constexpr double kWidth = 900, kLabelWidth = 170, kRightMargin = 30, kRowHeight = 26, kAxisHeight = 34;
constexpr double kPlotWidth = kWidth - kLabelWidth - kRightMargin;

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

std::string tick_label(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", std::fabs(value) < 1e-12 ? 0.0 : value);
  return text;
}

/// The tick step giving about `target` ticks up to `max`, rounded to 1, 2 or 5 times a power of ten.
double tick_step(double max, int target = 6) {
  if (!(max > 0)) return 1;
  const double raw = max / target;
  const double power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (raw <= m * power) return m * power;
  }
  return 10 * power;
}

/// Axis line, ticks and labels under a plot of `height` pixels for values 0..axis_max.
std::string axis(double top, double height, double axis_max, double scale, const std::string& unit) {
  std::ostringstream s;
  const double step = tick_step(axis_max / scale) * scale;  // round numbers in the unit shown (days, GB)
  const double y = top + height;
  s << "<line x1='" << kLabelWidth << "' y1='" << num(y) << "' x2='" << kLabelWidth + kPlotWidth << "' y2='" << num(y)
    << "' stroke='#555'/>";
  for (double v = 0; v <= axis_max * (1 + 1e-9); v += step) {
    const double x = kLabelWidth + kPlotWidth * v / axis_max;
    s << "<line x1='" << num(x) << "' y1='" << num(top) << "' x2='" << num(x) << "' y2='" << num(y + 4)
      << "' stroke='#ddd'/><text x='" << num(x) << "' y='" << num(y + 17) << "' text-anchor='middle' class='tick'>"
      << tick_label(v / scale) << "</text>";
  }
  s << "<text x='" << kLabelWidth + kPlotWidth / 2 << "' y='" << num(y + 31) << "' text-anchor='middle' class='unit'>"
    << markup_escape(unit) << "</text>";
  return s.str();
}

std::string open_svg(const std::string& id, double height) {
  std::ostringstream s;
  s << "<svg id='" << markup_escape(id) << "' class='chart' xmlns='http://www.w3.org/2000/svg' width='" << kWidth << "' height='"
    << num(height) << "' viewBox='0 0 " << kWidth << " " << num(height) << "' role='img'>";
  return s.str();
}

}  // namespace

std::string compact_number(double value) {
  char text[32];
  const double a = std::fabs(value);
  std::snprintf(text, sizeof text, a >= 100 || a == 0 ? "%.0f" : a >= 10 ? "%.1f" : "%.3g", value);
  return text;
}

std::string stacked_rows(const std::string& id, const std::vector<Row>& rows, double scale, const std::string& unit,
                         const Limit& limit) {
  double max = limit.value > 0 ? limit.value : 0;
  for (const auto& row : rows) {
    double total = 0;
    for (const auto& p : row.parts) total += std::max(0.0, p.value);
    max = std::max(max, total);
  }
  const double step = tick_step(max > 0 ? max : 1);
  const double axis_max = std::max(1.0, std::ceil((max > 0 ? max : 1) / step - 1e-9)) * step;  // 100.0000001 % stays on a 100 axis
  const double top = limit.value > 0 ? 18 : 6;
  const double plot_height = rows.size() * kRowHeight;
  std::ostringstream s;
  s << open_svg(id, top + plot_height + kAxisHeight + 4) << axis(top, plot_height, axis_max, scale, unit);
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const double y = top + i * kRowHeight;
    s << "<text x='" << kLabelWidth - 8 << "' y='" << num(y + kRowHeight * 0.65) << "' text-anchor='end' class='label'>"
      << markup_escape(rows[i].label) << "</text>";
    double x = kLabelWidth;
    for (const auto& p : rows[i].parts) {
      if (!(p.value > 0)) continue;
      const double w = kPlotWidth * p.value / axis_max;
      s << "<rect x='" << num(x) << "' y='" << num(y + 4) << "' width='" << num(std::max(w, 0.5)) << "' height='"
        << num(kRowHeight - 8) << "' fill='" << p.color << "'><title>" << markup_escape(rows[i].label) << ": " << markup_escape(p.label)
        << " " << compact_number(p.value / scale) << " " << markup_escape(unit) << "</title></rect>";
      x += w;
    }
  }
  if (limit.value > 0) {
    const double x = kLabelWidth + kPlotWidth * limit.value / axis_max;
    s << "<line class='limit' x1='" << num(x) << "' y1='" << num(top - 4) << "' x2='" << num(x) << "' y2='"
      << num(top + plot_height) << "' stroke='#c00' stroke-width='2' stroke-dasharray='6 3'/><text x='" << num(x)
      << "' y='12' text-anchor='middle' class='limit-label'>" << markup_escape(limit.label) << "</text>";
  }
  s << "</svg>";
  return s.str();
}

std::string timeline(const std::string& id, const std::vector<Lane>& lanes, double end_s, const std::vector<std::string>& colors) {
  const bool ms = end_s < 1;
  return timeline(id, lanes, end_s, colors, ms ? 1e-3 : 1, ms ? "ms" : "s");
}

std::string timeline(const std::string& id, const std::vector<Lane>& lanes, double end_s, const std::vector<std::string>& colors,
                     double scale, const std::string& unit) {
  const double top = 6, plot_height = lanes.size() * kRowHeight;
  const double axis_max = end_s > 0 ? end_s : 1;
  std::ostringstream s;
  s << open_svg(id, top + plot_height + kAxisHeight + 4) << axis(top, plot_height, axis_max, scale, unit);
  for (std::size_t i = 0; i < lanes.size(); ++i) {
    const double y = top + i * kRowHeight;
    s << "<text x='" << kLabelWidth - 8 << "' y='" << num(y + kRowHeight * 0.65) << "' text-anchor='end' class='label'>"
      << markup_escape(lanes[i].label) << "</text>";
    for (const auto& span : lanes[i].spans) {
      const double x0 = kLabelWidth + kPlotWidth * span.start / axis_max;
      const double w = std::max(kPlotWidth * (span.end - span.start) / axis_max, 0.5);
      s << "<rect x='" << num(x0) << "' y='" << num(y + 3) << "' width='" << num(w) << "' height='" << num(kRowHeight - 6)
        << "' fill='" << colors.at(static_cast<std::size_t>(span.style) % colors.size()) << "'><title>" << markup_escape(span.title)
        << "</title></rect>";
    }
  }
  s << "</svg>";
  return s.str();
}

std::string step_area(const std::string& id, const std::vector<std::pair<double, double>>& points, double end_s, double x_scale,
                      const std::string& x_unit, double ceiling, const std::string& ceiling_label, const std::string& color) {
  const double top = 18, plot_height = 120;
  const double axis_max = end_s > 0 ? end_s : 1;
  double y_max = ceiling;
  for (const auto& p : points) y_max = std::max(y_max, p.second);
  if (!(y_max > 0)) y_max = 1;
  auto x_of = [&](double t) { return kLabelWidth + kPlotWidth * std::clamp(t, 0.0, axis_max) / axis_max; };
  auto y_of = [&](double v) { return top + plot_height * (1 - v / y_max); };
  std::ostringstream s;
  s << open_svg(id, top + plot_height + kAxisHeight + 4) << axis(top, plot_height, axis_max, x_scale, x_unit);
  s << "<text x='" << kLabelWidth - 8 << "' y='" << num(top + 10) << "' text-anchor='end' class='label'>" << compact_number(y_max) << "</text>";
  s << "<text x='" << kLabelWidth - 8 << "' y='" << num(top + plot_height) << "' text-anchor='end' class='label'>0</text>";
  s << "<path fill='" << color << "' fill-opacity='0.6' stroke='" << color << "' d='M" << num(x_of(0)) << " " << num(y_of(0));
  double last = 0;
  for (const auto& [t, v] : points) {
    s << " L" << num(x_of(t)) << " " << num(y_of(last)) << " L" << num(x_of(t)) << " " << num(y_of(v));
    last = v;
  }
  s << " L" << num(x_of(axis_max)) << " " << num(y_of(last)) << " L" << num(x_of(axis_max)) << " " << num(y_of(0)) << " Z'/>";
  if (ceiling > 0) {
    s << "<line class='limit' x1='" << num(kLabelWidth) << "' y1='" << num(y_of(ceiling)) << "' x2='" << num(kLabelWidth + kPlotWidth)
      << "' y2='" << num(y_of(ceiling)) << "' stroke='#c00' stroke-width='2' stroke-dasharray='6 3'/><text x='"
      << num(kLabelWidth + kPlotWidth) << "' y='" << num(y_of(ceiling) - 4) << "' text-anchor='end' class='limit-label'>"
      << markup_escape(ceiling_label) << "</text>";
  }
  s << "</svg>";
  return s.str();
}

std::string legend(const std::vector<Part>& parts, double scale, const std::string& unit, bool with_values) {
  std::ostringstream s;
  s << "<div class='legend'>";
  for (const auto& p : parts) {
    s << "<span><i style='background:" << p.color << "'></i>" << markup_escape(p.label);
    if (with_values) s << " " << compact_number(p.value / scale) << " " << markup_escape(unit);
    s << "</span>";
  }
  s << "</div>";
  return s.str();
}

}  // namespace fmsim::report::svg
