#include <catch2/catch.hpp>
#include <stdexcept>

#include "fmsim/units/format.hpp"
#include "fmsim/units/quantity.hpp"

using fmsim::units::Dimension;
using fmsim::units::parse;
using Catch::Matchers::Contains;

TEST_CASE("quantities from the issue parse to SI values", "[units]") {
  CHECK(parse("3200Gbps", Dimension::bandwidth) == Approx(400e9));
  CHECK(parse("400GBps", Dimension::bandwidth) == Approx(400e9));
  CHECK(parse("1.8TBps", Dimension::bandwidth) == Approx(1.8e12));
  CHECK(parse("936ns", Dimension::time) == Approx(936e-9));
  CHECK(parse("2.5us", Dimension::time) == Approx(2.5e-6));
  CHECK(parse("80GiB", Dimension::bytes) == Approx(80.0 * 1024 * 1024 * 1024));
  CHECK(parse("141GB", Dimension::bytes) == Approx(141e9));
  CHECK(parse("989.5TFLOPS", Dimension::flop_rate) == Approx(989.5e12));
}

TEST_CASE("bits and bytes per second differ by eight", "[units]") {
  CHECK(parse("8Gbps", Dimension::bandwidth) == Approx(parse("1GBps", Dimension::bandwidth)));
  CHECK(parse("100 Gb/s", Dimension::bandwidth) == Approx(12.5e9));
  CHECK(parse("1e3MBps", Dimension::bandwidth) == Approx(1e9));
}

TEST_CASE("bad quantities are rejected with a reason", "[units]") {
  CHECK_THROWS_WITH(parse("400", Dimension::bandwidth), Contains("missing unit"));
  CHECK_THROWS_WITH(parse("400Gbs", Dimension::bandwidth), Contains("unknown unit 'Gbs'"));
  CHECK_THROWS_WITH(parse("-3GB", Dimension::bytes), Contains("negative"));
  CHECK_THROWS_WITH(parse("fast", Dimension::bandwidth), Contains("no number"));
  CHECK_THROWS_WITH(parse("", Dimension::time), Contains("empty"));
  // A unit of the wrong dimension is unknown in the requested one.
  CHECK_THROWS_WITH(parse("10GB", Dimension::time), Contains("unknown unit 'GB'"));
}

TEST_CASE("nccl-tests size arguments use powers of 1024", "[units]") {
  using fmsim::units::parse_size_argument;
  CHECK(parse_size_argument("8") == 8.0);
  CHECK(parse_size_argument("128K") == 131072.0);
  CHECK(parse_size_argument("16G") == 17179869184.0);
  CHECK_THROWS_AS(parse_size_argument("1.5G"), std::invalid_argument);
  CHECK_THROWS_AS(parse_size_argument("G"), std::invalid_argument);
  CHECK_THROWS_AS(parse_size_argument("-8"), std::invalid_argument);
}

TEST_CASE("formatting picks a readable prefix", "[units]") {
  using namespace fmsim::units;
  CHECK(format_bandwidth(400e9) == "400 GB/s");
  CHECK(format_bytes(13.4e12) == "13.4 TB");
  CHECK(format_time(2.5e-6) == "2.5 us");
  CHECK(format_usd(1234.5) == "$1,234.50");
}
