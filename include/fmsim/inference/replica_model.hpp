#pragma once
// One serving replica (a TP x PP group of GPUs running one engine): its memory (weights, activation
// workspace, KV cache capacity) and the time of one engine iteration for a given batch, from the compute
// model (GEMMs compute- or HBM-bound, flash attention for prefill, KV reads for decode) and the TP/EP
// collectives. docs/model.md ("Serving") derives each term.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "fmsim/collectives/layout.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/inference/serve_scenario.hpp"
#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/workload/ssd_scan.hpp"

namespace fmsim::inference {

/// What one iteration processes.
struct BatchShape {
  int decode_tokens = 0;                ///< sequences decoding one token each
  double decode_context_tokens = 0;     ///< sum of their KV lengths (tokens read by attention)
  int prefill_tokens = 0;               ///< prompt tokens computed this iteration (chunks)
  double prefill_attention_pairs = 0;   ///< query-key pairs of those chunks, causal, incl. cached context
  int sampled_rows = 0;                 ///< sequences that sample a token (LM head rows)
  int finishing_rows = 0;               ///< sequences that sample their last token this iteration
  int prefill_sequences = 0;            ///< sequences with a prefill chunk this iteration
  /// Speculative decoding: decoding sequences that draft k tokens and verify them (each counts k + 1
  /// rows in decode_tokens and one in sampled_rows).
  int draft_sequences = 0;
  /// KV offloading: prefix tokens loaded from host memory into HBM before this iteration's forward.
  int host_load_tokens = 0;
  int tokens() const { return decode_tokens + prefill_tokens; }
};

struct IterationBreakdown {
  double gemm_s = 0;          ///< projections, MLP / experts, LM head
  double attention_s = 0;     ///< prefill flash attention + decode KV reads (hybrid models: + Mamba scan and state updates)
  double memory_ops_s = 0;    ///< norms, activations, MoE token permutation
  double communication_s = 0; ///< TP all-reduce, EP all-to-all, pipeline sends
  double sampling_s = 0;      ///< the sampler over the vocabulary (FP32 logits written and read)
  double overhead_s = 0;      ///< host side: per iteration, per sequence, per streamed token
  double draft_s = 0;         ///< speculative decoding: the proposer's k passes (and its prefill)
  double kv_load_s = 0;       ///< KV offloading: host-to-HBM copies of cached prefix blocks
  bool host_overlapped = false; ///< the host work of one iteration runs during the next GPU iteration
  int padded_tokens = 0;      ///< tokens the GEMMs ran on (a CUDA graph pads a decode batch up)
  double gpu_s() const { return gemm_s + attention_s + memory_ops_s + communication_s + sampling_s + draft_s + kv_load_s; }
  /// Without overlap the GPU waits for the host every iteration; with it the slower of the two paces.
  double total_s() const { return host_overlapped ? std::max(gpu_s(), overhead_s) : gpu_s() + overhead_s; }
  /// Adds another iteration's parts, its host time as the part the GPU waited for (so that the sum's
  /// total_s() is the sum of the iterations' total_s()).
  void accumulate(const IterationBreakdown& other) {
    gemm_s += other.gemm_s;
    attention_s += other.attention_s;
    memory_ops_s += other.memory_ops_s;
    communication_s += other.communication_s;
    sampling_s += other.sampling_s;
    draft_s += other.draft_s;
    kv_load_s += other.kv_load_s;
    overhead_s += other.total_s() - other.gpu_s();
  }
};

/// One MoE layer's pieces for two-batch overlap (per layer, for the token count it was priced at): the
/// attention side (projections, norms), the expert side (router, experts, activation, permutation), the
/// dispatch and the combine.
struct MoeLayerSplit {
  double attention_side_s = 0, expert_side_s = 0, dispatch_s = 0, combine_s = 0;
};

/// The breakdown's parts by name (gemm, attention, memory_ops, communication, sampling, draft, kv_load,
/// host), host being the host time the GPU waits for; they add up to the iteration time.
std::vector<std::pair<std::string, double>> named_parts(const IterationBreakdown& parts);

/// The decode batch a CUDA graph runs for `decode_tokens` sequences: the smallest captured size at or
/// above it (engine capture lists, docs/model.md), or `decode_tokens` itself when it is above the
/// largest graph or padding is off.
int cuda_graph_batch(const EngineOptions& engine, int decode_tokens);

struct ReplicaMemory {
  double weight_bytes_per_gpu = 0;
  double activation_bytes_per_gpu = 0;
  double reserve_bytes_per_gpu = 0;
  double kv_bytes_per_gpu = 0;          ///< what remains for the KV cache
  double kv_bytes_per_token_per_gpu = 0;
  long long kv_blocks = 0;              ///< per replica
  long long kv_capacity_tokens = 0;     ///< kv_blocks x block size
  /// KV offloading to host memory (kv_offloading_size): bytes per GPU, blocks per replica.
  double host_kv_bytes_per_gpu = 0;
  long long host_kv_blocks = 0;
  double host_link_Bps = 0;             ///< per GPU, host <-> HBM (PCIe, or NVLink-C2C on Grace systems)
  double reload_s_per_token = 0;        ///< one token's KV over that link
  double recompute_s_per_token = 0;     ///< one token's prefill at a full token budget (GEMMs, norms, collectives)
  /// Hybrid models: one sequence's Mamba state (conv and SSM state of every Mamba layer) on one GPU, and
  /// the KV blocks of the same pool it takes (vLLM allocates it from the KV cache, one slot per request;
  /// 0 under TensorRT-LLM, whose cache is preallocated apart).
  double mamba_state_bytes_per_sequence_per_gpu = 0;
  long long state_blocks_per_sequence = 0;
  /// TensorRT-LLM instead preallocates the state of max_num_seqs sequences apart from the KV cache.
  double mamba_cache_bytes_per_gpu = 0;
};

/// A pool's replica that does not fit in GPU memory: its weights, activation workspace and runtime
/// reserve leave no KV cache. Bad input (exit 2) unless the caller reports it as a result (`fmsim serve
/// --allow-oom`, which `fmsim check` uses so that the plan fails instead).
class ReplicaDoesNotFit : public InputError {
 public:
  ReplicaDoesNotFit(const std::string& message, double required_bytes, double usable_bytes)
      : InputError(message), required_bytes(required_bytes), usable_bytes(usable_bytes) {}
  double required_bytes;  ///< per GPU: weights + activations + runtime reserve
  double usable_bytes;    ///< per GPU: what the engine may use
};

class ReplicaModel {
 public:
  /// `tp_gpus`: global GPU ordinals of one TP group of the replica (for the collective layout);
  /// `stage_hop_gpus`: a GPU of the next stage (pipeline sends), or -1. Throws InputError when the
  /// model does not fit (`where` names the pool).
  ReplicaModel(const ServeScenario& scenario, const PoolSpec& pool, const topology::ClusterGraph& cluster,
               const std::vector<int>& tp_gpus, int stage_hop_gpu, const std::string& where);

