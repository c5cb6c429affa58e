// Fuzz target: serving scenario files (configs/serving/*.json) through load_serve_scenario, as `fmsim
// serve` reads them: pools, workload, SLOs, validation against the model and catalog.
#include "fmsim/inference/serve_scenario.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "serving.json");
  fmsim::fuzz::expect_input_error_only(
      [&] { (void)fmsim::inference::load_serve_scenario(path, {}, fmsim::fuzz::shipped_catalog()); });
  return 0;
}
