#pragma once
// A serving scenario file (configs/serving/*.json, schema fmsim.serve/1): cluster, model, one pool of
// replicas (or a prefill pool and a decode pool when disaggregated), the engine's batching options
// (vLLM names), the workload and the SLOs. docs/formats.md documents every key.
#include "fmsim/inference/moe_backend.hpp"
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/workload/model.hpp"

namespace fmsim::inference {

enum class WeightPrecision { bf16, fp8, fp4 };
enum class PoolRole { unified, prefill, decode };
enum class RouterPolicy { round_robin, least_outstanding };
/// Which engine's defaults and per-iteration host costs apply (docs/model.md, "Engine behaviour").
enum class EngineKind { vllm, tensorrt_llm };

/// How a batching engine (vLLM / SGLang / TensorRT-LLM) is configured, with vLLM's option names.
struct EngineOptions {
  EngineKind kind = EngineKind::vllm;
  int max_num_seqs = 256;                  ///< sequences in the running batch
  int max_num_batched_tokens = 8192;       ///< tokens one iteration may process
  bool chunked_prefill = true;             ///< split long prompts over iterations
  /// Admission: vLLM's "max_utilization" (blocks as needed, preempt when out) or TensorRT-LLM's default
  /// "guaranteed_no_evict" (a request is admitted only with blocks for its whole output reserved).
  bool guaranteed_no_evict = false;
  int block_size = 16;                     ///< tokens per KV block
  double gpu_memory_utilization = 0.90;    ///< fraction of HBM the engine may use
  /// TensorRT-LLM's kv_cache_free_gpu_memory_fraction: the KV cache gets this fraction of the memory
  /// left after weights, activations and the runtime (0 = size it with gpu_memory_utilization instead).
  double kv_free_memory_fraction = 0;
  bool prefix_caching = false;
  double prefix_cache_hit_rate = 0.0;      ///< fraction of each prompt found in the cache (when enabled)
  double kv_offload_bytes = 0;             ///< kv_offloading_size: host memory for KV per replica (0 = none)
  long long num_gpu_blocks_override = 0;   ///< vLLM's: the KV cache holds this many blocks (0 = as memory allows)
  double iteration_overhead_s = 0;         ///< host-side time per iteration (scheduler, launch)
  double host_per_sequence_s = 0;          ///< host time per scheduled sequence (inputs, bookkeeping)
  double response_per_token_s = 0;         ///< host time per token returned to a client (streamed)
  bool overlap_scheduler = false;          ///< host work overlaps the next GPU iteration
  bool stream_tokens = true;               ///< every token goes back to its client as it is sampled
  bool stream_tokens_given = false;        ///< set in the file; otherwise on unless arrival is offline
  std::vector<int> cuda_graph_batch_sizes; ///< decode batch sizes captured as CUDA graphs (ascending)
  /// The MoE kernels (moe_backend.hpp): vLLM's Triton fused_moe by default, TensorRT-LLM's CUTLASS one.
  MoeBackend moe_backend = MoeBackend::triton;
  bool cuda_graph_padding = false;         ///< decode batches are padded up to a captured size
};

/// Identical replicas serving one role.
struct PoolSpec {
  PoolRole role = PoolRole::unified;
  int replicas = 1;
  int tp = 1, pp = 1;
  bool expert_parallel = false;            ///< experts sharded over the TP x DP ranks (vLLM enable_expert_parallel)
  bool dp_attention = false;               ///< attention data-parallel over the replica's ranks (MLA models)
  /// Expert-parallel load balancer (EPLB): extra copies of the busiest experts, so the replica holds
  /// experts + redundant_experts physical experts spread evenly over its ranks (SGLang
  /// --ep-num-redundant-experts, vLLM --num-redundant-experts).
  int redundant_experts = 0;
  /// Two-batch overlap (SGLang --enable-two-batch-overlap, after DeepSeek's inference system): each
  /// iteration runs as two micro-batches, one's all-to-all behind the other's compute.
  bool two_batch_overlap = false;
  /// Tokens the busiest expert-parallel rank receives over the mean (>= 1); 0 = what uniform random
  /// routing gives for the iteration's batch (workload/moe_routing.hpp).
  double expert_load_imbalance = 0;
  EngineOptions engine;
  int gpus_per_replica() const { return tp * pp; }
};

/// A token-length distribution: fixed, uniform [min, max], or lognormal with a mean and a sigma of log.
struct LengthSpec {
  enum class Kind { fixed, uniform, lognormal } kind = Kind::fixed;
  double mean = 0;
  int min = 1, max = 0;                    ///< max 0 = no cap (fixed, lognormal)
  double sigma = 0;
};

struct WorkloadSpec {
  enum class Arrival { offline, poisson, trace } arrival = Arrival::poisson;
  double rate_per_s = 0;                   ///< Poisson
  int requests = 1000;                     ///< offline and Poisson
  std::filesystem::path trace;             ///< JSON Lines or CSV
  LengthSpec input, output;
  int samples_per_prompt = 1;              ///< parallel sampling: sequences sharing one prompt
  /// Shared prefixes (system prompts): each request starts with one of `prefix_groups` prefixes of
  /// `prefix_tokens` tokens, drawn uniformly, before its own input_tokens (0 groups = none).
  int prefix_groups = 0;
  int prefix_tokens = 0;
  std::uint64_t seed = 1;
};

/// Speculative decoding (docs/model.md, "Speculative decoding"): a proposer drafts k tokens per decoding
/// sequence, the target verifies them in one forward pass over k + 1 tokens and keeps the longest
/// accepted prefix plus one token of its own.
struct SpeculativeSpec {
  enum class Method { none, draft, eagle, mtp } method = Method::none;
  int k = 0;                               ///< num_speculative_tokens
  /// Per draft position i = 1..k: the probability that the draft's first i tokens are all accepted (as
  /// vLLM's per-position acceptance metrics count them); from a scalar a (i.i.d.): a^i.
  std::vector<double> accepted_by_position;
  double expected_tokens_per_step = 1;     ///< 1 + sum of accepted_by_position
  workload::ModelSpec draft_model;         ///< method draft
  bool enabled() const { return method != Method::none; }
};

/// The expected tokens a sequence gains per verify step: 1 + sum_i p_i; for i.i.d. acceptance a,
/// (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023, eq. 1).
double expected_tokens_per_step(const std::vector<double>& accepted_by_position);

struct SloSpec {
  std::optional<double> ttft_s, tpot_s, e2e_s;
  double percentile = 99;                  ///< the percentile that must meet them (sweep, slo_met)
};

struct ServeScenario {
  std::string file;
  std::string name;
  nlohmann::json resolved;
  topology::ClusterSpec cluster;
  workload::ModelSpec model;
  WeightPrecision precision = WeightPrecision::bf16;
  double kv_bytes_per_element = 2;         ///< kv_cache_dtype: bf16 2, fp8 1
  /// Hybrid models: bytes of one SSM-state element (mamba_ssm_cache_dtype: 2 for the model's BF16, 4 for float32).
  double ssm_state_bytes_per_element = 2.0;
  std::vector<PoolSpec> pools;             ///< one unified pool, or prefill then decode
  RouterPolicy router = RouterPolicy::least_outstanding;
  SpeculativeSpec speculative;
  WorkloadSpec workload;
  SloSpec slo;
  bool disaggregated() const { return pools.size() == 2; }
  int total_gpus() const;
};

/// Loads a serving scenario, applies `--set` overrides in order and validates it against the catalog and
/// the model (TP dividing heads and KV heads, GPUs available, FP8/FP4 supported). Throws InputError.
ServeScenario load_serve_scenario(const std::filesystem::path& path, const std::vector<std::string>& sets,
                                  const hardware::Catalog& catalog);
/// The same from a document already in memory: `origin` names it in messages, relative references
/// (cluster base, model files, traces) resolve against `base_dir`.
ServeScenario serve_scenario_from_json(nlohmann::json document, const std::string& origin, const std::filesystem::path& base_dir,
                                       const hardware::Catalog& catalog);

std::string to_string(WeightPrecision precision);
std::string to_string(PoolRole role);
std::string to_string(RouterPolicy policy);
std::string to_string(EngineKind kind);
std::string to_string(SpeculativeSpec::Method method);

}  // namespace fmsim::inference
