// Fuzz target: training scenario files (configs/training/*.json) as `fmsim run` reads them: through
// load_scenario (cluster and model references, parallelism, training options, validation), or, for an RL
// scenario (training.workload "rl"), its document after the same reference expansion and its rl section.
#include "fmsim/rl/rl_spec.hpp"
#include "fmsim/workload/scenario.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "training.json");
  fmsim::fuzz::expect_input_error_only([&] {
    const auto document = fmsim::workload::load_scenario_document(path, {}, "training scenario");
    if (fmsim::rl::is_rl_document(document.root)) {
      (void)fmsim::rl::read_rl_spec(document.root, document.path);
    } else {
      (void)fmsim::workload::load_scenario(path, {}, fmsim::fuzz::shipped_catalog());
    }
  });
  return 0;
}
