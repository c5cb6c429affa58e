// Fuzz target: serving request traces (workload.trace): JSON Lines or CSV. The first byte's low bit picks
// the format (odd: CSV); the rest is the file.
#include "fmsim/inference/requests.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const auto path = fmsim::fuzz::write_input(data + 1, size - 1, (data[0] & 1) ? "requests.csv" : "requests.jsonl");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::inference::read_trace(path, 1); });
  return 0;
}
