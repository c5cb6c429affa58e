// Fuzz target: search files (fmsim search SPEC.json, schema fmsim.search/1) through load_search, which
// reads the spec and resolves its base scenario and topology references against the file's directory.
#include "fmsim/search/search_spec.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "search.json");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::search::load_search(path); });
  return 0;
}
