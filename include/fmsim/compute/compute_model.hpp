#pragma once
// The time of one kernel on one GPU, from its FLOPs, bytes moved, shape and precision. Shared by
// training and serving. Constants are here, once, with their sources; docs/model.md explains the model.
#include "fmsim/hardware/catalog.hpp"

namespace fmsim::compute {

enum class MathPrecision { bf16, fp8, fp4 };

/// Bytes per GEMM operand element at a precision (FP4: NVFP4 values plus one FP8 scale per 16).
double operand_bytes(MathPrecision precision);

/// Launch and prologue/epilogue cost of one GEMM kernel: the gap between 2048^3 FP8 GEMM time measured
/// on H100 (17.0 us at 1011 TFLOPS) and its compute time at the peak efficiency (12.9 us); calibration
/// hw-azure-nd_h100_v5-microbench. Also predicts 1024^3 (7.2 us vs 7.8 measured).
inline constexpr double kGemmFixedOverhead_s = 4.0e-6;

/// Launch cost of a memory-bound kernel (norm, activation, cast): typical CUDA kernel launch latency
/// when kernels are queued back to back (estimate, docs/model.md).
inline constexpr double kMemoryKernelOverhead_s = 2.0e-6;

/// Fused (flash) attention efficiency, fraction of BF16 dense peak, causal, head dim 128, long
/// sequences. Hopper/Blackwell: cuDNN/FlashAttention-3 forward ~0.62, backward ~0.50 (Shah et al. 2024,
/// FlashAttention-3, figs. 5-7: 600-740 TFLOPS forward, ~500-550 backward on H100). Ampere:
/// FlashAttention-2 0.70 / 0.55 (Dao 2023, fig. 4-5: up to 73 % forward, ~63 % backward on A100).
/// (The FA2 figures in calibration hw-azure-nd_h100_v5-microbench, 0.33, are for FA2 on Hopper, which
/// Megatron's Transformer Engine does not use.)
double attention_efficiency(int sm_version, bool backward);

/// FLOPs a fused attention backward kernel executes, as a multiple of the forward's: five matmuls
/// (S = QK^T recomputed, dV, dP, dQ, dK) against the forward's two. The efficiencies above are quoted
/// on this count (FlashAttention's benchmarks/benchmark_flash_attention.py: bwd = 2.5 x fwd FLOPs), not
/// on the model-FLOPs count of MFU (backward = 2 x forward).
inline constexpr double kAttentionBackwardFlopsRatio = 2.5;

/// Throughput of an FP8 GEMM with the split accumulator (partial sums promoted to FP32 every few
/// K-steps, CUBLASLT_MATMUL_DESC_FAST_ACCUM off) relative to fast accumulation. Hopper's FP8 tensor cores
/// accumulate at reduced precision, so cuBLAS adds the promotion work there: fast accumulation is
/// "a 1.1x to 1.2x speedup" (pytorch/ao issue #2377, H100 benchmark; torchao and Transformer Engine use
/// the split accumulator for the dgrad and wgrad GEMMs only). 1/1.15 on Hopper; Blackwell's tensor cores
/// accumulate FP8 in FP32 and have no fast mode (NVIDIA/TransformerEngine PR #2748 review: "there is no
/// fastAccuMode for sm100"), so 1 there.
double fp8_split_accumulator_efficiency(int sm_version);

/// SMs a TP communication kernel holds while it overlaps a GEMM (Transformer Engine userbuffers,
/// MEGATRON-NOTES.md section 4: "communication gets 16 SMs by default").
inline constexpr int kOverlapCommSms = 16;

struct GemmShape {
  double m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * m * n * k; }
};

class ComputeModel {
 public:
  explicit ComputeModel(const hardware::GpuSpec& gpu) : gpu_(gpu) {}

  double peak_flops(MathPrecision precision) const;
  /// GEMM time: the best of a few tile shapes (wave quantization over the SMs) at the GPU's peak
  /// efficiency, or the HBM time of its operands if longer, plus the fixed overhead. `sms_taken` SMs
  /// are busy with an overlapped communication kernel; `split_accumulator`: an FP8 GEMM without fast
  /// accumulation (fp8_split_accumulator_efficiency).
  double gemm_s(const GemmShape& shape, MathPrecision precision, int sms_taken = 0, bool split_accumulator = false) const;
  /// Fused attention (always BF16 in Megatron recipes, FP8 or not).
  double attention_s(double flops, bool backward) const;
  /// A memory-bound kernel moving `bytes` through HBM.
  double memory_s(double bytes) const;
  const hardware::GpuSpec& gpu() const { return gpu_; }

 private:
  const hardware::GpuSpec& gpu_;
};

}  // namespace fmsim::compute
