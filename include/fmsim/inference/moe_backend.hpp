#pragma once
// The MoE kernels a serving engine runs (its "MoE backend"): what one MoE block costs beyond the grouped
// expert GEMMs' own tile time. docs/model.md, "Serving", "MoE backends", explains the model.
#include <string>
#include <vector>

namespace fmsim::inference {

/// grouped_gemm: the experts' GEMMs at the dense GEMM's efficiency and nothing more (DeepGEMM-class
/// kernels, as SGLang runs DeepSeek-V3: DeepGEMM's README gives its grouped contiguous GEMMs 0.95-1.04x
/// the dense GEMMs of the same shapes on H800). cutlass: TensorRT-LLM's CUTLASS fused MoE, the default
/// MoeConfig.backend of its PyTorch flow through v1.x ("CUTLASS", tensorrt_llm/llmapi/llm_args.py).
/// trtllm_gen: TensorRT-LLM's TRTLLM-Gen MoE kernels (MoeConfig.backend "TRTLLM", Blackwell only).
/// triton: vLLM's fused_moe Triton kernel, its default for BF16 and FP8 MoE models.
enum class MoeBackend { grouped_gemm, cutlass, trtllm_gen, triton };

/// What a backend adds to a MoE block per iteration on each GPU. The block's routed experts take
///   fixed_s + max(grouped GEMMs' time, weight bytes of the active experts / (HBM bandwidth x weight_stream_fraction))
/// fixed_s: the kernels around the GEMMs that do not scale with the batch (routing and top-k, activation
/// quantization, the expand/permute and finalize launches, the grouped GEMMs' problem set-up), measured
/// at one token; weight_stream_fraction: the share of HBM bandwidth at which the backend streams the
/// active experts' weights when the batch is small enough to be weight-bound. 0 = not limited beyond the
/// GEMMs' own model (grouped_gemm).
struct MoeBackendCosts {
  double fixed_s = 0;
  double weight_stream_fraction = 0;
};

/// TensorRT-LLM tech blog 24 ("MoE as Dense GEMM", docs/source/blogs/tech_blog/blog24_MoE_as_Dense_GEMM.md),
/// per-rank MoE module latency on one B200, NVFP4, DeepSeek-V3 at TP 8 (256 experts, top 8, hidden 7168,
/// intermediate 256 per rank; router GEMM, top-k and quantization included). CUTLASS column:
/// 351.98-368.12 us at 256-384 tokens, where every expert is active (793 MB with the NVFP4 scales): with
/// the fixed part below, 2.85-3.03 TB/s, 0.37 of B200's 8 TB/s; 96.77 us at one token, whose 8 experts'
/// 24.8 MB stream in 8 us at that rate: fixed 88 us.
inline constexpr double kCutlassMoeFixed_s = 88e-6;
inline constexpr double kCutlassMoeWeightStreamFraction = 0.37;
/// The same table's TRTLLM-Gen column: 172.17-186.92 us at 256-384 tokens (793 MB in 150-165 us:
/// 4.8-5.3 TB/s, 0.64), 26.78 us at one token (24.8 MB in 5 us: fixed 22 us).
inline constexpr double kTrtllmGenMoeFixed_s = 22e-6;
inline constexpr double kTrtllmGenMoeWeightStreamFraction = 0.64;
/// vLLM's fused_moe Triton kernel on one H100, Qwen3-30B-A3B with FP8 W8A8 (128 experts, top 8, hidden
/// 2048, intermediate 768), vLLM pull request 24700's benchmark_moe.py rows (routing, both GEMMs and the
/// activation, in a CUDA graph): 40.4-44.5 us at batch 1, whose 8 experts' 37.7 MB stream in 11 us at
/// 3.35 TB/s: fixed 30 us; 247.7-273.7 us at batch 128, every expert active (604 MB): 2.5-2.8 TB/s
/// beyond the fixed part, 0.78 of 3.35 TB/s. (Mixtral's wider experts stream at up to 0.95 in the same
/// PR; its prefill rows show the kernel's GEMMs below dense efficiency for fine-grained experts, up to
/// 2.9x fmsim's grouped GEMM at 4,096 tokens: not modelled, docs/model.md.)
inline constexpr double kTritonMoeFixed_s = 30e-6;
inline constexpr double kTritonMoeWeightStreamFraction = 0.78;

MoeBackendCosts moe_backend_costs(MoeBackend backend);

/// The scenario names, in the order of the enum ("grouped_gemm", "cutlass", "trtllm_gen", "triton").
const std::vector<std::string>& moe_backend_names();
std::string to_string(MoeBackend backend);
MoeBackend moe_backend_from_name(const std::string& name);

/// The routed experts' time in one MoE block: `grouped_s` (the grouped GEMMs as compute::ComputeModel
/// prices them) under the backend's fixed cost and weight-streaming floor. `active_weight_bytes`: the
/// weights of the experts the batch activates on this GPU; `hbm_bandwidth_Bps`: the GPU's.
double moe_experts_s(const MoeBackendCosts& costs, double grouped_s, double active_weight_bytes, double hbm_bandwidth_Bps);

}  // namespace fmsim::inference
