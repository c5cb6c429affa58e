// Defects the fuzz targets and the sanitizer build found (docs/robustness.md), one test each.
#include <catch2/catch.hpp>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "fmsim/cluster/kueue.hpp"
#include "fmsim/common/error.hpp"
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

TEST_CASE("Kueue YAML with a key looked up in a scalar or a list is bad input, not a crash", "[robustness][cluster]") {
  // fuzz_kueue, 2026-11-27: yaml-cpp's InvalidNode escaped read_kueue (metadata: 3).
  const auto dir = std::filesystem::temp_directory_path();
  // And yaml-cpp 0.7 never returns from a document that starts with ',' (a hang, not an exception).
  for (const std::string text : {"kind: ClusterQueue\nmetadata: 3\n", "kind: LocalQueue\nmetadata: {name: q}\nspec: [1, 2]\n", " , x\n",
                                 "a: 1\n---\n!tag\n, b\n", "l\n#\n,\n"}) {
    const auto path = dir / "fmsim-fuzz-kueue.yaml";
    std::ofstream(path) << text;
    CHECK_THROWS_AS(fmsim::cluster::read_kueue(path), fmsim::InputError);
    std::filesystem::remove(path);
  }
}
