#pragma once
// Typed, strict reading of one JSON object: required / defaulted / optional keys, quantities with units,
// and rejection of keys nobody asked for. Every error names the file, the JSON path (RFC 6901 style,
// "/fabric/oversubscription"), the value found and what was expected.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/units/quantity.hpp"

namespace fmsim::config {

class ObjectReader {
 public:
  /// `object` must outlive the reader. Throws InputError if it is not a JSON object.
  ObjectReader(const nlohmann::json& object, std::string file, std::string path = "");

  /// Whether the key is present; the key also becomes one this reader knows (listed in unknown-key errors).
  bool has(const std::string& key) const;
  const std::string& file() const { return file_; }
  std::string path_of(const std::string& key) const { return path_ + "/" + key; }

  std::string required_string(const std::string& key);
  std::string string_or(const std::string& key, const std::string& fallback);
  std::optional<std::string> optional_string(const std::string& key);
  /// A string that must be one of `allowed`; the error lists them.
  std::string choice_or(const std::string& key, const std::vector<std::string>& allowed,
                        const std::string& fallback);

  /// The largest value an int field accepts unless a caller gives its own maximum: every count that is
  /// later held in an `int` is range-checked here, before any cast.
  static constexpr std::int64_t kIntMax = 2147483647;
  /// Integers in [minimum, maximum] ("expected an integer >= 1 and <= 2147483647"); the range is checked on
  /// the JSON value itself, so 4294967296 or 1e20 never wraps around.
  std::int64_t required_int(const std::string& key, std::int64_t minimum, std::int64_t maximum = kIntMax);
  std::int64_t int_or(const std::string& key, std::int64_t fallback, std::int64_t minimum,
                      std::int64_t maximum = kIntMax);

  double required_number(const std::string& key, double minimum_exclusive);
  double number_or(const std::string& key, double fallback, double minimum_exclusive);
  bool bool_or(const std::string& key, bool fallback);

  /// Quantities written as strings with units, e.g. "400GBps". Returned in SI (bytes, s, bytes/s, FLOP/s).
  double required_quantity(const std::string& key, units::Dimension dimension);
  double quantity_or(const std::string& key, units::Dimension dimension, double fallback);
  std::optional<double> optional_quantity(const std::string& key, units::Dimension dimension);

  ObjectReader required_object(const std::string& key);
  std::optional<ObjectReader> optional_object(const std::string& key);
  /// The raw JSON value of a key (marks it as read).
  const nlohmann::json& required_value(const std::string& key);

  /// Names of all keys in the object, in file order (for maps such as {"H100": {...}}).
  std::vector<std::string> keys() const;

  /// Throws InputError for the first key that was never read: "unknown key 'X' (known keys: ...)".
  void reject_unknown_keys(const std::vector<std::string>& also_allowed = {}) const;

  /// An InputError naming this file and `path/key`, the value and what was expected.
  [[noreturn]] void fail(const std::string& key, const std::string& expected) const;

 private:
  bool present(const std::string& key);  ///< has(), and records the key as one this reader knows
  const nlohmann::json& fetch(const std::string& key);

  const nlohmann::json& object_;
  std::string file_;
  std::string path_;
  mutable std::set<std::string> read_keys_;  ///< every key asked for (read or tested with has()), present or not
};

/// "an integer >= MIN and <= MAX" (or just ">= MIN" when MAX is the int64 limit), for messages.
std::string integer_range(std::int64_t minimum, std::int64_t maximum);

/// Short rendering of a JSON value for messages ("\"80GB\"", "-3", "{...}").
std::string render_value(const nlohmann::json& value);

}  // namespace fmsim::config
