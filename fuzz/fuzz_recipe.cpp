// Fuzz target: recipe files (configs/recipes/STACK/MODEL.json, training.recipe) through apply_recipe, as a
// training scenario naming the file reads it: variant choice by GPU, precision and layout, then the merge.
#include "fmsim/workload/recipe.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "recipe.json");
  nlohmann::json document = {
      {"training", {{"recipe", path.string()}, {"precision", "fp8"}, {"seq_length", 4096}}},
      {"parallelism", {{"tensor_model_parallel_size", 1}, {"pipeline_model_parallel_size", 2}}}};
  fmsim::fuzz::expect_input_error_only([&] {
    (void)fmsim::workload::apply_recipe(document, "scenario.json", path.parent_path(), "H100-SXM",
                                        fmsim::fuzz::source_dir() / "configs" / "recipes");
  });
  return 0;
}
