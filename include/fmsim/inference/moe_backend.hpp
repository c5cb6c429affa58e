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

/// What a backend changes in a MoE block per iteration on each GPU. The block's routed experts take
///   fixed_s + max(gemm_slowdown x tensor-core time, operands' HBM time,
///                 weight bytes of the active experts / (HBM bandwidth x weight_stream_fraction))
/// fixed_s: the kernels around the GEMMs that do not scale with the batch (routing and top-k, activation
/// quantization, the expand/permute and finalize launches, the grouped GEMMs' problem set-up), measured
/// at one token; weight_stream_fraction: the share of HBM bandwidth at which the backend streams the
/// active experts' weights when the batch is small enough to be weight-bound (0 = not limited beyond the
/// GEMMs' own model); gemm_slowdown: how much longer its grouped GEMMs take than the dense GEMM model's
/// tiles and waves (compute::ComputeModel) at prefill sizes, where they are compute-bound.
struct MoeBackendCosts {
  double fixed_s = 0;
  double weight_stream_fraction = 0;
  double gemm_slowdown = 1;
};

/// TensorRT-LLM tech blog 24 ("MoE as Dense GEMM", docs/source/blogs/tech_blog/blog24_MoE_as_Dense_GEMM.md),
/// per-rank MoE module latency on one B200, NVFP4, DeepSeek-V3 at TP 8 (256 experts, top 8, hidden 7168,
/// intermediate 256 per rank; router GEMM, top-k and quantization included). CUTLASS column:
/// 351.98-368.12 us at 256-384 tokens, where every expert is active (793 MB with the NVFP4 scales): with
/// the fixed part below, 2.85-3.03 TB/s, 0.37 of B200's 8 TB/s; 96.77 us at one token, whose 8 experts'
/// 24.8 MB stream in 8 us at that rate: fixed 88 us.
inline constexpr double kCutlassMoeFixed_s = 88e-6;
inline constexpr double kCutlassMoeWeightStreamFraction = 0.37;
/// CUTLASS's fused MoE (flashinfer's cutlass_fused_moe, the TensorRT-LLM kernels) at prefill sizes, against
/// fmsim's grouped GEMM of the same shapes: flashinfer pull request 5332 (H100 NVL, FP8 per-tensor, CUDA
/// graphs): 719.9 and 1301.6 us at 4,096 and 8,192 tokens of a 256-expert top-8 model (hidden 2048,
/// intermediate 512), 2.2x and 2.7x; 2166.1 us at 8,192 tokens of Nemotron's 128-expert top-6 ReLU^2
/// MoE (hidden 2688, intermediate 1856), 2.2x. SGLang pull request 40105 (B300, NVFP4 W4A4, DeepSeek-V3's
/// 32 local experts of EP 8): 715.8 us at 16,384 tokens, where the GEMMs are compute-bound, 2.2x beyond
/// the fixed part (432.9 us at 8,192 tokens, at the weight-stream floor above within 10 %).
inline constexpr double kCutlassMoeGemmSlowdown = 2.2;
/// The same table's TRTLLM-Gen column: 172.17-186.92 us at 256-384 tokens (793 MB in 150-165 us:
/// 4.8-5.3 TB/s, 0.64), 26.78 us at one token (24.8 MB in 5 us: fixed 22 us).
inline constexpr double kTrtllmGenMoeFixed_s = 22e-6;
inline constexpr double kTrtllmGenMoeWeightStreamFraction = 0.64;
/// flashinfer's MoE API design note (docs/design_docs/flashinfer_moe_api.md, B200, NVFP4, DeepSeek-V3's
/// 256 experts at EP 1): TRTLLM-Gen 4.613 ms at 16,384 tokens, 1.37x fmsim's grouped GEMM.
inline constexpr double kTrtllmGenMoeGemmSlowdown = 1.37;
/// vLLM's fused_moe Triton kernel on one H100, Qwen3-30B-A3B with FP8 W8A8 (128 experts, top 8, hidden
/// 2048, intermediate 768), vLLM pull request 24700's benchmark_moe.py rows (routing, both GEMMs and the
/// activation, in a CUDA graph): 40.4-44.5 us at batch 1, whose 8 experts' 37.7 MB stream in 11 us at
/// 3.35 TB/s: fixed 30 us; 247.7-273.7 us at batch 128, every expert active (604 MB): 2.5-2.8 TB/s
/// beyond the fixed part, 0.78 of 3.35 TB/s (Mixtral's wider experts stream at up to 0.95 in the same PR).
inline constexpr double kTritonMoeFixed_s = 30e-6;
inline constexpr double kTritonMoeWeightStreamFraction = 0.78;
/// vLLM pull request 54742 (H100 NVL, Qwen3-30B-A3B in BF16, decode and prefill): fused_moe_kernel is
/// 53-59 % of the device time against 15-22 % for the dense cuBLASLt GEMMs, with about twice their FLOPs:
/// 1.2-2.0x slower per FLOP, taken as 1.5. (The same kernel in FP8 runs further below: 2.3-5.2x fmsim's
/// grouped GEMM at 1,024-4,096 tokens of Qwen3-30B-A3B in pull request 24700, untuned; Mixtral's wide
/// BF16 experts 1.3x at 1,536 tokens, routing included.)
inline constexpr double kTritonMoeGemmSlowdown = 1.5;

MoeBackendCosts moe_backend_costs(MoeBackend backend);

/// The scenario names, in the order of the enum ("grouped_gemm", "cutlass", "trtllm_gen", "triton").
const std::vector<std::string>& moe_backend_names();
std::string to_string(MoeBackend backend);
MoeBackend moe_backend_from_name(const std::string& name);

/// One of a MoE block's grouped GEMMs under a backend: `grouped` (its parts as compute::ComputeModel
/// prices them, at the model's in-step rate) with the backend's GEMM slowdown and weight-streaming floor;
/// `weight_bytes`: this GEMM's weights of the experts the batch activates on this GPU; `hbm_bandwidth_Bps`:
/// the GPU's. The block adds the backend's fixed_s once (moe_experts_s).
double moe_grouped_gemm_s(const MoeBackendCosts& costs, const compute::GemmParts& grouped, double weight_bytes, double hbm_bandwidth_Bps);
/// The routed experts of one MoE block: fixed_s plus each of its grouped GEMMs (moe_grouped_gemm_s).
double moe_experts_s(const MoeBackendCosts& costs, const std::vector<compute::GemmParts>& gemms, const std::vector<double>& weight_bytes,
                     double hbm_bandwidth_Bps);

}  // namespace fmsim::inference
