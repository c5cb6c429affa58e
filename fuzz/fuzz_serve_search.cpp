// Fuzz target: serving search files (fmsim search SPEC.json, schema fmsim.serve-search/1) through
// load_serve_search, which reads the spec, checks its base scenario exists and loads each candidate
// cluster's topology, then enumerates the candidate layouts.
#include "fmsim/search/serve_search.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "serve-search.json");
  fmsim::fuzz::expect_input_error_only([&] {
    const auto spec = fmsim::search::load_serve_search(path, fmsim::fuzz::shipped_catalog());
    (void)fmsim::search::serve_candidates(spec).size();
  });
  return 0;
}
