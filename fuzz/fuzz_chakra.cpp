// Fuzz target: one rank's file of a Chakra execution trace (protobuf, proto/chakra_et.proto) read as
// `fmsim run --trace` reads it: the length-delimited messages, the nodes and their attributes, then the
// checks of trace_from_json (a one-rank world with one process group).
#include <fstream>

#include "fmsim/workload/chakra_trace.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "trace.0.et");
  const std::string prefix = (path.parent_path() / "trace").string();
  static const bool groups = [&] {
    std::ofstream(prefix + ".comm_groups.json") << "{\"0\": [0]}\n";
    return true;
  }();
  (void)groups;
  fmsim::fuzz::expect_input_error_only([&] {
    nlohmann::json doc = fmsim::workload::read_chakra_trace(prefix);
    if (!doc.contains("tokens_per_step")) doc["tokens_per_step"] = 8192.0;
    if (!doc.contains("model_flops_per_step")) doc["model_flops_per_step"] = 1e12;
    (void)fmsim::workload::trace_from_json(doc, path.string());
  });
  return 0;
}