  double iteration_s(const BatchShape& batch) const;
  IterationBreakdown breakdown(const BatchShape& batch) const;

  const ReplicaMemory& memory() const { return memory_; }
  const PoolSpec& pool() const { return pool_; }
  /// KV bytes of one token over the whole model, without replicas (what a prefill-to-decode move sends).
  double kv_transfer_bytes_per_token() const { return kv_transfer_bytes_per_token_; }
  /// Hybrid models: the Mamba state a prefill-to-decode move also sends per sequence (0 otherwise).
  double state_transfer_bytes_per_sequence() const { return state_transfer_bytes_per_sequence_; }
  int gpus() const { return pool_.gpus_per_replica(); }
  /// Speculative decoding: tokens drafted per step (0 = off) and tokens gained per step on average.
  int speculative_tokens() const { return spec_k_; }
  /// KV offloading pays when reloading a token's KV from host memory is faster than recomputing it.
  bool offload_pays() const { return memory_.host_kv_blocks > 0 && memory_.reload_s_per_token < memory_.recompute_s_per_token; }
  double expected_tokens_per_step() const { return spec_expected_; }
  /// The proposer's weights and KV bytes per token on one GPU (0 without speculative decoding).
  double draft_weight_bytes_per_gpu() const { return draft_weight_bytes_per_gpu_; }
  double draft_kv_bytes_per_token_per_gpu() const { return draft_kv_bytes_per_token_gpu_; }
  /// One pass of the proposer over `rows` rows (layers, fc, LM head, argmax; no attention), memoized.
  double draft_pass_s(int rows) const;
  /// One MoE layer's pieces at `tokens` tokens (what two-batch overlap pairs up), memoized.
  const MoeLayerSplit& moe_split(int tokens) const;
  int stage_layers() const { return stage_layers_; }
  int moe_stage_layers() const { return moe_stage_layers_; }

