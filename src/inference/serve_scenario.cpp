// Serving scenario files: reading, --set overrides, pools (unified or prefill/decode), workload, SLOs,
// and the checks vLLM itself makes (TP dividing the attention heads and the KV heads, GPUs available).
#include "fmsim/inference/serve_scenario.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <limits>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/inference/serving_constants.hpp"
#include "fmsim/units/format.hpp"
#include "fmsim/workload/scenario.hpp"
#include "hybrid_serving.hpp"

namespace fmsim::inference {
namespace {

using nlohmann::json;
using config::ObjectReader;

/// Upper limits of serving settings, far above anything served: replicas (the largest cluster has
/// 1,048,576 GPUs), TP and PP sizes, tokens in one request or batch (16M; the longest contexts are 10M),
/// KV-cache block size, parallel samples per prompt, and requests per run (each costs memory and time:
/// 10 million requests take about 2 GiB).
constexpr std::int64_t kMaxReplicas = 1 << 20, kMaxParallelSize = 4096, kMaxTokens = 1 << 24,
                       kMaxBlockSize = 1 << 16, kMaxSamples = 4096, kMaxRequests = 10000000;

/// Keys a pool may set, read from the "serving" object (defaults for both pools) and from a pool's own
/// object; `base` holds the values already read.
PoolSpec read_pool(ObjectReader& r, PoolSpec base) {
  base.replicas = static_cast<int>(r.int_or("replicas", base.replicas, 1, kMaxReplicas));
  base.tp = static_cast<int>(r.int_or("tensor_parallel_size", base.tp, 1, kMaxParallelSize));
  base.pp = static_cast<int>(r.int_or("pipeline_parallel_size", base.pp, 1, kMaxParallelSize));
  base.expert_parallel = r.bool_or("enable_expert_parallel", base.expert_parallel);
  base.dp_attention = r.bool_or("data_parallel_attention", base.dp_attention);
  base.redundant_experts = static_cast<int>(r.int_or("num_redundant_experts", base.redundant_experts, 0, kMaxParallelSize));
  base.two_batch_overlap = r.bool_or("two_batch_overlap", base.two_batch_overlap);
  base.expert_load_imbalance = workload::read_load_imbalance(r, "expert_load_imbalance", base.expert_load_imbalance);
  EngineOptions& e = base.engine;
  e.max_num_seqs = static_cast<int>(r.int_or("max_num_seqs", e.max_num_seqs, 1, kMaxTokens));
  e.max_num_batched_tokens = static_cast<int>(r.int_or("max_num_batched_tokens", e.max_num_batched_tokens, 1, kMaxTokens));
  e.chunked_prefill = r.bool_or("enable_chunked_prefill", e.chunked_prefill);
  e.guaranteed_no_evict = r.choice_or("scheduler_policy", {"max_utilization", "guaranteed_no_evict"},
                                      e.guaranteed_no_evict ? "guaranteed_no_evict" : "max_utilization") == "guaranteed_no_evict";
  e.block_size = static_cast<int>(r.int_or("block_size", e.block_size, 1, kMaxBlockSize));
  e.gpu_memory_utilization = r.number_or("gpu_memory_utilization", e.gpu_memory_utilization, 0.0);
  if (e.gpu_memory_utilization > 1.0) r.fail("gpu_memory_utilization", "a fraction in (0, 1]");
  if (r.has("kv_cache_free_gpu_memory_fraction")) {
    e.kv_free_memory_fraction = r.number_or("kv_cache_free_gpu_memory_fraction", 0.0, -INFINITY);
    if (e.kv_free_memory_fraction <= 0 || e.kv_free_memory_fraction > 1.0) r.fail("kv_cache_free_gpu_memory_fraction", "a fraction in (0, 1]");
  }
  e.prefix_caching = r.bool_or("enable_prefix_caching", e.prefix_caching);
  if (r.has("prefix_cache_hit_rate")) {
    e.prefix_cache_hit_rate = r.number_or("prefix_cache_hit_rate", 0.0, -INFINITY);
    if (e.prefix_cache_hit_rate < 0 || e.prefix_cache_hit_rate >= 1.0) r.fail("prefix_cache_hit_rate", "a fraction in [0, 1)");
    if (!e.prefix_caching && e.prefix_cache_hit_rate > 0) {
      r.fail("prefix_cache_hit_rate", "0 unless enable_prefix_caching is true");
    }
  }
  if (r.has("kv_offloading_size")) {
    e.kv_offload_bytes = r.quantity_or("kv_offloading_size", units::Dimension::bytes, e.kv_offload_bytes);
    if (!(e.kv_offload_bytes >= 0) || !std::isfinite(e.kv_offload_bytes)) r.fail("kv_offloading_size", "host memory for the KV cache per replica, like \"200GiB\" (0 = none)");
  }
  e.num_gpu_blocks_override = r.int_or("num_gpu_blocks_override", e.num_gpu_blocks_override, 0, std::int64_t{1} << 40);
  e.iteration_overhead_s = r.quantity_or("iteration_overhead", units::Dimension::time, e.iteration_overhead_s);
  e.host_per_sequence_s = r.quantity_or("host_time_per_sequence", units::Dimension::time, e.host_per_sequence_s);
  e.response_per_token_s = r.quantity_or("response_time_per_token", units::Dimension::time, e.response_per_token_s);
  e.overlap_scheduler = r.bool_or("overlap_scheduler", e.overlap_scheduler);
  if (r.has("stream_tokens")) {
    e.stream_tokens = r.bool_or("stream_tokens", e.stream_tokens);
    e.stream_tokens_given = true;
  }
  e.moe_backend = moe_backend_from_name(r.choice_or("moe_backend", moe_backend_names(), to_string(e.moe_backend)));
  e.cuda_graph_padding = r.bool_or("cuda_graph_padding", e.cuda_graph_padding);
  if (r.has("cuda_graph_batch_sizes")) {
    const json& sizes = r.required_value("cuda_graph_batch_sizes");
    const std::string expected = "an array of decode batch sizes from 1 to " + std::to_string(kMaxTokens) + " (empty: no CUDA graphs)";
    if (!sizes.is_array()) r.fail("cuda_graph_batch_sizes", expected);
    e.cuda_graph_batch_sizes.clear();
    for (const json& size : sizes) {
      if (!size.is_number_integer() || size.get<std::int64_t>() < 1 || size.get<std::int64_t>() > kMaxTokens) {
        r.fail("cuda_graph_batch_sizes", expected + "; found " + size.dump());
      }
      e.cuda_graph_batch_sizes.push_back(size.get<int>());
    }
    std::sort(e.cuda_graph_batch_sizes.begin(), e.cuda_graph_batch_sizes.end());
  }
  if (e.max_num_batched_tokens < e.max_num_seqs) {
    r.fail("max_num_batched_tokens", "at least max_num_seqs (" + std::to_string(e.max_num_seqs) +
                                          "), as vLLM requires: every running sequence needs a token per iteration");
  }
  return base;
}

LengthSpec read_length(ObjectReader& parent, const std::string& key) {
  const json& value = parent.required_value(key);
  LengthSpec spec;
  // Positive JSON integers arrive unsigned, negative ones signed: compare without converting.
  const bool token_count = value.is_number_unsigned()
                               ? value.get<std::uint64_t>() >= 1 && value.get<std::uint64_t>() <= kMaxTokens
                               : value.is_number_integer() && value.get<long long>() >= 1 && value.get<long long>() <= kMaxTokens;
  if (token_count) {
    spec.mean = static_cast<double>(value.get<long long>());
    spec.min = spec.max = static_cast<int>(value.get<long long>());
    return spec;
  }
  if (!value.is_object()) parent.fail(key, "a token count from 1 to " + std::to_string(kMaxTokens) + " or a distribution object {\"distribution\": \"fixed|uniform|lognormal\", ...}");
  ObjectReader r(value, parent.file(), parent.path_of(key));
  const std::string kind = r.choice_or("distribution", {"fixed", "uniform", "lognormal"}, "fixed");
  if (kind == "uniform" && r.has("mean")) r.fail("mean", "no mean with distribution \"uniform\" (min and max define it)");
  if (kind != "lognormal" && r.has("sigma")) r.fail("sigma", "no sigma unless distribution = \"lognormal\"");
  if (kind == "uniform") {
    spec.kind = LengthSpec::Kind::uniform;
    spec.min = static_cast<int>(r.required_int("min", 1, kMaxTokens));
    spec.max = static_cast<int>(r.required_int("max", spec.min, kMaxTokens));
    spec.mean = 0.5 * (spec.min + spec.max);
  } else {
    spec.kind = kind == "fixed" ? LengthSpec::Kind::fixed : LengthSpec::Kind::lognormal;
    spec.mean = static_cast<double>(r.required_int("mean", 1, kMaxTokens));
    if (spec.kind == LengthSpec::Kind::lognormal) spec.sigma = r.required_number("sigma", 0.0);
    spec.min = static_cast<int>(r.int_or("min", 1, 1, kMaxTokens));
    spec.max = static_cast<int>(r.int_or("max", 0, 0, kMaxTokens));
    if (spec.max > 0 && spec.max < spec.min) r.fail("max", "at least min (" + std::to_string(spec.min) + ")");
  }
  r.reject_unknown_keys();
  return spec;
}

WorkloadSpec read_workload(ObjectReader& r, const std::filesystem::path& base_dir) {
  WorkloadSpec w;
  const std::string arrival = r.choice_or("arrival", {"offline", "poisson", "trace"}, "poisson");
  w.seed = static_cast<std::uint64_t>(r.int_or("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  w.samples_per_prompt = static_cast<int>(r.int_or("samples_per_prompt", 1, 1, kMaxSamples));
  // Keys of the other arrival kinds are refused by name (and so listed among the known keys).
  for (const char* key : {"requests", "rate", "input_tokens", "output_tokens"}) {
    if (arrival == "trace" && r.has(key)) r.fail(key, "no such key with arrival = \"trace\" (the trace gives every request)");
  }
  if (arrival != "trace" && r.has("trace")) r.fail("trace", "no such key unless arrival = \"trace\"");
  if (arrival == "offline" && r.has("rate")) r.fail("rate", "no such key with arrival = \"offline\" (every request arrives at t = 0)");
  if (arrival == "trace") {
    w.arrival = WorkloadSpec::Arrival::trace;
    std::filesystem::path trace = r.required_string("trace");
    std::error_code error;
    w.trace = trace.is_absolute() || !std::filesystem::exists(base_dir / trace, error) ? trace : base_dir / trace;
    return w;
  }
  w.arrival = arrival == "offline" ? WorkloadSpec::Arrival::offline : WorkloadSpec::Arrival::poisson;
  w.requests = static_cast<int>(r.required_int("requests", 1, kMaxRequests));
  if (w.arrival == WorkloadSpec::Arrival::poisson) {
    w.rate_per_s = r.required_quantity("rate", units::Dimension::request_rate);
    if (!(w.rate_per_s > 0)) r.fail("rate", "an arrival rate above zero, like \"40/s\"");
  }
  w.input = read_length(r, "input_tokens");
  w.output = read_length(r, "output_tokens");
  if (auto prefix = r.optional_object("shared_prefix")) {
    w.prefix_groups = static_cast<int>(prefix->required_int("groups", 1, kMaxRequests));
    w.prefix_tokens = static_cast<int>(prefix->required_int("tokens", 1, kMaxTokens));
    prefix->reject_unknown_keys();
  }
  return w;
}

SloSpec read_slo(ObjectReader& r) {
  SloSpec slo;
  slo.ttft_s = r.optional_quantity("ttft", units::Dimension::time);
  slo.tpot_s = r.optional_quantity("tpot", units::Dimension::time);
  slo.e2e_s = r.optional_quantity("e2e", units::Dimension::time);
  slo.percentile = r.number_or("percentile", 99, 0.0);
  if (slo.percentile > 100) r.fail("percentile", "a percentile in (0, 100]");
  r.reject_unknown_keys();
  return slo;
}

/// Upper limit of num_speculative_tokens (engines run 1-8; EAGLE trees reach ~60 nodes, not modelled).
constexpr std::int64_t kMaxSpeculativeTokens = 32;

/// serving.speculative: {"method": "draft|eagle|mtp", "num_speculative_tokens": k, "acceptance_rate":
/// a or [p_1, ..., p_k], "draft_model": preset or config (method draft only)}.
SpeculativeSpec read_speculative(ObjectReader& r, const workload::ModelSpec& target, const std::filesystem::path& base_dir) {
  SpeculativeSpec spec;
  const std::string method = r.choice_or("method", {"draft", "eagle", "mtp"}, "");
  if (method.empty()) r.fail("method", "one of \"draft\" (a smaller draft model), \"eagle\" (an EAGLE head), \"mtp\" (the model's multi-token-prediction heads)");
  spec.method = method == "draft" ? SpeculativeSpec::Method::draft : method == "eagle" ? SpeculativeSpec::Method::eagle
                                                                                       : SpeculativeSpec::Method::mtp;
  if (!r.has("num_speculative_tokens")) r.fail("num_speculative_tokens", "the number of tokens drafted per step, an integer from 1 to " + std::to_string(kMaxSpeculativeTokens));
  const json& k_value = r.required_value("num_speculative_tokens");
  if (!k_value.is_number_integer() || k_value.get<long long>() < 1 || k_value.get<long long>() > kMaxSpeculativeTokens) {
    r.fail("num_speculative_tokens", "an integer from 1 to " + std::to_string(kMaxSpeculativeTokens) + " (k < 1 drafts nothing)");
  }
  spec.k = static_cast<int>(k_value.get<long long>());
  if (!r.has("acceptance_rate")) {
    r.fail("acceptance_rate", "an acceptance rate in [0, 1] (i.i.d. per drafted token) or a list of " + std::to_string(spec.k) + " per-position rates");
  }
  const json& a = r.required_value("acceptance_rate");
  const std::string fraction = "in [0, 1]";
  if (a.is_number()) {
    const double rate = a.get<double>();
    if (!(rate >= 0 && rate <= 1)) r.fail("acceptance_rate", "an acceptance rate " + fraction + " (the probability that a drafted token is accepted)");
    double p = 1;
    for (int i = 0; i < spec.k; ++i) spec.accepted_by_position.push_back(p *= rate);
  } else if (a.is_array()) {
    if (static_cast<int>(a.size()) != spec.k) {
      r.fail("acceptance_rate", "one acceptance rate per drafted position (" + std::to_string(spec.k) + " = num_speculative_tokens)");
    }
    double previous = 1;
    for (const json& value : a) {
      if (!value.is_number() || !(value.get<double>() >= 0 && value.get<double>() <= 1)) {
        r.fail("acceptance_rate", "per-position acceptance rates " + fraction + "; found " + value.dump());
      }
      if (value.get<double>() > previous) {
        r.fail("acceptance_rate", "rates that do not increase with the position (position i counts drafts whose first i tokens were all "
                                  "accepted, as vLLM's per-position metrics do)");
      }
      previous = value.get<double>();
      spec.accepted_by_position.push_back(previous);
    }
  } else {
    r.fail("acceptance_rate", "an acceptance rate " + fraction + " or a list of " + std::to_string(spec.k) + " per-position rates");
  }
  spec.expected_tokens_per_step = expected_tokens_per_step(spec.accepted_by_position);
  if (spec.method == SpeculativeSpec::Method::draft) {
    if (!r.has("draft_model")) r.fail("draft_model", "a draft model (a preset such as \"llama3.1-8b\" or a config) for method \"draft\"");
    spec.draft_model = workload::expand_model(r.required_value("draft_model"), r.file(), base_dir);
    if (spec.draft_model.vocab != target.vocab) {
      r.fail("draft_model", "a draft model with the target's vocabulary (" + std::to_string(target.vocab) + " tokens; " +
                                spec.draft_model.name + " has " + std::to_string(spec.draft_model.vocab) + ")");
    }
    if (spec.draft_model.hybrid.enabled() || spec.draft_model.is_moe()) r.fail("draft_model", "a dense transformer draft model");
  } else if (r.has("draft_model")) {
    r.fail("draft_model", "no draft_model with method \"" + method + "\" (the " + (method == "eagle" ? "EAGLE head" : "MTP head") +
                              " is part of the target)");
  }
  if (spec.method == SpeculativeSpec::Method::mtp && target.mtp_layers < 1) {
    r.fail("method", "\"draft\" or \"eagle\": " + target.name + " has no multi-token-prediction heads (num_nextn_predict_layers = 0)");
  }
  r.reject_unknown_keys();
  return spec;
}

/// What serving a hybrid Mamba/attention model supports (hybrid_serving.hpp): TP over the Mamba heads and
/// groups, one pipeline stage, no DP attention, no speculative decoding, no prefix reuse.
void validate_hybrid_pool(const PoolSpec& pool, const ServeScenario& s, const std::string& where) {
  const auto& m = s.model;
  const auto& mamba = m.hybrid.mamba;
  const std::string what = where + ": " + m.name + " is a hybrid Mamba/attention model";
  if (!mamba_fits_tp(mamba, pool.tp)) {
    throw InputError(what + ": tensor_parallel_size = " + std::to_string(pool.tp) + " must divide its " + std::to_string(mamba.heads) +
                     " Mamba heads and " + std::to_string(mamba.groups) + " groups (the engines shard both over TP, or replicate a single group)");
  }
  if (m.hybrid.count(workload::HybridLayer::attention) == 0) {
    throw InputError(what + " without attention layers: serving a model with no KV cache at all is not modelled");
  }
  if (pool.pp > 1) throw InputError(what + ": pipeline_parallel_size > 1 is not modelled for it (serve it with TP)");
  if (pool.dp_attention) throw InputError(what + ": data_parallel_attention is not modelled for it");
  if (pool.two_batch_overlap) throw InputError(what + ": two_batch_overlap is not modelled for it");
  if (s.speculative.enabled()) throw InputError(what + ": speculative decoding of a hybrid target is not modelled (its drafts would roll back Mamba states)");
  if (pool.engine.prefix_caching || pool.engine.kv_offload_bytes > 0) {
    throw InputError(what + ": enable_prefix_caching and kv_offloading_size are not modelled for it (a Mamba layer's state is "
                     "per sequence, not per block of tokens: a cached prefix needs its state at the prefix's end)");
  }
}

void validate_pool(const PoolSpec& pool, const ServeScenario& s, const std::string& where) {
  const auto& m = s.model;
  const std::string tp_text = "tensor_parallel_size = " + std::to_string(pool.tp);
  if (m.hybrid.enabled()) validate_hybrid_pool(pool, s, where);  // hybrid_serving.hpp
  // With data-parallel attention each rank runs whole attention for its own sequences: no head split.
  if (!pool.dp_attention && m.heads % pool.tp != 0) {
    throw InputError(where + ": " + tp_text + " does not divide the " + std::to_string(m.heads) + " attention heads of " + m.name +
                     (m.mla ? " (data_parallel_attention runs whole attention on each rank)" : ""));
  }
  if (!m.mla && !pool.dp_attention && m.kv_heads % pool.tp != 0 && pool.tp % m.kv_heads != 0) {
    throw InputError(where + ": " + tp_text + " and the " + std::to_string(m.kv_heads) + " KV heads of " + m.name +
                     ": one must divide the other (vLLM shards KV heads over TP ranks or replicates them)");
  }
  const int domain_gpus = s.cluster.gpus_per_node * s.cluster.nvlink_domain_nodes;
  // A TP group larger than an NVLink domain spans whole domains (vLLM and TensorRT-LLM run TP across
  // nodes over the network, with the same rank count per node); its all-reduces then cross EFA.
  if (pool.tp > domain_gpus && pool.tp % domain_gpus != 0) {
    throw InputError(where + ": " + tp_text + " is larger than an NVLink domain (" + std::to_string(domain_gpus) +
                     " GPUs) but not a multiple of it: a TP group spans whole domains (expected " + std::to_string(domain_gpus) +
                     ", " + std::to_string(2 * domain_gpus) + ", ... or at most " + std::to_string(domain_gpus) + ")");
  }
  if (pool.engine.moe_backend == MoeBackend::trtllm_gen && s.cluster.gpu.sm_version < 100) {
    throw InputError(where + "/moe_backend = \"trtllm_gen\": TensorRT-LLM's TRTLLM-Gen MoE kernels run on Blackwell (SM100 and later) only, and " +
                     s.cluster.gpu.name + " is SM" + std::to_string(s.cluster.gpu.sm_version) + " (expected \"cutlass\", \"triton\" or \"grouped_gemm\")");
  }
  if (pool.pp > m.layers) throw InputError(where + ": pipeline_parallel_size exceeds the model's " + std::to_string(m.layers) + " layers");
  if (s.speculative.method == SpeculativeSpec::Method::draft) {
    const auto& d = s.speculative.draft_model;
    if (d.heads % pool.tp != 0 || (d.kv_heads % pool.tp != 0 && pool.tp % d.kv_heads != 0)) {
      throw InputError(where + ": " + tp_text + " does not divide the draft model " + d.name + "'s " + std::to_string(d.heads) +
                       " attention heads and " + std::to_string(d.kv_heads) + " KV heads (the draft runs at the target's TP)");
    }
  }
  if (pool.engine.kv_offload_bytes > 0) {
    // Each GPU's share of the replica's host KV, times the instance's GPUs, must fit its host memory.
    const auto& instance = s.cluster.instance;
    const double per_gpu = pool.engine.kv_offload_bytes / pool.gpus_per_replica();
    const double per_node = per_gpu * s.cluster.gpus_per_node;
    if (instance.host_memory_bytes <= 0) {
      throw InputError(where + ": kv_offloading_size needs the host memory of " + instance.name + ", which the catalog does not give");
    }
    if (per_node > instance.host_memory_bytes) {
      throw InputError(where + ": kv_offloading_size = " + units::format_bytes(pool.engine.kv_offload_bytes) + " per replica of " +
                       std::to_string(pool.gpus_per_replica()) + " GPUs is " + units::format_bytes(per_node) + " per " + instance.name +
                       " (" + std::to_string(s.cluster.gpus_per_node) + " GPUs), more than its " +
                       units::format_bytes(instance.host_memory_bytes) + " of host memory");
    }
  }
  if (pool.expert_parallel && !m.is_moe()) throw InputError(where + ": enable_expert_parallel needs a mixture-of-experts model; " + m.name + " is dense");
  if (pool.redundant_experts > 0 && !pool.expert_parallel) {
    throw InputError(where + ": num_redundant_experts = " + std::to_string(pool.redundant_experts) +
                     " needs enable_expert_parallel (the load balancer places copies of experts on expert-parallel ranks)");
  }
  if (pool.expert_parallel && (m.moe.experts + pool.redundant_experts) % pool.tp != 0) {
    const std::string physical = pool.redundant_experts > 0 ? std::to_string(m.moe.experts) + " + " + std::to_string(pool.redundant_experts) +
                                                                  " redundant = " + std::to_string(m.moe.experts + pool.redundant_experts) + " experts"
                                                            : std::to_string(m.moe.experts) + " experts";
    throw InputError(where + ": expert parallel size " + std::to_string(pool.tp) + " does not divide the " + physical +
                     " (num_redundant_experts adds copies so that it does, e.g. 32 for 256 experts over 72 GPUs)");
  }
  if (pool.expert_load_imbalance > 0 && !pool.expert_parallel) {
    throw InputError(where + ": expert_load_imbalance needs enable_expert_parallel (without it every rank holds a slice of every expert)");
  }
  if (pool.two_batch_overlap && (!pool.expert_parallel || pool.tp < 2)) {
    throw InputError(where + ": two_batch_overlap needs enable_expert_parallel over at least 2 GPUs (it hides the expert all-to-all "
                     "behind compute; " + tp_text + (pool.expert_parallel ? " has none" : "") + ")");
  }
}

}  // namespace

int ServeScenario::total_gpus() const {
  // Each factor is capped when read (replicas, TP, PP); the sum saturates rather than overflow.
  std::int64_t gpus = 0;
  for (const auto& pool : pools) gpus += std::int64_t{pool.replicas} * pool.tp * pool.pp;
  return static_cast<int>(std::min<std::int64_t>(gpus, std::numeric_limits<int>::max()));
}

ServeScenario load_serve_scenario(const std::filesystem::path& path, const std::vector<std::string>& sets,
                                  const hardware::Catalog& catalog) {
  config::JsonFile file = workload::load_scenario_document(path, sets, "serving scenario");
  return serve_scenario_from_json(std::move(file.root), file.path, path.parent_path(), catalog);
}

ServeScenario serve_scenario_from_json(nlohmann::json document, const std::string& origin, const std::filesystem::path& base_dir,
                                       const hardware::Catalog& catalog) {
  ObjectReader root(document, origin);
  ServeScenario s;
  s.file = origin;
  s.resolved = document;
  root.optional_string("schema");
  root.optional_string("description");
  s.name = root.string_or("name", std::filesystem::path(origin).stem().string());
  s.cluster = topology::cluster_from_json(workload::expand_cluster(root.required_value("cluster"), origin, base_dir),
                                          origin + ": /cluster", "cluster", catalog);
  s.model = workload::expand_model(root.required_value("model"), origin, base_dir);

  ObjectReader serving = root.required_object("serving");
  const std::string precision = serving.choice_or("precision", {"bf16", "fp8", "fp4"}, "bf16");
  s.precision = precision == "fp8" ? WeightPrecision::fp8 : precision == "fp4" ? WeightPrecision::fp4 : WeightPrecision::bf16;
  if (s.precision == WeightPrecision::fp8 && s.cluster.gpu.fp8_dense_flops <= 0) {
    serving.fail("precision", "bf16: the " + s.cluster.gpu.name + " has no FP8 tensor cores");
  }
  if (s.precision == WeightPrecision::fp4 && s.cluster.gpu.fp4_dense_flops <= 0) {
    serving.fail("precision", "bf16 or fp8: FP4 needs Blackwell tensor cores, and the " + s.cluster.gpu.name + " has none");
  }
  const std::string kv_dtype = serving.choice_or("kv_cache_dtype", {"auto", "bf16", "fp8"}, "auto");
  s.kv_bytes_per_element = kv_dtype == "fp8" ? 1.0 : 2.0;
  // Hybrid models' SSM state cache (vLLM and TensorRT-LLM mamba_ssm_cache_dtype; "auto" = the model's BF16).
  const std::string ssm_dtype = serving.choice_or("mamba_ssm_cache_dtype", {"auto", "bfloat16", "float32"}, "auto");
  s.ssm_state_bytes_per_element = ssm_dtype == "float32" ? 4.0 : 2.0;
  s.router = serving.choice_or("router", {"round_robin", "least_outstanding"}, "least_outstanding") == "round_robin"
                 ? RouterPolicy::round_robin
                 : RouterPolicy::least_outstanding;
  PoolSpec defaults;
  defaults.engine.iteration_overhead_s = kDefaultIterationOverhead_s;
  // vLLM's batching limits depend on the GPU (vllm/engine/arg_utils.py, get_batch_defaults, API server):
  // 1,024 sequences and 8,192 tokens on GPUs of at least 70 GiB other than the A100, else 256 and 2,048.
  {
    std::string gpu_name = s.cluster.gpu.name;
    std::transform(gpu_name.begin(), gpu_name.end(), gpu_name.begin(), [](unsigned char c) { return std::tolower(c); });
    const bool large = s.cluster.gpu.hbm_bytes >= kVllmLargeGpu_bytes && gpu_name.find("a100") == std::string::npos;
    defaults.engine.max_num_seqs = large ? kVllmMaxNumSeqsLargeGpu : kVllmMaxNumSeqs;
    defaults.engine.max_num_batched_tokens = large ? kVllmMaxNumBatchedTokensLargeGpu : kVllmMaxNumBatchedTokens;
  }
  // vLLM V1: decode batches padded up to 1, 2, 4, 8, 16, ... 512 (multiples of 8), replayed as graphs.
  defaults.engine.cuda_graph_padding = true;
  for (int size : {1, 2, 4}) defaults.engine.cuda_graph_batch_sizes.push_back(size);
  for (int size = 8; size <= kVllmCudaGraphMaxBatch; size += 8) defaults.engine.cuda_graph_batch_sizes.push_back(size);
  if (serving.choice_or("engine", {"vllm", "tensorrt_llm"}, "vllm") == "tensorrt_llm") {
    // TensorRT-LLM's defaults (LLM API BuildConfig / KvCacheConfig / SchedulerConfig): max_batch_size
    // 2048, max_num_tokens 8192, tokens_per_block 32, free_gpu_memory_fraction 0.9, the
    // GUARANTEED_NO_EVICT capacity scheduler; docs/model.md cites each.
    EngineOptions& e = defaults.engine;
    e.kind = EngineKind::tensorrt_llm;
    e.max_num_seqs = kTrtllmMaxBatchSize;
    e.max_num_batched_tokens = kTrtllmMaxNumTokens;
    e.block_size = kTrtllmTokensPerBlock;
    e.kv_free_memory_fraction = kTrtllmFreeGpuMemoryFraction;
    e.guaranteed_no_evict = true;
    e.host_per_sequence_s = kTrtllmHostPerSequence_s;
    e.response_per_token_s = kTrtllmStreamResponsePerToken_s;
    e.overlap_scheduler = true;  // PyTorch backend default (docs: features/overlap-scheduler)
    e.moe_backend = MoeBackend::cutlass;  // MoeConfig.backend's default (moe_backend.hpp)
    e.cuda_graph_padding = false;
    e.cuda_graph_batch_sizes.clear();
    for (int size = 1; size < 32; ++size) e.cuda_graph_batch_sizes.push_back(size);
    for (int size : {32, 64, kTrtllmCudaGraphMaxBatch}) e.cuda_graph_batch_sizes.push_back(size);
  }
  if (auto speculative = serving.optional_object("speculative")) s.speculative = read_speculative(*speculative, s.model, base_dir);
  defaults = read_pool(serving, defaults);
  if (auto disaggregation = serving.optional_object("disaggregation")) {
    for (const char* role : {"prefill", "decode"}) {
      ObjectReader pool_reader = disaggregation->required_object(role);
      PoolSpec pool = read_pool(pool_reader, defaults);
      pool.role = std::string(role) == "prefill" ? PoolRole::prefill : PoolRole::decode;
      pool_reader.reject_unknown_keys();
      validate_pool(pool, s, origin + ": /serving/disaggregation/" + role);
      s.pools.push_back(pool);
    }
    disaggregation->reject_unknown_keys();
  } else {
    validate_pool(defaults, s, origin + ": /serving");
    s.pools.push_back(defaults);
  }
  serving.reject_unknown_keys();

  ObjectReader workload_reader = root.required_object("workload");
  s.workload = read_workload(workload_reader, base_dir);
  workload_reader.reject_unknown_keys();
  // Clients of an online service stream tokens; an off-line batch (trtllm-bench, MLPerf Offline) takes
  // each request's output once, at its end.
  for (auto& pool : s.pools) {
    if (!pool.engine.stream_tokens_given) pool.engine.stream_tokens = s.workload.arrival != WorkloadSpec::Arrival::offline;
  }
  if (s.workload.prefix_groups > 0) {
    for (const auto& pool : s.pools) {
      if (pool.engine.prefix_caching && pool.engine.prefix_cache_hit_rate > 0) {
        throw InputError(origin + ": /serving/prefix_cache_hit_rate: a fixed hit rate and workload.shared_prefix exclude each other "
                         "(with shared prefixes the prefix tree finds the hits); remove prefix_cache_hit_rate");
      }
    }
  }
  if (auto slo = root.optional_object("slo")) s.slo = read_slo(*slo);
  root.reject_unknown_keys();

  if (s.total_gpus() > s.cluster.total_gpus()) {
    throw InputError(origin + ": the replicas need " + std::to_string(s.total_gpus()) + " GPUs and the cluster has " +
                     std::to_string(s.cluster.total_gpus()) + " (" + std::to_string(s.cluster.nodes) + " x " +
                     s.cluster.instance.name + "); add nodes or remove replicas");
  }
  return s;
}

std::string to_string(WeightPrecision precision) {
  switch (precision) {
    case WeightPrecision::bf16: return "bf16";
    case WeightPrecision::fp8: return "fp8";
    case WeightPrecision::fp4: return "fp4";
  }
  return "?";
}

std::string to_string(PoolRole role) {
  switch (role) {
    case PoolRole::unified: return "unified";
    case PoolRole::prefill: return "prefill";
    case PoolRole::decode: return "decode";
  }
  return "?";
}

double expected_tokens_per_step(const std::vector<double>& accepted_by_position) {
  double expected = 1;
  for (double p : accepted_by_position) expected += p;
  return expected;
}

std::string to_string(SpeculativeSpec::Method method) {
  switch (method) {
    case SpeculativeSpec::Method::none: return "none";
    case SpeculativeSpec::Method::draft: return "draft";
    case SpeculativeSpec::Method::eagle: return "eagle";
    case SpeculativeSpec::Method::mtp: return "mtp";
  }
  return "?";
}

std::string to_string(EngineKind kind) { return kind == EngineKind::tensorrt_llm ? "tensorrt_llm" : "vllm"; }

std::string to_string(RouterPolicy policy) { return policy == RouterPolicy::round_robin ? "round_robin" : "least_outstanding"; }

}  // namespace fmsim::inference
