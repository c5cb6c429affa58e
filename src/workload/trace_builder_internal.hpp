#pragma once
// Shared by trace_builder.cpp (schedule, pipeline, data parallelism) and layer_ops.cpp (the kernels
// and tensor/context/expert-parallel collectives of one transformer layer).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::workload::detail {

/// A node's identity: who runs it, what kind it is, where its time is booked, and its name.
TraceNode node_of(int rank, NodeType type, Category category, std::string name);

struct Communicators {
  int tp = -1, cp = -1, dp_cp = -1, ep = -1, edp = -1, etp = -1;
};

class TraceWriter {
 public:
  TraceWriter(const Scenario& s, Trace& trace);

  const Scenario& s;
  Trace& trace;
  int tokens = 0;      ///< tokens of one micro-batch on one CP rank
  int tokens_sp = 0;   ///< the part a TP rank holds between TP regions (sequence parallel)
  int vocab_padded = 0;
  double act_bytes = 2;
  ParameterCounts counts;  ///< of the model, once
  /// SMs that communication kernels running beside the compute now being emitted hold (the EP
  /// all-to-alls of combined 1F1B); every compute node emitted meanwhile runs on the rest.
  int sms_beside_comm = 0;
  /// Set while the builder emits the pieces of a pass in which Transformer Engine makes the quantized
  /// copies of the weights: the bytes per weight element (low_precision.hpp weight_cast_bytes_per_element)
  /// each low-precision forward GEMM then also moves.
  double weight_cast_bytes = 0;

  /// LoRA: the base weights are frozen, so no weight-gradient GEMM runs but the adapters' ("lora.*").
  bool frozen_base() const { return s.training.fine_tuning.frozen_base(); }
  bool skips_gemm(const std::string& name) const;
  /// Whether transformer layer `layer` runs its GEMMs in FP8 (precision, first_last_layers_bf16).
  bool fp8(int layer) const { return s.training.layer_in_fp8(layer, s.model.layers); }
  /// The id of the communicator (kind, ranks), created on first use.
  int comm(const std::string& kind, std::vector<int> ranks);
  int add(TraceNode node);
  TraceNode compute(int rank, const std::string& name, Kernel kernel, Category category = Category::compute) const;
  /// A collective node (skipped, returning `after`, when the communicator has one rank).
  /// `bandwidth_share`: TraceNode::comm_bandwidth_share (kernels slower than NCCL's for the same bytes).
  int collective(int rank, int comm, const std::string& stream, Category category, collectives::Op op, double bytes,
                 const std::string& name, std::vector<int> deps, double bandwidth_share = 1.0);
  /// `repeat` GEMMs of m x n x k; `weights` of them distinct (a MoE layer's experts: all; the row chunks
  /// of a TP-overlapped GEMM share one), what a weight cast quantizes; 0 = `repeat`.
  int gemm(int rank, const std::string& name, double m, double n, double k, bool fp8, std::vector<int> deps,
           int repeat = 1, int sms_taken = 0, int weights = 0);
  int memory(int rank, const std::string& name, double bytes, std::vector<int> deps);

 private:
  std::map<std::pair<std::string, std::vector<int>>, int> comm_ids_;
};

/// A layer's work in the pieces Megatron's fine-grained scheduler runs (MLM MR3217): the forward is
/// attention (with the router and permutation), dispatch all-to-all, experts, combine all-to-all, post
/// (unpermutation, residual); the backward is pre (recompute, unpermutation), combine all-to-all,
/// experts, dispatch all-to-all, delayed expert weight gradients, attention. A dense layer is one
/// forward piece and two backward ones (pre holds its MLP).
enum class PieceRole { pre, attention, dispatch, experts, combine, wgrad, post };
struct LayerPiece {
  PieceRole role;
  std::function<int(int after)> emit;  ///< adds the piece's nodes after `after`; returns the last
};
using LayerPieces = std::vector<LayerPiece>;

LayerPieces layer_forward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer);
LayerPieces layer_backward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer);
/// Emits pieces one after the other; returns the last node.
int emit_pieces(const LayerPieces& pieces, int after);
/// Emits one layer's forward and another's backward together (overlap_moe_expert_parallel_comm), in
/// the order of MLM's schedule_layer_1f1b, so that each all-to-all (EP stream) runs beside the other
/// pass's compute, which loses the all-to-all's SMs (TrainingOptions::moe_dispatcher_sms). Returns the
/// last node of the forward and of the backward.
std::pair<int, int> emit_pieces_combined(TraceWriter& w, const LayerPieces& forward, const LayerPieces& backward,
                                         int forward_after, int backward_after);

inline int emit_layer_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  return emit_pieces(layer_forward_pieces(w, rank, c, layer), after);
}
inline int emit_layer_backward(TraceWriter& w, int rank, const Communicators& c, int layer, int after) {
  return emit_pieces(layer_backward_pieces(w, rank, c, layer), after);
}

