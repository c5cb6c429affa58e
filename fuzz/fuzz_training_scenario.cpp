// Fuzz target: training scenario files (configs/training/*.json) through load_scenario, as `fmsim run`
// reads them: cluster and model references, parallelism, training options, validation.
#include "fmsim/workload/scenario.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "training.json");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::workload::load_scenario(path, {}, fmsim::fuzz::shipped_catalog()); });
  return 0;
}
