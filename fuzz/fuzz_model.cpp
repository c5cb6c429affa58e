// Fuzz target: model files (Hugging Face config.json, configs/models/*.json) through load_model, and the
// parameter count every command derives from them.
#include "fmsim/workload/model.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "config.json");
  fmsim::fuzz::expect_input_error_only([&] {
    const auto model = fmsim::workload::load_model(path.string(), fmsim::fuzz::source_dir() / "configs" / "models");
    (void)fmsim::workload::count_parameters(model);
  });
  return 0;
}
