// Bad input that used to crash, wrap around or end in an internal error (issue 22): integer ranges
// checked before any cast, numbers that overflow, invalid UTF-8, keys removed by --set PATH=null,
// unknown-key errors that list every known key, and the exact max-flow behind the bisection.
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/topology/bisection.hpp"
#include "fmsim/units/quantity.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"
#include "fmsim/workload/scenario.hpp"
#include "test_support.hpp"

using fmsim::InputError;
using fmsim::config::ObjectReader;
using Catch::Matchers::Contains;

TEST_CASE("integers beyond the int range are refused before any cast", "[robustness]") {
  auto doc = nlohmann::json::parse(
      R"({"a": 4294967296, "b": 2147483648, "c": 18446744073709551615, "d": 2147483647, "e": -9223372036854775808})");
  ObjectReader r(doc, "s.json");
  CHECK_THROWS_WITH(r.int_or("a", 1, 1), Contains("s.json: at /a: found 4294967296, expected an integer >= 1 and <= 2147483647"));
  CHECK_THROWS_WITH(r.required_int("b", 1), Contains("found 2147483648"));
  CHECK_THROWS_WITH(r.int_or("c", 1, 0), Contains("found 18446744073709551615"));
  CHECK(r.int_or("d", 1, 1) == 2147483647);
  CHECK_THROWS_WITH(r.int_or("d", 1, 1, 64), Contains("expected an integer >= 1 and <= 64"));
  CHECK_THROWS_AS(r.int_or("e", 1, 0), InputError);
  // Seeds take the whole 64-bit range.
  CHECK(r.int_or("b", 0, 0, std::numeric_limits<std::int64_t>::max()) == 2147483648LL);
}

TEST_CASE("numbers that overflow are bad input, not infinities", "[robustness]") {
  using fmsim::units::Dimension;
  using fmsim::units::parse;
  CHECK_THROWS_WITH(parse("1e306h", Dimension::time), Contains("too large"));
  CHECK_THROWS_WITH(parse("1e300PiB", Dimension::bytes), Contains("too large"));
  CHECK_THROWS_WITH(parse("1e999s", Dimension::time), Contains("out of range"));
  CHECK(parse("2.5h", Dimension::time) == Approx(9000));
  CHECK_THROWS_WITH(fmsim::units::parse_size_argument("999999999T"), Contains("at most"));
  CHECK_THROWS_WITH(fmsim::config::parse_json_text(R"({"nodes": 1e999})", "c.json"), Contains("c.json: malformed JSON"));
  CHECK_THROWS_AS(fmsim::config::parse_json_text("[1e999]", "c.json"), InputError);
  auto doc = nlohmann::json::parse(R"({"x": 1e300})");
  ObjectReader r(doc, "c.json");
  CHECK_THROWS_WITH(r.number_or("x", 1.0, 0.0), Contains("at most 1e30"));
}

TEST_CASE("UTF-8 is checked where names and values enter", "[robustness]") {
  using fmsim::config::is_valid_utf8;
  CHECK(is_valid_utf8("plain"));
  CHECK(is_valid_utf8("2.5\xC2\xB5s"));                 // µ
  CHECK(is_valid_utf8("\xF0\x9F\x98\x80"));              // an emoji
  CHECK_FALSE(is_valid_utf8("\xFF"));
  CHECK_FALSE(is_valid_utf8("abc\xC3"));                 // cut short
  CHECK_FALSE(is_valid_utf8("\xC0\xAF"));                // overlong '/'
  CHECK_FALSE(is_valid_utf8("\xED\xA0\x80"));            // a UTF-16 surrogate
  nlohmann::json doc = {{"name", "x"}};
  CHECK_THROWS_WITH(fmsim::workload::apply_set(doc, "name=\xFF\xFE"), Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(fmsim::config::load_json_file("bad-\xFF.json"), Contains("not valid UTF-8"));
  CHECK_THROWS_WITH(fmsim::config::load_json_file(std::string(5000, 'a') + ".json"), Contains("cannot open file"));
  CHECK_THROWS_WITH(fmsim::config::load_json_file(fmsim::test::source_dir() / "configs"), Contains("is a directory"));
}

TEST_CASE("a key set to null is removed, and under a base file kept as null for the merge", "[robustness]") {
  using fmsim::workload::apply_set;
  auto doc = nlohmann::json::parse(
      R"({"parallelism": {"pipeline_model_parallel_layout": "Et|tL", "tensor_model_parallel_size": 2},
          "model": {"base": "llama3-8b"}})");
  apply_set(doc, "parallelism.pipeline_model_parallel_layout=null");
  CHECK_FALSE(doc["parallelism"].contains("pipeline_model_parallel_layout"));
  CHECK(doc["parallelism"]["tensor_model_parallel_size"] == 2);
  apply_set(doc, "model.rope_scaling=null");
  CHECK(doc["model"].contains("rope_scaling"));
  CHECK(doc["model"]["rope_scaling"].is_null());
  CHECK_THROWS_WITH(apply_set(doc, "parallelism.no_such_key=null"), Contains("no key 'parallelism.no_such_key' to remove"));
  CHECK_THROWS_WITH(apply_set(doc, "training.seq_length=null"), Contains("no key"));
}

