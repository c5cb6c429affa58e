#pragma once
// One engine iteration at a batch the user names, without a workload: `fmsim serve --iteration
// decode:SEQS@CONTEXT` (SEQS sequences decoding one token each, CONTEXT tokens of KV each) or
// `prefill:TOKENS@PROMPT` (TOKENS prompt tokens of PROMPT-token prompts, whole prompts). What an engine's
// one-batch benchmark measures (SGLang bench_one_batch, vLLM benchmark_latency): the iteration time, its
// parts, and the tokens per second it gives per replica and per GPU.
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/inference/serving_plan.hpp"

namespace fmsim::inference {

struct IterationProbe {
  enum class Kind { decode, prefill } kind = Kind::decode;
  int count = 0;    ///< decode: sequences per replica; prefill: prompt tokens per replica
  int length = 0;   ///< decode: KV tokens per sequence; prefill: tokens per prompt
  std::string text; ///< as given
};

/// Parses "decode:SEQS@CONTEXT" or "prefill:TOKENS@PROMPT"; InputError naming `option` otherwise.
IterationProbe parse_iteration_probe(const std::string& text, const std::string& option);

struct ProbeResult {
  IterationProbe probe;
  int pool = 0;
  BatchShape batch;
  IterationBreakdown parts;
  double iteration_s = 0;
  double tokens_per_s = 0;          ///< per replica: output tokens (decode) or prompt tokens (prefill)
  double tokens_per_s_per_gpu = 0;
};

/// Each probe on each pool that runs its kind (a prefill pool no decode, a decode pool no prefill).
/// InputError when a batch exceeds the pool's limits (max_num_seqs, max_num_batched_tokens, KV cache).
std::vector<ProbeResult> run_iteration_probes(const ServingPlan& plan, const std::vector<IterationProbe>& probes);

nlohmann::json probes_json(const ServingPlan& plan, const std::vector<ProbeResult>& results);
std::string probes_text(const ServingPlan& plan, const std::vector<ProbeResult>& results);

}  // namespace fmsim::inference
