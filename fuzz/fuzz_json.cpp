// Fuzz target: the strict JSON reader every input file goes through (config::parse_json_text), with its
// line:column error messages.
#include "fmsim/config/json_file.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fmsim::fuzz::expect_input_error_only([&] {
    const auto file = fmsim::config::parse_json_text(text, "fuzz.json");
    (void)file.root.dump();  // what results echo back (resolved scenarios) must serialise
  });
  return 0;
}
