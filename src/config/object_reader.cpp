#include "fmsim/config/object_reader.hpp"

#include <cmath>

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

bool ObjectReader::has(const std::string& key) const { return object_.contains(key); }

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

std::int64_t ObjectReader::required_int(const std::string& key, std::int64_t minimum) {
  if (!present(key)) fail(key, "an integer >= " + std::to_string(minimum) + " (this key is required)");
  return int_or(key, minimum, minimum);
}

std::int64_t ObjectReader::int_or(const std::string& key, std::int64_t fallback, std::int64_t minimum) {
  if (!present(key)) return fallback;
  const auto& value = fetch(key);
  if (!value.is_number_integer() || value.get<std::int64_t>() < minimum) {
    fail(key, "an integer >= " + std::to_string(minimum));
  }
  return value.get<std::int64_t>();
}

double ObjectReader::required_number(const std::string& key, double minimum_exclusive) {
  if (!present(key)) fail(key, "a number (this key is required)");
  return number_or(key, 0.0, minimum_exclusive);
}

double ObjectReader::number_or(const std::string& key, double fallback, double minimum_exclusive) {
  if (!present(key)) return fallback;
  const auto& value = fetch(key);
  if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() <= minimum_exclusive) {
    char bound[64];
    std::snprintf(bound, sizeof bound, "%g", minimum_exclusive);
    fail(key, std::string("a number > ") + bound);
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
