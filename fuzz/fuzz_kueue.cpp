// Fuzz target: Kueue YAML (`fmsim cluster --kueue`): ClusterQueue, LocalQueue and ResourceFlavor documents.
#include "fmsim/cluster/kueue.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "kueue.yaml");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::cluster::read_kueue(path); });
  return 0;
}
