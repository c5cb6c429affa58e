// Fuzz target: sweep files (configs/sweeps/*.json, fmsim.sweep/1) through load_sweep (grid expansion
// included) and the --set assignments of every point.
#include "fmsim/report/sweep_spec.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "sweep.json");
  fmsim::fuzz::expect_input_error_only([&] {
    const auto spec = fmsim::report::load_sweep(path);
    for (const auto& point : spec.points) (void)fmsim::report::point_assignments(point);
  });
  return 0;
}
