#include "fmsim/config/object_reader.hpp"

#include <cmath>
#include <cstdio>
#include <limits>

#include "fmsim/common/error.hpp"

namespace fmsim::config {

std::string render_value(const nlohmann::json& value) {
  if (value.is_object()) return "{...}";
  if (value.is_array()) return "[...]";
  std::string text = value.dump();
  if (text.size() > 60) text = text.substr(0, 57) + "...";
  return text;
}

ObjectReader::ObjectReader(const nlohmann::json& object, std::string file, std::string path)
    : object_(object), file_(std::move(file)), path_(std::move(path)) {
  if (!object_.is_object()) {
    throw InputError(file_ + ": at " + (path_.empty() ? "/" : path_) + ": found " + render_value(object_) +
                     ", expected a JSON object");
  }
}

bool ObjectReader::has(const std::string& key) const {
  read_keys_.insert(key);
  return object_.contains(key);
}

std::string integer_range(std::int64_t minimum, std::int64_t maximum) {
  if (maximum == std::numeric_limits<std::int64_t>::max()) return "an integer >= " + std::to_string(minimum);
  return "an integer >= " + std::to_string(minimum) + " and <= " + std::to_string(maximum);
}

void ObjectReader::fail(const std::string& key, const std::string& expected) const {
  std::string found = object_.contains(key) ? render_value(object_.at(key)) : "nothing (key missing)";
  throw InputError(file_ + ": at " + path_of(key) + ": found " + found + ", expected " + expected);
}

bool ObjectReader::present(const std::string& key) {
  read_keys_.insert(key);
  return object_.contains(key);
}

const nlohmann::json& ObjectReader::fetch(const std::string& key) {
  read_keys_.insert(key);
  return object_.at(key);
}

const nlohmann::json& ObjectReader::required_value(const std::string& key) {
  if (!present(key)) fail(key, "a value (this key is required)");
  return fetch(key);
}

std::string ObjectReader::required_string(const std::string& key) {
  if (!present(key)) fail(key, "a string (this key is required)");
  const auto& value = fetch(key);
  if (!value.is_string()) fail(key, "a string");
  return value.get<std::string>();
}

std::optional<std::string> ObjectReader::optional_string(const std::string& key) {
  if (!present(key)) return std::nullopt;
  const auto& value = fetch(key);
  if (!value.is_string()) fail(key, "a string");
  return value.get<std::string>();
}

std::string ObjectReader::string_or(const std::string& key, const std::string& fallback) {
  return optional_string(key).value_or(fallback);
}

std::string ObjectReader::choice_or(const std::string& key, const std::vector<std::string>& allowed,
                                    const std::string& fallback) {
  std::string value = string_or(key, fallback);
  for (const auto& option : allowed) {
    if (option == value) return value;
  }
  std::string list;
  for (const auto& option : allowed) list += (list.empty() ? "" : ", ") + option;
  fail(key, "one of: " + list);
}

std::int64_t ObjectReader::required_int(const std::string& key, std::int64_t minimum, std::int64_t maximum) {
  if (!present(key)) fail(key, integer_range(minimum, maximum) + " (this key is required)");
  return int_or(key, minimum, minimum, maximum);
}

std::int64_t ObjectReader::int_or(const std::string& key, std::int64_t fallback, std::int64_t minimum,
                                  std::int64_t maximum) {
  if (!present(key)) return fallback;
  const auto& value = fetch(key);
  // JSON integers above 2^63 arrive unsigned; compare before converting so nothing wraps.
  const bool in_range = value.is_number_unsigned()
                            ? value.get<std::uint64_t>() <= static_cast<std::uint64_t>(maximum) &&
                                  (minimum <= 0 || value.get<std::uint64_t>() >= static_cast<std::uint64_t>(minimum))
                            : value.is_number_integer() && value.get<std::int64_t>() >= minimum &&
                                  value.get<std::int64_t>() <= maximum;
  if (!in_range) fail(key, integer_range(minimum, maximum));
  return value.get<std::int64_t>();
}

double ObjectReader::required_number(const std::string& key, double minimum_exclusive) {
  if (!present(key)) fail(key, "a number (this key is required)");
  return number_or(key, 0.0, minimum_exclusive);
}

double ObjectReader::number_or(const std::string& key, double fallback, double minimum_exclusive) {
  if (!present(key)) return fallback;
  const auto& value = fetch(key);
  // No count, ratio or price fmsim reads comes near 1e30; capping there keeps sums and products finite.
  constexpr double kLargestNumber = 1e30;
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= minimum_exclusive ||
      value.get<double>() > kLargestNumber) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%g", minimum_exclusive);
    fail(key, std::string("a number > ") + bound + " and at most 1e30");
  }
  return value.get<double>();
}

bool ObjectReader::bool_or(const std::string& key, bool fallback) {
  if (!present(key)) return fallback;
  const auto& value = fetch(key);
  if (!value.is_boolean()) fail(key, "true or false");
  return value.get<bool>();
}

std::optional<double> ObjectReader::optional_quantity(const std::string& key, units::Dimension dimension) {
  if (!present(key)) return std::nullopt;
  const auto& value = fetch(key);
  if (!value.is_string()) fail(key, units::describe(dimension) + " (a string, units are required)");
  try {
    return units::parse(value.get<std::string>(), dimension);
  } catch (const std::invalid_argument& error) {
    fail(key, units::describe(dimension) + " (" + error.what() + ")");
  }
}

double ObjectReader::required_quantity(const std::string& key, units::Dimension dimension) {
  if (!present(key)) fail(key, units::describe(dimension) + " (this key is required)");
  return *optional_quantity(key, dimension);
}

double ObjectReader::quantity_or(const std::string& key, units::Dimension dimension, double fallback) {
  return optional_quantity(key, dimension).value_or(fallback);
}

ObjectReader ObjectReader::required_object(const std::string& key) {
  if (!present(key)) fail(key, "a JSON object (this key is required)");
  return ObjectReader(fetch(key), file_, path_of(key));
}

std::optional<ObjectReader> ObjectReader::optional_object(const std::string& key) {
  if (!present(key)) return std::nullopt;
  return ObjectReader(fetch(key), file_, path_of(key));
}

std::vector<std::string> ObjectReader::keys() const {
  std::vector<std::string> names;
  for (auto it = object_.begin(); it != object_.end(); ++it) names.push_back(it.key());
  return names;
}

void ObjectReader::reject_unknown_keys(const std::vector<std::string>& also_allowed) const {
  for (auto it = object_.begin(); it != object_.end(); ++it) {
    const std::string& key = it.key();
    if (read_keys_.count(key)) continue;
    bool allowed = false;
    for (const auto& name : also_allowed) allowed = allowed || name == key;
    if (allowed) continue;
    std::string known;
    for (const auto& name : read_keys_) known += (known.empty() ? "" : ", ") + name;
    for (const auto& name : also_allowed) known += (known.empty() ? "" : ", ") + name;
    throw InputError(file_ + ": at " + path_of(key) + ": unknown key '" + key + "'" +
                     (known.empty() ? "" : " (known keys here: " + known + ")"));
  }
}

}  // namespace fmsim::config