// The MoE block's steps (moe_ops.cpp, alltoall dispatcher; MEGATRON-NOTES.md section 6).
/// Forward: router GEMM and permutation of the routed rows (and, with moe_shared_expert_overlap, the
/// shared experts' FC1 beside the dispatch). Backward: the permutation's gradient.
int moe_route(TraceWriter& w, int rank, int layer, bool backward, int after);
/// All-to-all to the experts (EP), then the ETP all-gather: the dispatch, or in backward the gradient
/// of the combine.
int moe_a2a_to_experts(TraceWriter& w, int rank, const Communicators& c, bool backward, int after);
/// Expert GEMMs and activation (and the shared experts, or with moe_shared_expert_overlap the shared FC2
/// forward / FC1 backward, beside the all-to-all that follows); in backward the data gradients, and the weight
/// gradients too unless `delay_wgrad`.
int moe_experts(TraceWriter& w, int rank, int layer, bool backward, bool delay_wgrad, int after);
/// The experts' weight-gradient GEMMs when delayed (delay_wgrad_compute).
int moe_expert_wgrad(TraceWriter& w, int rank, int layer, int after);
/// ETP reduce-scatter, then the all-to-all back from the experts (EP): the combine, or in backward the
/// gradient of the dispatch.
int moe_a2a_from_experts(TraceWriter& w, int rank, const Communicators& c, bool backward, int after);
/// Unpermutation (weighted sum of the expert outputs), forward or backward (with
/// moe_shared_expert_overlap, then the shared FC2's backward beside the combine's gradient).
int moe_unpermute(TraceWriter& w, int rank, int layer, bool backward, int after);
/// recompute_modules "moe": the whole MoE block's forward again (router, permutation, dispatch, experts,
/// combine, unpermutation) before its backward, Megatron's checkpoint of the MoE layer.
int moe_forward_again(TraceWriter& w, int rank, const Communicators& c, int layer, int after);
/// One shared-expert GEMM pass: FC1 or FC2, forward or backward (data and weight gradients).
int moe_shared_expert(TraceWriter& w, int rank, int layer, bool fc1, bool backward, int after);

std::vector<int> after_of(int node);

// Fine-tuning and multi-token prediction (lora_ops.cpp, mtp_ops.cpp).
/// Keys per query of a layer's attention over one micro-batch row: the causal (or windowed) span, or
/// with packed sequences the per-sequence work spread over the row (workload_kind.hpp).
/// `whole_causal`: as if the layer had no sliding window (a kernel that computes the masked tiles too).
double attention_row_span(const Scenario& s, int layer, bool whole_causal = false);
/// Keys per query inside the attention kernel (the sequences' own spans when packed), per CP step.
double attention_kernel_keys(const Scenario& s, int layer, bool whole_causal = false);
/// LoRA adapter of `module` (linear_qkv, linear_proj, linear_fc1, linear_fc2) on layer `layer`: forward
/// y += B (A x), or in backward its data and weight gradients. Returns `after` when not targeted.
int lora_forward(TraceWriter& w, int rank, const Communicators& c, const std::string& module, int after);
int lora_backward(TraceWriter& w, int rank, const Communicators& c, const std::string& module, int after);
/// The multi-token-prediction depths of a stage (embedding of the shifted tokens, norms, eh_proj, one
/// layer of the last decoder layer's kind, final norm, shared output head and loss), forward or backward.
int mtp_forward(TraceWriter& w, int rank, const Communicators& c, int depths, int after);
int mtp_backward(TraceWriter& w, int rank, const Communicators& c, int depths, int after);

// Steps of the transformer layer (layer_ops.cpp) that hybrid layers reuse (mamba_ops.cpp).
/// A GEMM with its tensor-parallel collective before (all-gather) or after (reduce-scatter / all-reduce).
/// `bulk`: TE's bulk overlap (the collective runs whole beside the GEMM).
struct TpGemm {
  std::string name;
  double m, n, k;
  bool bulk = false;
};
int gemm_with_tp(TraceWriter& w, int rank, const Communicators& c, int layer, const TpGemm& g, collectives::Op op,
                 bool comm_first, int after);
