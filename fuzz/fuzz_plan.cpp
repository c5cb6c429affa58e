// Fuzz target: capacity plans (configs/plans/*.json, fmsim.plan/1) through load_plan, as `fmsim check`
// reads them before it runs anything.
#include "fmsim/report/capacity_plan.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "plan.json");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::report::load_plan(path); });
  return 0;
}