 private:
  /// Linear part of `layers` layers (`moe_layers` of them MoE) of model `m` for `tokens` rows: GEMMs,
  /// memory-bound kernels and collectives, added to `out`.
  double linear_costs(const workload::ModelSpec& m, int layers, int moe_layers, int tokens, IterationBreakdown& out,
                      MoeLayerSplit* split = nullptr) const;
  /// Everything that depends only on the token count: GEMMs, memory ops, collectives (memoized), and a
  /// MoE layer's pieces at that count.
  const IterationBreakdown& per_token_count(int tokens) const;
  /// Two-batch overlap of the linear parts and attention in `parts` (both halves of a batch of
  /// `padded` tokens, `attention_per_layer_s` the whole batch's attention per layer).
  void overlap_two_batches(IterationBreakdown& parts, int padded, double attention_per_layer_s, bool prefill) const;
  /// Expert-parallel load of the busiest rank over the mean for a batch of `tokens` (1 without EP).
  double ep_imbalance(double tokens) const;
  double allreduce_s(double bytes) const;
  double alltoall_s(double bytes) const;

  const ServeScenario& scenario_;
  PoolSpec pool_;
  compute::ComputeModel compute_;
  compute::MathPrecision math_ = compute::MathPrecision::bf16;
  collectives::CommLayout tp_layout_;
  bool has_tp_layout_ = false;
  double ep_send_share_ = 1.0;          ///< expert all-to-all bytes a domain-aware dispatcher sends (moe_routing.hpp)
  double stage_hop_Bps_ = 0, stage_hop_latency_s_ = 0;
  int stage_layers_ = 0;                ///< layers of the largest stage
  int moe_stage_layers_ = 0;
  double kv_bytes_per_token_layer_gpu_ = 0;
  double attention_width_per_gpu_ = 0;  ///< heads x (qk + v head dims) / ranks sharing a query
  double kv_transfer_bytes_per_token_ = 0;
  double state_transfer_bytes_per_sequence_ = 0;
  /// Hybrid models (hybrid_serving.hpp): the decoder's layers by kind (one stage: hybrid serving runs PP 1;
  /// none for a transformer), the Mamba shape each TP rank computes with, and its SSD scan's forward
  /// kernels, built once for every iteration.
  struct HybridLayers {
    int mamba = 0, attention = 0, mlp = 0, moe = 0;
  };
  HybridLayers hybrid_;
  workload::MambaShape mamba_shape_;
  std::vector<workload::SsdKernel> mamba_forward_kernels_;
  ReplicaMemory memory_;
  // Speculative decoding: the proposer's shape (a draft model, or one layer of the target's shape for
  // EAGLE and MTP heads), its layers, its fc input width (0 = none) and attention per token and layer.
  int spec_k_ = 0;
  double spec_expected_ = 1;
  workload::ModelSpec draft_model_;
  int draft_layers_ = 0, draft_moe_layers_ = 0;
  double draft_fc_in_ = 0;
  double draft_weight_bytes_per_gpu_ = 0, draft_kv_bytes_per_token_gpu_ = 0;
  double draft_attention_width_per_gpu_ = 0;
  mutable std::vector<double> draft_by_rows_;
  mutable std::vector<IterationBreakdown> by_tokens_;
  mutable std::vector<MoeLayerSplit> split_by_tokens_;
  mutable std::vector<char> known_;
};

}  // namespace fmsim::inference
