#pragma once
// The host (CPU) side of a MoE block as Megatron-Core runs it: the block runs eagerly (no CUDA graph
// covers the dropless experts, whose row counts change every step), so one CPU thread issues every
// kernel of it, op by op, and the dropless alltoall dispatcher stops that thread once per layer and
// forward pass until the GPU has counted the tokens per expert (a device-to-host copy: the all-to-all's
// split sizes must be known on the host). After that sync the GPU runs no further ahead than the host
// issues, so a block whose kernels are short (micro-batch 1, small experts, many local experts) is
// paced by its host time rather than its GPU time. docs/model.md "MoE host issue path".
#include "fmsim/workload/parallelism.hpp"

namespace fmsim::workload {

/// Host time of one eager PyTorch op that launches a kernel: Python, the ATen dispatcher, autograd
/// bookkeeping and cudaLaunchKernel, 5-25 us per op on current CPUs (jiahuanglin.xyz "From PyTorch op to
/// kernel launch": ~1 us Python, ~1 us pybind, 1-3 us autograd, 1-2 us dispatcher, 1-5 us backend,
/// 1-3 us cudaLaunchKernel); the low-middle of that range.
inline constexpr double kEagerOpHost_s = 10e-6;
/// Host time of one GEMM launch inside Transformer Engine's grouped GEMM, which loops over the local
/// experts in C++ and issues one cuBLASLt GEMM per expert (te_general_grouped_gemm): the backend and
/// driver layers of the op above, without Python, dispatcher or autograd (1-5 us + 1-3 us).
inline constexpr double kExpertGemmLaunchHost_s = 4e-6;
/// Host time of one call of a Transformer Engine module (Linear, LayerNormLinear, GroupedLinear,
/// DotProductAttention) through Megatron's wrapper: its Python (recipe state, quantizers, checks) beside
/// the kernels it launches. TransformerEngine pull request #1191 measured Megatron-Core's
/// TEColumnParallelLinear at 140 us per forward, 115 us after that pull request (BF16, TP1, x86 host).
/// On Grace, TransformerEngine issue #2053 measured a plain te.Linear at 90-100 us of CPU per forward
/// (GH200/GB200): within this figure, so Grace hosts keep it (only their eager ops take the instance's
/// host_op_time_factor; the two figures come from different harnesses, so that split is an assumption).
/// Backward (the module's autograd function) is taken to cost the same.
inline constexpr double kTeModuleHost_s = 115e-6;
/// The dispatcher's device-to-host copy of the split sizes and the stream synchronisation that waits
/// for it (tokens_per_expert .to("cpu") then cuda_sync_point "before_ep_alltoall"): a PCIe/C2C round
/// trip plus waking the blocked host thread and its next launch reaching the GPU, about 10-20 us
/// (cudaMemcpy D2H latency ~5-10 us plus the launch latency of the next kernel).
inline constexpr double kMoeD2hSync_s = 15e-6;

/// Host time of replaying one captured CUDA graph, in eager-op units: cudaGraphLaunch plus the graphed
/// callable's copy of its inputs into the graph's static buffers (Transformer Engine's
/// make_graphed_callables), about two eager ops.
inline constexpr double kGraphReplayEagerOps = 2;

/// Host time of an eagerly issued MoE layer per unit of the op-count estimate above (every MoeHostOps of a
/// MoE layer: its attention half and its MoE block). The op counts take each kernel-launching op at a
/// PyTorch op's published cost, but Megatron's MoE layer runs far more Python per kernel: TE's
/// GroupedLinear loops over the local experts in Python some ten times per call (quantizer usage, splits,
/// saved tensors, main-grad hooks; transformer_engine/pytorch/module/grouped_linear.py at v2.9) with
/// 2 x num_gemms allocations (TransformerEngine issue #1499), and the alltoall dispatcher's split sizes
/// are turned into Python lists each layer. Measured: the same Qwen3-30B-A3B layer on 8 B200 at
/// micro-batch 1 runs 4.6 ms per layer and micro-batch with static shapes under a full-layer CUDA graph
/// (Megatron-Bridge 25.09 token-drop row, enable_cuda_graph) and 8.8 ms dropless and eager (25.11 and
/// 26.02 rows): the eager layer is host-bound. With the op-count estimate at 2.2 ms per layer and
/// micro-batch the host takes 4.0 times the estimate; the H100 row of the same model (26.02.01, no CUDA
/// graphs, 9.4 ms per layer and micro-batch) agrees within 2 %. docs/model.md "MoE host issue path".
inline constexpr double kMoeEagerHostScale = 4.0;

/// The steps of a MoE block that issue kernels (moe_ops.cpp).
enum class MoeStep { route, dispatch, experts, combine, unpermute };

/// Kernels one step issues on the host: eager PyTorch ops (each kEagerOpHost_s) and per-expert GEMM
/// and quantisation launches inside the grouped GEMMs (each kExpertGemmLaunchHost_s).
struct MoeHostOps {
  double eager_ops = 0;
  double te_modules = 0;  ///< Transformer Engine module calls (each kTeModuleHost_s)
  double expert_launches = 0;
  /// Ops of a plain PyTorch expression with no module Python around it (Megatron's per-expert bias add,
  /// a list comprehension of tensor ops): each at kEagerOpHost_s, without kMoeEagerHostScale.
  double plain_ops = 0;
  /// The host's time per eager op relative to the x86 hosts these constants come from (the instance's
  /// host_op_time_factor: Grace 2.75). It scales the eager ops, the grouped GEMMs' launches and the plain
  /// ops; the Transformer Engine modules keep kTeModuleHost_s (a GB200 te.Linear measured within it).
  double eager_scale = 1.0;
  double seconds() const {
    return kMoeEagerHostScale * (eager_scale * (eager_ops * kEagerOpHost_s + expert_launches * kExpertGemmLaunchHost_s) +
                                 te_modules * kTeModuleHost_s) +
           eager_scale * plain_ops * kEagerOpHost_s;
  }
};

/// Megatron-Core's op counts per step with the router and permutation fusions of the Megatron-Bridge MoE
/// recipes (moe_router_fusion, moe_permute_fusion), from token_dispatcher.py / router.py / experts.py:
/// route forward: gate GEMM, fused top-k with score function, aux-loss scores, tokens per expert, aux
/// loss, routing-map sum, EP all-gather of the counts, two split sums, two copies to the host, fused
/// permute (row-id map and permute); the flex dispatcher (DeepEP/HybridEP) permutes after its dispatch
/// and computes its layout instead. The experts are two TEGroupedLinear calls (FC1, FC2: one TE module
/// each, forward and backward), the activation and the reorder by local expert and back; inside the
/// grouped GEMMs per local expert one GEMM forward, two backward (dgrad, wgrad), plus with FP8 one
/// quantisation per expert forward and one backward.
MoeHostOps moe_host_ops(MoeStep step, bool backward, MoeDispatcher dispatcher, int local_experts, bool low_precision);

/// The attention half of a MoE layer (not CUDA-graphed in the recipes that run the dispatcher's sync):
/// three TE modules (LayerNormLinear QKV, DotProductAttention, Linear projection) and three eager ops
/// (RoPE, the residual add, the pre-MLP norm), forward or backward.
MoeHostOps attention_host_ops();

/// A step's host ops under the CUDA-graph scope (parallelism.hpp CudaGraphScope): the router and the
/// preprocess each replay as one graph where captured, the whole block where "moe" is captured, nothing
/// under a full-iteration graph; uncaptured steps keep their eager ops.
MoeHostOps graphed_moe_host_ops(const CudaGraphScope& graphs, MoeStep step, bool backward, MoeHostOps eager);

/// Host seconds of a MoE layer's attention half (forward or backward) under the CUDA-graph scope, on a
/// host whose eager ops take `eager_scale` times the x86 figure.
double moe_layer_attention_host_s(const CudaGraphScope& graphs, double eager_scale = 1.0);

/// Whether the dispatcher stops the host once per forward pass of a layer: Megatron's dropless alltoall
/// dispatcher whenever EP > 1 or more than one local expert (cuda_sync_point "before_ep_alltoall",
/// preprocess in token_dispatcher.py); DeepEP's dispatch waits on the host for the received counts per
/// expert (moe_received_counter) before the experts can run. fmsim models dropless routing only.
bool moe_dispatch_syncs_host(MoeDispatcher dispatcher, int ep, int local_experts);

}  // namespace fmsim::workload
