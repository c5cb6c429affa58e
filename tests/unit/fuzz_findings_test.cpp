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
#include "fmsim/config/yaml_guard.hpp"
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

TEST_CASE("a ',' where a YAML token starts outside a flow collection is refused before yaml-cpp 0.7 loops on it", "[robustness][cluster]") {
  // fuzz_kueue, 2026-11-27 (session 21): `"k" ,` and `[a] ,` at a document's top level, and a ',' after an
  // anchor, hang yaml-cpp 0.7 while it allocates (the long run's growing memory). The guard names the line
  // and column; YAML with commas where they are valid still reaches the parser.
  using fmsim::config::refuse_misplaced_yaml_comma;
  for (const std::string text : std::vector<std::string>{"\"k\" ,\n", "[a] ,\n", "{a: 1} ,\n", "\"k\" &&,\n", "a: *x ,\n", " , x\n", "l\n#\n,\n",
                                 "a: 1\n---\n!tag\n, b\n", "a: 'it''s' ,\n", "a: [1,\n 2] ,\n", "a: \"multi\n line\" ,\n",
                                 "\"a\"b\n?\n", "\"a\" b\n?\n", "\"a\"b\"c\"\nx\n?\n", "\"a\"#c\n", "[a] b\n", "a: *x y\n",
                                 std::string("\0\0\0,euologi\"0jobw\"3770\n-kind_c\"", 31), "a: \x01\n", "a: b\x7F\n", "!\"\"Z\n?\n", "! m\n?\n", "&a m\n? x\n", "? a\n: b\n",
                                 // checked after a block scalar owned by an entry's key, and after a quote inside a flow plain scalar
                                 "- a: |\n    text\n  c: \"k\" ,\n", "a: [don't, x]\nb: \"k\" ,\n", "a: x\n# c\n, y\n", " ! y\n ,", " ! y\n !,", "a: x\n  , y\n", "a: x\n  *y\n", ">\r,", "f\n[\n#\n'',", "x\n# c\ny\n"}) {
    CAPTURE(text);
    CHECK_THROWS_AS(refuse_misplaced_yaml_comma(text, "k.yaml"), fmsim::InputError);
  }
  try {
    refuse_misplaced_yaml_comma("kind: ClusterQueue\nspec:\n  \"k\" ,\n", "q.yaml");
    FAIL("not refused");
  } catch (const fmsim::InputError& e) {
    CHECK(std::string(e.what()).find("q.yaml:3:7:") != std::string::npos);
  }
  for (const std::string text : {"a: x, y\n", "\"a,b\": 1\n", "a: [1, 2, {b: 3, c: 4}]\n", "a: |\n  , in a block scalar\n  ,\nb: 2\n",
                                 "a: >-\n    ,folded\n", "a: 'x,' # , comment\n", "- [a, b]\n- {c: d}\n", "a: \"q\\\" ,\"\n",
                                 "%YAML 1.2\n---\na: 1\n...\n", "a: &anchor x\nb: *anchor\n", "a: !!str 1\n",
                                 "\"k\": v\n", "\"k\":v\n", "[a, b]: 1\n", "*a : x\n", "a: \"x\" # note\n", "a: 'x\n  y'\n",
                                 // multi-line plain scalars: their lines may start with a quote, a comma or a bracket
                                 "description: Jobs of the\n  \"research\" team\nb: 1\n", "a: x\n  y, z\n", "- entry\n  [more]\n",
                                 "a: [don't, x]\nb: 2\n", "- a: |\n    , text\n  b: 1\n",
                                 "just a scalar\n---\nkind: X\n", "[a, b]\n...\n", "x\n  continued\n# end\n"}) {
    CAPTURE(text);
    CHECK_NOTHROW(refuse_misplaced_yaml_comma(text, "k.yaml"));
  }
  // A lone CR is a YAML line break; yaml-cpp 0.7 loops on `&a\rG,` unless it sees LF.
  CHECK(fmsim::config::normalize_yaml_line_breaks("a: 1\r\nb: 2\rc: 3\n\r") == "a: 1\nb: 2\nc: 3\n\n");
  // And through the reader, the inputs that hung the fuzzer.
  for (const std::string text : {"&a\rG,", "&\"ver\r\r\r\r\r\r\rG\rtices\","}) {
    const auto file = std::filesystem::temp_directory_path() / "fmsim-fuzz-kueue-cr.yaml";
    std::ofstream(file, std::ios::binary) << text;
    CHECK_THROWS_AS(fmsim::cluster::read_kueue(file), fmsim::InputError);
    std::filesystem::remove(file);
  }
  // fuzz_kueue, 2026-11-28 (session 27): a quoted key over two lines (`'':'a` then `':',x'`) made yaml-cpp 0.7
  // allocate 24 GB; YAML allows an implicit key on one line only, so the guard refuses it. A quoted value over
  // two lines stays valid.
  for (const std::string text : {"'':'a\n':',x'\n", "'a\n':','\n", "k: \"x\n y\": z\n", "'':'?\r\r':',\r"}) {
    CAPTURE(text);
    CHECK_THROWS_WITH(refuse_misplaced_yaml_comma(text, "k.yaml"), Catch::Contains("a mapping key must be on one line"));
  }
  CHECK_NOTHROW(refuse_misplaced_yaml_comma("a: 'x\n  y'\nb: \"p\n  q\"\n", "k.yaml"));
  {
    const auto file = std::filesystem::temp_directory_path() / "fmsim-fuzz-kueue-key.yaml";
    std::ofstream(file, std::ios::binary) << "'':'a\n':',x'\n";
    CHECK_THROWS_AS(fmsim::cluster::read_kueue(file), fmsim::InputError);
    std::filesystem::remove(file);
  }
  const auto path = std::filesystem::temp_directory_path() / "fmsim-fuzz-kueue-hang.yaml";
  std::ofstream(path) << "# Kueue\n    flavors:\n  \"acceptance_rate\"  &&&&&&,&&&&\n    reclaimWithinCohort: x\n";
  CHECK_THROWS_AS(fmsim::cluster::read_kueue(path), fmsim::InputError);
  std::filesystem::remove(path);
}
