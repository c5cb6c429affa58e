// Fuzz target: cluster files (topologies/*.json) through load_cluster, as `fmsim topo` reads them.
#include "fmsim/topology/cluster_spec.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "cluster.json");
  fmsim::fuzz::expect_input_error_only([&] {
    const auto spec = fmsim::topology::load_cluster(path, fmsim::fuzz::shipped_catalog());
    (void)spec.total_gpus();
  });
  return 0;
}
