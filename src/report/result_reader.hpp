#pragma once
// Reads fields of a result document (fmsim.run/1, fmsim.serve/1, ...) for the report writers; a missing
// or mistyped field is an InputError naming the file and the JSON pointer.
#include <cmath>
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "fmsim/common/error.hpp"

namespace fmsim::report::detail {

class ResultReader {
 public:
  ResultReader(const nlohmann::json& doc, std::string file) : doc_(doc), file_(std::move(file)) {}

  const nlohmann::json& doc() const { return doc_; }
  const std::string& file() const { return file_; }

  const nlohmann::json& at(const std::string& pointer) const {
    const nlohmann::json::json_pointer p(pointer);
    if (!doc_.contains(p)) fail(pointer, "is missing");
    return doc_.at(p);
  }
  bool has(const std::string& pointer) const {
    const nlohmann::json::json_pointer p(pointer);
    return doc_.contains(p) && !doc_.at(p).is_null();
  }
  double number(const std::string& pointer) const {
    const auto& v = at(pointer);
    if (!v.is_number()) fail(pointer, "should be a number, got " + v.dump());
    return v.get<double>();
  }
  double number_or(const std::string& pointer, double fallback) const {
    return has(pointer) && at(pointer).is_number() ? at(pointer).get<double>() : fallback;
  }
  /// A whole number from `minimum` to `maximum` (a count, rank or index): converting 1e300 or 2.5 to an
  /// int would be undefined behaviour or silently wrong, so anything else is an InputError.
  int integer(const std::string& pointer, int minimum = 0, int maximum = kLargestCount) const {
    return whole_number(at(pointer), pointer, minimum, maximum);
  }
  int integer_or(const std::string& pointer, int fallback, int minimum = 0, int maximum = kLargestCount) const {
    return has(pointer) ? integer(pointer, minimum, maximum) : fallback;
  }
  /// The same for a field of an object inside the document (`where` names it in the message).
  int integer_in(const nlohmann::json& object, const std::string& key, const std::string& where, int minimum = 0,
                 int maximum = kLargestCount) const {
    if (!object.is_object() || !object.contains(key)) fail(where + "/" + key, "is missing");
    return whole_number(object.at(key), where + "/" + key, minimum, maximum);
  }
  int integer_in_or(const nlohmann::json& object, const std::string& key, const std::string& where, int fallback, int minimum = 0,
                    int maximum = kLargestCount) const {
    if (!object.is_object() || !object.contains(key) || object.at(key).is_null()) return fallback;
    return whole_number(object.at(key), where + "/" + key, minimum, maximum);
  }
  int whole_number(const nlohmann::json& v, const std::string& pointer, int minimum, int maximum) const {
    const bool whole = v.is_number_integer() || (v.is_number_float() && std::isfinite(v.get<double>()) &&
                                                 v.get<double>() == std::floor(v.get<double>()) && std::abs(v.get<double>()) < 1e15);
    const double value = whole ? v.get<double>() : 0.0;
    if (!whole || value < minimum || value > maximum) {
      fail(pointer, "should be a whole number from " + std::to_string(minimum) + " to " + std::to_string(maximum) + ", got " + v.dump());
    }
    return static_cast<int>(value);
  }
  /// A count that may exceed an int (steps of a run), as text: "379".
  std::string count_text(const std::string& pointer) const {
    const double value = number(pointer);
    if (!std::isfinite(value) || value < 0 || value != std::floor(value)) fail(pointer, "should be a whole number >= 0, got " + at(pointer).dump());
    char text[400];
    std::snprintf(text, sizeof text, "%.0f", value);
    return text;
  }
  /// No count in a result comes near this: a cluster has at most 2^20 GPUs.
  static constexpr int kLargestCount = 1 << 30;
  std::string text(const std::string& pointer) const {
    const auto& v = at(pointer);
    if (!v.is_string()) fail(pointer, "should be a string, got " + v.dump());
    return v.get<std::string>();
  }
  std::string text_or(const std::string& pointer, const std::string& fallback) const {
    return has(pointer) && at(pointer).is_string() ? at(pointer).get<std::string>() : fallback;
  }
  const nlohmann::json& array(const std::string& pointer) const {
    const auto& v = at(pointer);
    if (!v.is_array()) fail(pointer, "should be an array");
    return v;
  }
  [[noreturn]] void fail(const std::string& pointer, const std::string& what) const {
    throw InputError(file_ + ": " + pointer + " " + what);
  }

 private:
  const nlohmann::json& doc_;
  std::string file_;
};

/// The document's schema, one of fmsim.run/1, fmsim.serve/1, fmsim.checkpoint/1; InputError naming
/// `file` for anything else.
std::string result_schema(const nlohmann::json& doc, const std::string& file);

/// "12.3 GB", "4.56 ms": a value with a unit, to three significant figures.
std::string with_unit(double value, const std::string& unit);
/// Seconds as "850 µs", "12.3 ms", "4.56 s", "3.2 h", "41 days".
std::string duration_text(double seconds);

/// The page around `body`: title, inline CSS, and a Content-Security-Policy without network sources.
std::string html_page(const std::string& title, const std::string& subtitle, const std::string& body);
/// A two-column table of named values.
std::string facts_table(const std::vector<std::pair<std::string, std::string>>& rows);
/// A section with a heading, a sentence and its content.
std::string section(const std::string& id, const std::string& heading, const std::string& note, const std::string& content);

std::string serve_page(const ResultReader& r);
std::string checkpoint_page(const ResultReader& r);
std::string cluster_page(const ResultReader& r);
std::string rl_page(const ResultReader& r);

}  // namespace fmsim::report::detail
