#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

using fmsim::InputError;
using fmsim::config::ObjectReader;
using fmsim::units::Dimension;
using Catch::Matchers::Contains;

TEST_CASE("malformed JSON names the file, line and column", "[config]") {
  std::string text = "{\n  \"a\": 1,\n  \"b\": ]\n}\n";
  CHECK_THROWS_WITH(fmsim::config::parse_json_text(text, "cluster.json"), Contains("cluster.json:3:8: malformed JSON"));
}

TEST_CASE("typed reading with required, default and optional keys", "[config]") {
  auto doc = nlohmann::json::parse(R"({"nodes": 4, "bw": "400GBps", "name": "x", "inner": {"k": true}})");
  ObjectReader reader(doc, "f.json");
  CHECK(reader.required_int("nodes", 1) == 4);
  CHECK(reader.required_quantity("bw", Dimension::bandwidth) == Approx(400e9));
  CHECK(reader.string_or("name", "y") == "x");
  CHECK(reader.int_or("absent", 7, 0) == 7);
  CHECK_FALSE(reader.optional_string("missing").has_value());
  auto inner = reader.required_object("inner");
  CHECK(inner.bool_or("k", false));
  CHECK_NOTHROW(inner.reject_unknown_keys());
  CHECK_NOTHROW(reader.reject_unknown_keys());
}

TEST_CASE("errors name file, JSON path, value and what was expected", "[config]") {
  auto doc = nlohmann::json::parse(R"({"fabric": {"oversubscription": "two", "nodes": 0, "lat": "5", "bw": 400}})");
  ObjectReader root(doc, "c.json");
  auto fabric = root.required_object("fabric");
  CHECK_THROWS_WITH(fabric.number_or("oversubscription", 1.0, 0.0),
                    Contains("c.json: at /fabric/oversubscription: found \"two\", expected a number > 0"));
  CHECK_THROWS_WITH(fabric.required_int("nodes", 1), Contains("/fabric/nodes: found 0, expected an integer >= 1"));
  CHECK_THROWS_WITH(fabric.required_quantity("lat", Dimension::time), Contains("missing unit"));
  CHECK_THROWS_WITH(fabric.required_quantity("bw", Dimension::bandwidth), Contains("units are required"));
  CHECK_THROWS_WITH(root.required_string("name"), Contains("/name: found nothing (key missing)"));
}

TEST_CASE("unknown keys are rejected and the known ones listed", "[config]") {
  auto doc = nlohmann::json::parse(R"({"nodes": 2, "nodez": 3})");
  ObjectReader reader(doc, "c.json");
  reader.required_int("nodes", 1);
  reader.optional_string("name");
  CHECK_THROWS_WITH(reader.reject_unknown_keys(),
                    Contains("c.json: at /nodez: unknown key 'nodez' (known keys here: name, nodes)"));
}

TEST_CASE("a choice lists the allowed values", "[config]") {
  auto doc = nlohmann::json::parse(R"({"topology": "torus"})");
  ObjectReader reader(doc, "c.json");
  CHECK_THROWS_WITH(reader.choice_or("topology", {"fat-tree", "rail-optimized"}, "fat-tree"),
                    Contains("expected one of: fat-tree, rail-optimized"));
}

TEST_CASE("a non-object where an object is expected is an input error", "[config]") {
  auto doc = nlohmann::json::parse(R"([1, 2])");
  CHECK_THROWS_AS(ObjectReader(doc, "c.json"), InputError);
}
