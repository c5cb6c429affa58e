// Fuzz target: op-graph traces (`fmsim trace` output, schema fmsim.trace/1), read as `fmsim run --trace`
// reads them: the strict JSON reader, then trace_from_json.
#include "fmsim/config/json_file.hpp"
#include "fmsim/workload/trace.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  fmsim::fuzz::expect_input_error_only([&] {
    const auto file = fmsim::config::parse_json_text(text, "trace.json");
    (void)fmsim::workload::trace_from_json(file.root, file.path);
  });
  return 0;
}
