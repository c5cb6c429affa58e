#include "fmsim/units/format.hpp"

#include <cmath>
#include <cstdio>

namespace fmsim::units {
namespace {

std::string scaled(double value, const char* const* prefixes, int count, double step, const char* unit) {
  int index = 0;
  double magnitude = std::fabs(value);
  while (index + 1 < count && magnitude >= step) {
    magnitude /= step;
    value /= step;
    ++index;
  }
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.4g %s%s", value, prefixes[index], unit);
  return buffer;
}

}  // namespace

std::string format_bytes(double bytes) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(bytes, prefixes, 7, 1000.0, "B");
}

std::string format_bandwidth(double bytes_per_s) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P"};
  return scaled(bytes_per_s, prefixes, 6, 1000.0, "B/s");
}

std::string format_flop_rate(double flops_per_s) {
  static const char* const prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  return scaled(flops_per_s, prefixes, 7, 1000.0, "FLOP/s");
}

std::string format_time(double seconds) {
  char buffer[64];
  double magnitude = std::fabs(seconds);
  if (magnitude == 0.0) return "0 s";
  if (magnitude < 1e-6) std::snprintf(buffer, sizeof buffer, "%.4g ns", seconds * 1e9);
  else if (magnitude < 1e-3) std::snprintf(buffer, sizeof buffer, "%.4g us", seconds * 1e6);
  else if (magnitude < 1.0) std::snprintf(buffer, sizeof buffer, "%.4g ms", seconds * 1e3);
  else std::snprintf(buffer, sizeof buffer, "%.4g s", seconds);
  return buffer;
}

std::string format_usd(double usd) {
  // Sized to the number: "%.2f" of a large cost has more digits than any fixed buffer holds.
  if (!std::isfinite(usd)) return usd != usd ? "$nan" : (usd > 0 ? "$inf" : "$-inf");
  std::string digits(static_cast<std::size_t>(std::snprintf(nullptr, 0, "%.2f", usd)), '\0');
  std::snprintf(digits.data(), digits.size() + 1, "%.2f", usd);
  auto dot = digits.find('.');
  std::string integer = digits.substr(0, dot);
  std::string grouped;
  int counter = 0;
  for (auto it = integer.rbegin(); it != integer.rend(); ++it) {
    if (counter > 0 && counter % 3 == 0 && *it != '-') grouped.insert(grouped.begin(), ',');
    grouped.insert(grouped.begin(), *it);
    ++counter;
  }
  return "$" + grouped + digits.substr(dot);
}

}  // namespace fmsim::units
