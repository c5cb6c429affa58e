#pragma once
// The serving simulation: requests arrive, a router sends each to a replica, every replica runs an
// engine loop (continuous batching over a paged KV cache, chunked prefill, preemption by recompute,
// prefix caching, parallel sampling), and when prefill and decode are disaggregated each request's KV
// cache moves between pools as flows on the engine's network. docs/model.md ("Serving") explains it.
#include <string>
#include <vector>

#include "fmsim/inference/requests.hpp"
#include "fmsim/inference/serving_plan.hpp"

namespace fmsim::inference {

/// What happened to one request (times in seconds from the start of the run; -1 = never).
struct RequestOutcome {
  double arrival_s = 0;
  double first_token_s = -1;
  double finish_s = -1;
  double kv_transfer_s = 0;     ///< disaggregated: time the KV cache spent moving
  int input_tokens = 0;
  int output_tokens = 0;        ///< per sample
  int samples = 1;
  int preemptions = 0;
  int replica = -1;             ///< unified or prefill replica
  int decode_replica = -1;      ///< disaggregated
  int cached_tokens = 0;        ///< prompt tokens found in the prefix cache
};

struct ReplicaStats {
  int pool = 0;
  long long iterations = 0;
  long long prefill_tokens = 0;
  long long decode_tokens = 0;
  double busy_s = 0;
  /// busy_s by what the iterations spent it on (IterationBreakdown::accumulate: overhead_s is the host
  /// time the GPU waited for); its total_s() is busy_s.
  IterationBreakdown time_parts;
  double kv_block_seconds = 0;  ///< integral of blocks in use over time
  double request_seconds = 0;   ///< integral of requests held (routed here, not finished or handed on)
  long long kv_blocks = 0;
  long long peak_kv_blocks = 0;
  long long preemptions = 0;
  long long spec_decode_steps = 0;     ///< speculative decoding: sequence decode steps (per sample)
  long long spec_accepted_tokens = 0;  ///< and the tokens they gained
  /// Prefix tree: shared-prefix tokens looked up (first admissions), found in HBM, loaded from host
  /// memory; blocks evicted from HBM, and dropped from the host tier.
  long long prefix_looked_up_tokens = 0, prefix_gpu_hit_tokens = 0, prefix_host_hit_tokens = 0;
  long long prefix_gpu_evictions = 0, prefix_host_drops = 0;
};

struct IterationRecord {
  int replica = 0;
  double start_s = 0, end_s = 0;
  int prefill_tokens = 0, decode_tokens = 0, sequences = 0;
  double kv_used_fraction = 0;
};

struct TransferRecord {
  int request = 0, prefill_replica = 0, decode_replica = 0;
  double start_s = 0, end_s = 0, bytes = 0;
};

struct ServeOutcome {
  std::vector<RequestOutcome> requests;
  std::vector<ReplicaStats> replicas;
  std::vector<IterationRecord> iterations;  ///< only when a timeline was asked for
  std::vector<TransferRecord> transfers;    ///< disaggregated runs
  double end_s = 0;                         ///< last completion
  long long network_flows = 0;
  double network_bytes = 0;
};

/// Runs the simulation (in a forked child when it needs the engine's network, so that one process may
/// run many). Throws InputError for a request that can never be served (longer than a replica's KV
/// cache, or than max_num_batched_tokens without chunked prefill).
ServeOutcome simulate_serving(const ServingPlan& plan, const std::vector<Request>& requests, bool record_timeline);

}  // namespace fmsim::inference
