#pragma once
// An nccl-tests-style sweep of one collective over message sizes, simulated on a cluster.
#include <optional>
#include <string>
#include <vector>

#include "fmsim/collectives/algorithm.hpp"

namespace fmsim::collectives {

enum class Fidelity {
  fast,  ///< default: closed-form NVLink part, node-level simulated network part, memoized per shape
  full,  ///< referee: every step of every rank is a message on a GPU-level platform
};

struct BenchmarkRequest {
  Op op = Op::all_reduce;
  std::vector<double> sizes_bytes;
  std::optional<Algorithm> algorithm;  ///< forced, else chosen per size by estimated time (like NCCL)
  std::optional<Protocol> protocol;    ///< forced, else chosen with the algorithm
  Fidelity fidelity = Fidelity::fast;
};

struct BenchmarkRow {
  double size_bytes = 0;
  double count = 0;        ///< elements of 4-byte float
  double time_s = 0;
  double latency_s = 0;    ///< the closed-form latency part of time_s
  double algbw_GBps = 0;
  double busbw_GBps = 0;
  Algorithm algorithm = Algorithm::ring;
  Protocol protocol = Protocol::simple;
  bool simulated = false;  ///< full fidelity: timed message by message (false: the fast-mode time)
};

struct BenchmarkResult {
  std::vector<BenchmarkRow> rows;
  long long simulated_messages = 0;
  double simulated_bytes_sent = 0;
  double simulated_bytes_received = 0;
};

/// nccl-tests sizes: from `min_bytes` multiplying by `factor` up to `max_bytes`. Throws InputError
/// when max < min or factor < 2.
std::vector<double> size_sweep(double min_bytes, double max_bytes, double factor);

/// Runs the sweep. Throws InputError for an algorithm or protocol the operation or hardware cannot use.
BenchmarkResult run_benchmark(const CommLayout& layout, const BenchmarkRequest& request);

}  // namespace fmsim::collectives
