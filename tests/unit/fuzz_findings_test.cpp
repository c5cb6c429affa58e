// Defects the fuzz targets and the sanitizer build found (docs/robustness.md), one test each.
#include <catch2/catch.hpp>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "fmsim/engine/result_bytes.hpp"
#include "fmsim/units/format.hpp"

using fmsim::units::format_usd;

TEST_CASE("costs with more digits than a fixed buffer format in full", "[robustness][units]") {
  // fuzz/regressions/units/format_usd_1e62: "%.2f" of 1e62 was cut at 63 characters, losing the '.',
  // and the grouping threw std::out_of_range (exit 3) on a serving run with a near-zero throughput.
  const std::string text = format_usd(3.84e62);
  CHECK(text.substr(0, 2) == "$3");
  CHECK(text[4] == ',');
  CHECK(text.size() == 1 + 63 + 20 + 3);  // '$', 63 digits, 20 commas, ".00"
  CHECK(text.substr(text.size() - 3) == ".00");
  CHECK(format_usd(1e300).size() > 300);
  CHECK(format_usd(std::numeric_limits<double>::infinity()) == "$inf");
  CHECK(format_usd(std::nan("")) == "$nan");
  CHECK(format_usd(-1234.5) == "$-1,234.50");
}

TEST_CASE("empty result vectors cross the fork without a null memcpy", "[robustness][engine]") {
  // The sanitizer build (docs/robustness.md) stopped every serving run with no iterations of a kind:
  // memcpy(nullptr, ..., 0) in take_values is undefined behaviour (nonnull-attribute).
  std::string bytes;
  fmsim::engine::append_values(bytes, std::vector<double>{});
  fmsim::engine::append_values(bytes, std::vector<double>{1.5, 2.5});
  std::size_t offset = 0;
  CHECK(fmsim::engine::take_values<double>(bytes, offset).empty());
  CHECK(fmsim::engine::take_values<double>(bytes, offset) == std::vector<double>{1.5, 2.5});
  CHECK(offset == bytes.size());
}
