// Fuzz target: job traces of `fmsim cluster` (JSON Lines, one job per line), read for a 16-node cluster of
// 8-GPU nodes as read_job_trace checks them against the cluster's size.
#include "fmsim/cluster/job_trace.hpp"
#include "fuzz_support.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto path = fmsim::fuzz::write_input(data, size, "jobs.jsonl");
  fmsim::fuzz::expect_input_error_only([&] { (void)fmsim::cluster::read_job_trace(path, 8, 16); });
  return 0;
}