TEST_CASE("unknown-key errors list every key the reader knows, also those only tested for", "[robustness]") {
  auto doc = nlohmann::json::parse(R"({"seq_length": 8, "typo": 1})");
  ObjectReader r(doc, "s.json", "/training");
  r.int_or("seq_length", 1, 1);
  if (r.has("total_tokens")) r.required_number("total_tokens", 0.0);
  if (r.has("train_iters")) r.required_int("train_iters", 1);
  CHECK_THROWS_WITH(r.reject_unknown_keys(), Contains("known keys here: seq_length, total_tokens, train_iters"));
}

TEST_CASE("a pipeline layout that expands beyond any model is refused", "[robustness]") {
  using fmsim::workload::stage_layers;
  CHECK_THROWS_WITH(stage_layers(4, 2, false, false, "((t*99999)*99999)*99999", "s.json"), Contains("more than the"));
  CHECK_THROWS_WITH(stage_layers(4, 2, false, false, "t*99999999999999999999", "s.json"), Contains("more than the"));
  CHECK_THROWS_WITH(stage_layers(4, 2, false, false, "t*2|t*3", "s.json"),
                    Contains("--unset parallelism.pipeline_model_parallel_layout"));
}

// Before the capacities of the max-flow became integers, Boost's debug check of the result
// (BOOST_ASSERT(is_flow()), exact comparisons of doubles) aborted a Debug build here.
TEST_CASE("bisection with fractional oversubscription is exact (trips Boost's assertion with doubles)", "[robustness]") {
  const double node_Bps = 400e9;  // p5.48xlarge: 3,200 Gbps
  for (const char* topology : {"fat-tree", "rail-optimized"}) {
    for (double oversubscription : {1.5, 1.8, 3.0, 2.7}) {
      INFO(topology << " " << oversubscription << ":1");
      const std::string json = R"({"instance_type": "p5.48xlarge", "nodes": 8, "fabric": {"topology": ")" +
                               std::string(topology) + R"(", "nodes_per_leaf": 2, "oversubscription": )" +
                               std::to_string(oversubscription) + "}}";
      auto cluster = fmsim::test::cluster_from_json(json);
      CHECK(fmsim::topology::bisection_bandwidth_Bps(cluster) ==
            Approx(8 / 2 * node_Bps / oversubscription).epsilon(1e-6));
    }
  }
}

TEST_CASE("a cluster too large for memory is refused with the estimate", "[robustness]") {
  CHECK_THROWS_WITH(fmsim::test::cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 1000000000})"),
                    Contains("/nodes: found 1000000000, expected a smaller cluster: 1000000000 nodes x 8 GPUs = 8000000000 GPUs need about"));
  CHECK_THROWS_WITH(fmsim::test::cluster_from_json(R"({"instance_type": "p5.48xlarge", "nodes": 1000000})"),
                    Contains("GiB for the cluster graph alone"));
}
