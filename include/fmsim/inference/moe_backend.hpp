#pragma once
// The MoE kernels a serving engine runs (its "MoE backend"): what one MoE block costs beyond the grouped
// expert GEMMs' own tile time. docs/model.md, "Serving", "MoE backends", explains the model.
#include <string>
#include <vector>

#include "fmsim/compute/compute_model.hpp"

namespace fmsim::inference {

/// grouped_gemm: the experts' GEMMs at the dense GEMM's efficiency and nothing more (DeepGEMM-class
/// kernels, as SGLang runs DeepSeek-V3: DeepGEMM's README gives its grouped contiguous GEMMs 0.95-1.04x
/// the dense GEMMs of the same shapes on H800). cutlass: TensorRT-LLM's CUTLASS fused MoE, the default
/// MoeConfig.backend of its PyTorch flow through v1.x ("CUTLASS", tensorrt_llm/llmapi/llm_args.py).
/// trtllm_gen: TensorRT-LLM's TRTLLM-Gen MoE kernels (MoeConfig.backend "TRTLLM", Blackwell only).
/// triton: vLLM's fused_moe Triton kernel, its default for BF16 and FP8 MoE models.
enum class MoeBackend { grouped_gemm, cutlass, trtllm_gen, triton };

/// What a backend changes in a MoE block per iteration on each GPU. Each of the block's grouped GEMMs takes
///   max(gemm_slowdown x tensor-core time, operands' HBM time,
///       its weight bytes of the active experts / (HBM bandwidth x weight_stream_fraction))
/// and the block fixed_s once. fixed_s: the module's latency that does not scale with the batch, measured
/// at one token: routing and top-k, activation quantization, the expand/permute and finalize kernels and
/// every launch (the launch overheads fmsim prices separately in the block, its GEMMs' and memory
/// kernels', are inside it and not added again); weight_stream_fraction: the share of HBM bandwidth at
/// which the backend streams the active experts' weights while the batch is weight-bound (0 = no floor
/// beyond the GEMMs' own model: grouped_gemm); gemm_slowdown: how much longer its grouped GEMMs take than
/// the dense GEMM model's tiles and waves (compute::ComputeModel) at prefill sizes, where they are
/// compute-bound.
struct MoeBackendCosts {
  double fixed_s = 0;
  double weight_stream_fraction = 0;
  double gemm_slowdown = 1;
};

/// The constants are set so that this model, with the block's other parts as fmsim prices them (router
/// GEMM, permutation and activation passes, launch overheads), reproduces the published module latencies:
///
/// TensorRT-LLM tech blog 24 ("MoE as Dense GEMM", docs/source/blogs/tech_blog/blog24_MoE_as_Dense_GEMM.md),
/// per-rank MoE module latency on one B200, NVFP4, DeepSeek-V3 at TP 8 (256 experts, top 8, hidden 7168,
/// intermediate 256 per rank: 793 MB of expert weights with the NVFP4 scales, 24.8 MB for the 8 experts
/// of one token; router GEMM, top-k and quantization included, the shared expert not). CUTLASS column:
/// 96.77 us at one token, 335.65-368.12 us at 128-384 tokens (every expert active): fixed 80 us and the
/// weights at 0.39 of HBM bandwidth give 95, 343, 356 and 365 us at 1, 128, 256 and 384 tokens.
inline constexpr double kCutlassMoeFixed_s = 80e-6;
inline constexpr double kCutlassMoeWeightStreamFraction = 0.39;
/// The same kernels with FP8 weights on Hopper stream far better: flashinfer pull request 5332 (H100 NVL,
/// 3.9 TB/s; FP8 per-tensor, CUDA graphs; routing given, not timed): 72.5 us at one token and 326-355 us at
/// 128-512 tokens of a 256-expert top-8 model (hidden 2048, intermediate 512: 805 MB of weights), 81.2 and
/// 449-482 us for Nemotron's 128 experts (hidden 2688, intermediate 1856, ReLU^2: 1.28 GB): beyond a fixed
/// part of about 66 us, 0.75 and 0.83 of HBM bandwidth; 0.80. (With the fixed cost above less its
/// routing, the model gives those shapes' one-token latencies 19-24 % high.) NVFP4's scale factors and
/// B200's 8 TB/s are what the 0.39 above pays for; FP8 and BF16 weights take 0.80.
inline constexpr double kCutlassMoeWeightStreamFractionFp8 = 0.80;
/// CUTLASS's fused MoE at prefill sizes: the tile slowdown for which this model (with fmsim's permutation
/// and activation passes and the fixed cost less its routing) gives the measured module latency.
/// flashinfer pull request 5332 (H100 NVL, priced as H100 SXM; FP8 per-tensor, CUDA graphs; routing
/// given): 719.9 and 1301.6 us at 4,096 and 8,192 tokens of a 256-expert top-8 model (hidden 2048,
/// intermediate 512), 2.08x and 1.94x, and 2166.1 us at 8,192 tokens of Nemotron's 128-expert top-6
/// ReLU^2 MoE (hidden 2688, intermediate 1856), 1.97x. Taken as 2.0. (SGLang pull request 40105, B300
/// NVFP4 W4A4, DeepSeek-V3's 32 local experts of EP 8, 715.8 us at 16,384 tokens, is nearer 1.5x by the
/// plain ratio of module time to grouped GEMM time; not solved for.)
inline constexpr double kCutlassMoeGemmSlowdown = 2.0;
/// The same table's TRTLLM-Gen column: 161.87-186.92 us at 128-384 tokens: fixed 22 us (26.78 us at one
/// token less its experts' weights) and the weights at 0.75 of HBM give 165, 176 and 185 us. At one token
/// the model gives 33 us: its router GEMM and expert GEMMs at one row cost their tile latencies.
inline constexpr double kTrtllmGenMoeFixed_s = 22e-6;
inline constexpr double kTrtllmGenMoeWeightStreamFraction = 0.75;
/// flashinfer's MoE API design note (docs/design_docs/flashinfer_moe_api.md, B200, NVFP4, DeepSeek-V3's
/// 256 experts at EP 1): TRTLLM-Gen 4.613 ms at 16,384 tokens, whose permutation and activation passes
/// fmsim prices at 1.3 ms: the grouped GEMMs at fmsim's dense rate (1.0x).
inline constexpr double kTrtllmGenMoeGemmSlowdown = 1.0;
/// vLLM's fused_moe Triton kernel on one H100, Qwen3-30B-A3B with FP8 W8A8 (128 experts, top 8, hidden
/// 2048, intermediate 768), vLLM pull request 24700's benchmark_moe.py rows (top-k, alignment, both GEMMs,
/// the activation and the sum, in a CUDA graph; no router GEMM): 40.4-44.5 us at batch 1, 247.7-273.7 us at
/// batch 128 (every expert active, 604 MB): fixed 31 us and the weights at 0.80 of HBM give 42 and 260 us.
/// (Mixtral's wider experts stream at up to 0.95 in the same PR.)
inline constexpr double kTritonMoeFixed_s = 31e-6;
inline constexpr double kTritonMoeWeightStreamFraction = 0.80;
/// vLLM pull request 54742 (H100 NVL, Qwen3-30B-A3B in BF16, decode and prefill): fused_moe_kernel is
/// 53-59 % of the device time against 15-22 % for the dense cuBLASLt GEMMs, with about twice their FLOPs:
/// 1.2-2.0x slower per FLOP, taken as 1.5. (The same kernel in FP8 runs further below: at 1,024-4,096
/// tokens of Qwen3-30B-A3B, PR 24700's untuned rows take 1.7-2.4x this model's module; Mixtral's wide BF16
/// experts about 1.3x fmsim's grouped GEMM at 1,536 tokens, routing included.)
inline constexpr double kTritonMoeGemmSlowdown = 1.5;

/// A backend's costs for the experts' weight precision (`fp4_weights`: NVFP4/MXFP4 experts).
MoeBackendCosts moe_backend_costs(MoeBackend backend, bool fp4_weights = true);

/// The scenario names, in the order of the enum ("grouped_gemm", "cutlass", "trtllm_gen", "triton").
const std::vector<std::string>& moe_backend_names();
std::string to_string(MoeBackend backend);
MoeBackend moe_backend_from_name(const std::string& name);

/// One grouped GEMM of a MoE block: its parts as compute::ComputeModel prices them (at the model's in-step
/// rate) and its weight bytes of the experts the batch activates on this GPU.
struct MoeGemm {
  compute::GemmParts parts;
  double weight_bytes = 0;
};

/// The routed experts of one MoE block under a backend: each GEMM at max(slowdown x tiles, HBM, stream
/// floor), plus the backend's fixed cost less `other_launches_s`, the launch overheads of the block's
/// kernels that fmsim prices elsewhere (router GEMM, permutation and activation passes), which the
/// measured fixed cost contains. A backend without a fixed cost (grouped_gemm) keeps each GEMM's own
/// launch overhead. `hbm_bandwidth_Bps`: the GPU's.
double moe_experts_s(const MoeBackendCosts& costs, const std::vector<MoeGemm>& gemms, double hbm_bandwidth_Bps, double other_launches_s = 0);

}  // namespace fmsim::inference
