// Undefined-behaviour sites found by reading the sources for conversions and products of values that
// come from input (docs/robustness.md, "Undefined behaviour hunted in the sources"), one test each.
#include <catch2/catch.hpp>

#include "fmsim/inference/requests.hpp"

TEST_CASE("lognormal request lengths without a max stay within the token limit", "[robustness][inference]") {
  // A lognormal of mean 16M tokens and sigma 5 draws values up to e^29 ~ 4e12 tokens: with no "max" the
  // draw was converted to int as it was (wrapped to nonsense, negative lengths among them).
  fmsim::inference::WorkloadSpec w;
  w.arrival = fmsim::inference::WorkloadSpec::Arrival::offline;
  w.requests = 20000;
  w.input.kind = fmsim::inference::LengthSpec::Kind::lognormal;
  w.input.mean = 1 << 24;
  w.input.sigma = 5;
  w.output.mean = 10;
  w.output.min = w.output.max = 10;
  const auto requests = fmsim::inference::make_requests(w);
  REQUIRE(requests.size() == 20000);
  int at_cap = 0;
  for (const auto& r : requests) {
    REQUIRE(r.input_tokens >= 1);
    REQUIRE(r.input_tokens <= (1 << 24));
    at_cap += r.input_tokens == (1 << 24) ? 1 : 0;
  }
  CHECK(at_cap > 0);
}
