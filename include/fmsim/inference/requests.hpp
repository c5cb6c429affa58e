#pragma once
// The requests a serving run replays: generated from a workload (offline: all at t = 0; Poisson
// arrivals at a rate; token lengths fixed, uniform or lognormal) or read from a trace file (JSON Lines
// or CSV with arrival time, input and output tokens). Generation is seeded and deterministic.
#include <string>
#include <vector>

#include "fmsim/inference/serve_scenario.hpp"

namespace fmsim::inference {

struct Request {
  int id = 0;
  double arrival_s = 0;
  int input_tokens = 0;
  int output_tokens = 0;   ///< per sample
  int samples = 1;         ///< parallel sampling: sequences sharing the prompt
  int prefix_group = -1;   ///< shared prefix the prompt starts with (-1 = none)
  int prefix_tokens = 0;   ///< its length, part of input_tokens
};

/// The requests of a workload, sorted by arrival. Lengths come from one random stream and arrival
/// gaps from another, so changing the rate keeps every request's lengths. Throws InputError for a
/// trace file that cannot be read, naming the file, the line and what was expected.
std::vector<Request> make_requests(const WorkloadSpec& workload);

/// Reads a trace: JSON Lines ({"arrival_s": 0.25, "input_tokens": 812, "output_tokens": 64} per line,
/// optional "samples", and "prefix_id" with "prefix_tokens" for a shared prompt prefix) or CSV with a
/// header naming arrival_s, input_tokens, output_tokens (optional prefix_id, prefix_tokens).
std::vector<Request> read_trace(const std::filesystem::path& path, int default_samples);

}  // namespace fmsim::inference
