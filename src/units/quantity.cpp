#include "fmsim/units/quantity.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <unordered_map>

namespace fmsim::units {
namespace {

using UnitTable = std::unordered_map<std::string_view, double>;

/// No physical quantity fmsim models comes near this (1e30 bytes, seconds, bytes/s or FLOP/s), and
/// sums or products of a few such values stay finite.
constexpr double kLargestQuantity = 1e30;
/// The largest collective size on the command line: 1 PiB, far beyond any GPU memory.
constexpr double kLargestSizeArgument = 1125899906842624.0;

const UnitTable& bytes_units() {
  static const UnitTable table = {
      {"B", 1.0},           {"KB", 1e3},          {"MB", 1e6},          {"GB", 1e9},
      {"TB", 1e12},         {"PB", 1e15},         {"KiB", 1024.0},      {"MiB", 1048576.0},
      {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"PiB", 1125899906842624.0}};
  return table;
}

const UnitTable& time_units() {
  static const UnitTable table = {{"s", 1.0},     {"ms", 1e-3},  {"us", 1e-6}, {"\xC2\xB5s", 1e-6},
                                  {"ns", 1e-9},   {"min", 60.0}, {"h", 3600.0}};
  return table;
}

const UnitTable& bandwidth_units() {
  static const UnitTable table = {
      {"Bps", 1.0},    {"KBps", 1e3},  {"MBps", 1e6},  {"GBps", 1e9},  {"TBps", 1e12},
      {"B/s", 1.0},    {"KB/s", 1e3},  {"MB/s", 1e6},  {"GB/s", 1e9},  {"TB/s", 1e12},
      {"KiBps", 1024.0}, {"MiBps", 1048576.0}, {"GiBps", 1073741824.0},
      {"bps", 0.125},  {"Kbps", 125.0}, {"Mbps", 1.25e5}, {"Gbps", 1.25e8}, {"Tbps", 1.25e11},
      {"b/s", 0.125},  {"Kb/s", 125.0}, {"Mb/s", 1.25e5}, {"Gb/s", 1.25e8}, {"Tb/s", 1.25e11}};
  return table;
}

const UnitTable& flop_rate_units() {
  static const UnitTable table = {{"FLOPS", 1.0},   {"GFLOPS", 1e9},  {"TFLOPS", 1e12},
                                  {"PFLOPS", 1e15}, {"EFLOPS", 1e18}};
  return table;
}

const UnitTable& request_rate_units() {
  static const UnitTable table = {{"/s", 1.0}, {"/min", 1.0 / 60.0}};
  return table;
}

const UnitTable& table_for(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes: return bytes_units();
    case Dimension::time: return time_units();
    case Dimension::bandwidth: return bandwidth_units();
    case Dimension::flop_rate: return flop_rate_units();
    case Dimension::request_rate: return request_rate_units();
  }
  throw std::logic_error("unknown dimension");
}

std::string_view trim(std::string_view text) {
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.front()))) text.remove_prefix(1);
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.remove_suffix(1);
  return text;
}

/// Splits "12.5 GBps" into the number and the unit; the number may use an exponent ("1e9").
std::pair<double, std::string_view> split_number(std::string_view text) {
  text = trim(text);
  if (text.empty()) throw std::invalid_argument("empty value");
  std::size_t end = 0;
  while (end < text.size() && (std::isdigit(static_cast<unsigned char>(text[end])) || text[end] == '.' ||
                               text[end] == '-' || text[end] == '+' ||
                               ((text[end] == 'e' || text[end] == 'E') && end > 0 && end + 1 < text.size() &&
                                (std::isdigit(static_cast<unsigned char>(text[end + 1])) ||
                                 text[end + 1] == '-' || text[end + 1] == '+')))) {
    ++end;
  }
  if (end == 0) throw std::invalid_argument("no number");
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + end, value);
  if (ec == std::errc::result_out_of_range) throw std::invalid_argument("number out of range");
  if (ec != std::errc() || ptr != text.data() + end) throw std::invalid_argument("malformed number");
  return {value, trim(text.substr(end))};
}

}  // namespace

std::string describe(Dimension dimension) {
  switch (dimension) {
    case Dimension::bytes: return "a size with a unit like '80GiB' or '141GB'";
    case Dimension::time: return "a time with a unit like '936ns', '2.5us' or '1.5s'";
    case Dimension::bandwidth: return "a bandwidth with a unit like '400GBps' or '3200Gbps'";
    case Dimension::flop_rate: return "a FLOP rate with a unit like '989.5TFLOPS'";
    case Dimension::request_rate: return "a rate with a unit like '3500/s'";
  }
  return "a quantity";
}

double parse(std::string_view text, Dimension dimension) {
  auto [value, unit] = split_number(text);
  if (unit.empty()) throw std::invalid_argument("missing unit");
  const auto& table = table_for(dimension);
  auto it = table.find(unit);
  if (it == table.end()) throw std::invalid_argument("unknown unit '" + std::string(unit) + "'");
  if (!std::isfinite(value)) throw std::invalid_argument("not a finite number");
  if (value < 0) throw std::invalid_argument("negative value");
  const double si = value * it->second;
  // 1e306h or 1e300PiB: finite as written, infinite in SI units.
  if (!std::isfinite(si) || si > kLargestQuantity) throw std::invalid_argument("too large a value");
  return si;
}

double parse_size_argument(std::string_view text) {
  text = trim(text);
  if (text.empty()) throw std::invalid_argument("empty size");
  double multiplier = 1.0;
  switch (text.back()) {
    case 'K': case 'k': multiplier = 1024.0; break;
    case 'M': case 'm': multiplier = 1048576.0; break;
    case 'G': case 'g': multiplier = 1073741824.0; break;
    case 'T': case 't': multiplier = 1099511627776.0; break;
    default: break;
  }
  if (multiplier != 1.0) text.remove_suffix(1);
  unsigned long long count = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), count);
  if (ec != std::errc() || ptr != text.data() + text.size()) {
    throw std::invalid_argument("expected an integer with an optional K/M/G/T suffix (powers of 1024)");
  }
  const double bytes = static_cast<double>(count) * multiplier;
  if (bytes > kLargestSizeArgument) throw std::invalid_argument("at most 1P bytes (1024T)");
  return bytes;
}

}  // namespace fmsim::units