/// Fused attention forward or backward with its context-parallel exchange; returns the node ending both.
int attention_with_cp(TraceWriter& w, int rank, const Communicators& c, int layer, bool backward, int after);
/// Selective recompute of core attention (recompute_modules core_attn): the fused attention forward runs
/// again before its backward. Returns `after` when core attention is not recomputed.
int attention_recompute(TraceWriter& w, int rank, int layer, int after);
/// QKV projection (or MLA's projections) after the input all-gather.
int qkv_forward(TraceWriter& w, int rank, const Communicators& c, int layer, int after);
double attention_forward_flops(const TraceWriter& w, int layer, bool whole_causal = false);
double attention_kernel_span(const TraceWriter& w, int layer, bool whole_causal = false);
/// Whether `layer`'s fused attention runs cuDNN's FP8 kernels (fp8_dot_product_attention in an FP8 layer).
bool fp8_attention(const TraceWriter& w, int layer);
/// Whether `layer`'s attention kernel in this pass computes its whole causal triangle although the layer
/// has a sliding window: cuDNN's FP8 backward (cudnn-frontend's sdpa_benchmark_training results at cuDNN
/// 9.22, gpt_oss on GB200 and GB300, window 128: FP8 backward 1.73 / 6.18 / 23.2 / 90.3 ms at sequence
/// 4k / 8k / 16k / 32k, growing as s^2, where the BF16 one takes 0.47 / 0.91 / 1.82 / 3.69 ms, as s; the
/// FP8 forward grows as s and skips them).
bool attention_window_unskipped(const TraceWriter& w, int layer, bool backward);

// The stack's mechanisms (framework.hpp; docs/model.md "Software stacks").
/// attention_kernel.cpp: the unfused attention core (scores materialised in HBM), forward or backward,
/// nodes named `prefix`.qk, .softmax, ...; returns the last. One pass over a rank's score matrices in bytes.
int unfused_attention(TraceWriter& w, int rank, bool backward, const std::string& prefix, int after);
double unfused_score_bytes(const TraceWriter& w);
/// elementwise_fusion.cpp: extra HBM bytes per element of an unfused chain over the fused kernel (0 when
/// the stack fuses it or torch.compile does), and the kernels the chain launches.
double norm_extra_bytes(const TraceWriter& w, bool backward);
double rope_extra_bytes(const TraceWriter& w, bool backward);
/// How a layer's RoPE runs: one fused kernel, the stack's own eager code (torchtitan), or Megatron's eager
/// RoPE where its fused kernel does not take the model's YaRN attention factor (elementwise_fusion.cpp).
enum class RopePath { fused, stack_eager, megatron_eager };
RopePath rope_path(const TraceWriter& w);
/// HBM bytes per element of the gated FC1 output that clamping the activation's inputs adds (GPT-OSS's
/// swiglu_limit run by Megatron outside its fused activation), and the eager ops it issues.
double activation_clamp_bytes(const TraceWriter& w, bool backward);
int activation_clamp_ops(const TraceWriter& w, bool backward);
double activation_extra_bytes(const TraceWriter& w, bool backward);
double cross_entropy_extra_bytes(const TraceWriter& w, bool backward);
double permute_pass_factor(const TraceWriter& w);
double router_extra_bytes(const TraceWriter& w, double tokens);
enum class ElementWiseChain { norm, rope, activation, cross_entropy };
int element_wise_ops(const TraceWriter& w, ElementWiseChain chain);
/// host_launch.cpp: a dense layer's host issue where no CUDA graph covers it (-1 / 0 s when covered).
enum class DenseHalf { attention, mlp };
double dense_half_host_s(const TraceWriter& w, DenseHalf half, bool backward);
/// Host time of an eager RoPE's ops beyond the one fused kernel (elementwise_fusion.cpp rope_path), at the
/// host's op time factor; 0 with learned positions or a fused RoPE.
double eager_rope_host_s(const TraceWriter& w);
int dense_host_node(TraceWriter& w, int rank, DenseHalf half, bool backward);
int gate_on_dense_host(TraceWriter& w, int node, int host);
/// op_recompute.cpp: torch op-level selective checkpointing (torchtitan): the ops of one half of a dense
/// layer's forward that the policy does not save, run again before its backward.
int op_sac_recompute(TraceWriter& w, int rank, int layer, DenseHalf half, int after);
/// sharded_gathers.cpp: a layer's parameter tensors on one rank (elements; DeepSpeed gathers each), and
/// FSDP2's copy-out (after each all-gather) and copy-in (before each reduce-scatter) bytes.
std::vector<double> layer_parameter_tensors(const TraceWriter& w, int layer, double dense_on_rank);
/// Of a layer's tensors (forward order), those DeepSpeed gathers again between the recomputed forward and
/// the backward: their reuse distance exceeds `max_reuse_distance` elements.
std::vector<double> tensors_gathered_again(const std::vector<double>& tensors, double max_reuse_distance);
double fsdp2_copy_out_bytes(double params, double param_bytes);
double fsdp2_copy_in_bytes(double params, double grad_bytes);

/// A hybrid model's layer (M, *, -, E of its pattern) in the same pieces (mamba_ops.cpp).
LayerPieces hybrid_forward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer);
LayerPieces hybrid_backward_pieces(TraceWriter& w, int rank, const Communicators& c, int layer);

}  // namespace fmsim::workload::detail
