// Fuzz target: software-stack files (configs/stacks/*.json, training.framework) through load_framework,
// as a scenario naming the stack reads it: its default release, and the first release the file lists.
#include "fmsim/workload/framework.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "fuzzstack.json");
  const auto dir = path.parent_path();
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::workload::load_framework("fuzzstack", "scenario.json", dir); });
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::workload::load_framework("fuzzstack@26.02", "scenario.json", dir); });
  return 0;
}
