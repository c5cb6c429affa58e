// Fuzz target: Slurm topology.conf files (`fmsim cluster --topology-conf`), read for a 16-node cluster.
#include "fmsim/cluster/topology_conf.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "topology.conf");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::cluster::read_topology_conf(path, 16); });
  return 0;
}
