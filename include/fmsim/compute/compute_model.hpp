#pragma once
// The time of one kernel on one GPU, from its FLOPs, bytes moved, shape and precision. Shared by
// training and serving. Constants are here, once, with their sources; docs/model.md explains the model.
#include "fmsim/hardware/catalog.hpp"

namespace fmsim::compute {

enum class MathPrecision { bf16, fp8, fp4 };

/// Bytes per GEMM operand element at a precision (FP4: NVFP4 values plus one FP8 scale per 16).
double operand_bytes(MathPrecision precision);

/// Launch cost of one GEMM kernel (launch, tile scheduling, the last wave's drain), fit with each GPU's
/// per-tile cost (GpuSpec::gemm_tile_k_overhead: the pipeline fill and epilogue every output tile pays)
/// to the cuBLASLt FP8 microbenchmark series of calibration hw-azure-nd_h100_v5-microbench and
/// hw-azure-nd_h200_v5-microbench: 1024^3 to 32768^3 and three odd shapes within 3.4 % (H100) and 3.0 %
/// (H200) mean absolute error. (Before the per-tile cost, 4 us alone closed the 2048^3 gap and left
/// 4096^3 and 8192^3 5-7 % fast.)
inline constexpr double kGemmFixedOverhead_s = 3.0e-6;

/// Launch cost of a memory-bound kernel (norm, activation, cast): typical CUDA kernel launch latency
/// when kernels are queued back to back (estimate, docs/model.md).
inline constexpr double kMemoryKernelOverhead_s = 2.0e-6;

/// Fused (flash) attention efficiency, fraction of the BF16 dense peak, head dim 128, as a function of
/// `mean_span`, the keys one query attends to within the kernel (causal: about seq/2). Two costs below
/// the asymptote: each thread block pays a fixed prologue/epilogue worth kAttentionSpanOverhead keys of
/// its loop, and the causal diagonal costs kAttentionCausalDiagonalKeys / 2 keys per query:
///   e(L) = e_max x L / (L + kAttentionSpanOverhead) / (1 + kAttentionCausalDiagonalKeys / (2 L)).
/// Hopper/Blackwell e_max: forward 0.663, set with the overhead from FlashAttention-3 on H100
/// (Shah et al. 2024, fig. 5, head dim 128: non-causal 472 TFLOPS at seq 512 and 648 at 16k, causal
/// 521 / 579 / 602 / 616 from 2k to 16k); backward e_max 0.535, the FA3 backward/forward ratio at long
/// sequences (~500 against ~620). Transformer Engine runs cuDNN's kernels on Hopper and later (it
/// disables FlashAttention there "for performance reasons", dot_product_attention/utils.py at v2.9);
/// cuDNN 9.19 on H200 runs 4-9 % above this curve at long sequences (the H100 training rows, on the
/// older cuDNN of their containers, were calibrated with it), and its causal kernels fall behind
/// non-causal ones at short sequences more than FA3's did (kAttentionCausalDiagonalKeys).
/// Ampere: FlashAttention-2 on A100, 0.75 / 0.59 (Dao 2023, figs. 4-5: up to 73 % forward, ~63 % backward).
/// `mean_span` <= 0: a long sequence (e_max). (The FA2 figures in calibration
/// hw-azure-nd_h100_v5-microbench, 0.33, are FA2 on Hopper, which Transformer Engine does not use.)
/// `steps`: the kernel steps a query's keys are split over (context parallelism); the causal diagonal is
/// in one of them, so its cost counts over mean_span x steps keys while the span overhead is per step.
double attention_efficiency(int sm_version, bool backward, double mean_span, int steps = 1);

/// FlashAttention-2's asymptotic efficiency on Hopper and later (PyTorch SDPA's flash backend, which is
/// FA2 and not FA3 there), forward / backward, fraction of the BF16 dense peak. Forward: 327.9 TFLOPS in
/// calibration hw-azure-nd_h100_v5-microbench ("Flash Attention 2.0", head dim 128, batch 2, seq 8192),
/// read as causal with 4,096 keys per query, i.e. 0.331 of 989 TFLOPS at that span's factor 0.909 of the
/// curve above -> 0.364. Backward: FA2's backward/forward ratio on A100 (0.59 / 0.75, Dao 2023), 0.286.
/// On Ampere FA2 is the fused kernel already (same curve).
inline constexpr double kFlash2HopperForward = 0.364;
inline constexpr double kFlash2HopperBackward = 0.286;
/// The same curve as attention_efficiency with FlashAttention-2's asymptote.
double flash2_attention_efficiency(int sm_version, bool backward, double mean_span, int steps = 1);

/// Keys of the attention loop that one thread block's fixed cost is worth (fitted with e_max above to
/// the FA3 curve: non-causal seq 512 runs at 0.71 of its 16k speed).
inline constexpr double kAttentionSpanOverhead = 208.0;
/// What the causal mask costs, in keys per query x 2: the 128-key diagonal tile runs whole (64 wasted
/// keys per query), the masked tiles cost more than open ones, and causal query tiles carry uneven work
/// (1 to s/128 key tiles), which leaves the last wave of a short sequence partly idle. Fitted to
/// cuDNN-frontend's sdpa_benchmark_training (benchmarks/calibration/published_cudnn_sdpa.json: causal
/// against no-mask on H200, GB200 and GB300, seq 2,048-32,768): best fit 368, taken as 384 (three
/// tiles). There causal runs 17-30 % below no-mask at seq 2k, 9-19 % at 4k and up to 11 % at 8k, of which
/// the span overhead above explains about 9, 5 and 2 % and a single half-tile (128) another 3, 2 and 1 %.
/// It also prices a sliding window's banded kernel (GPT-OSS's window of 128 on GB200, seq 2k-16k:
/// 153-167 TFLOPS measured, about 172 modelled; 292 with the half tile).
inline constexpr double kAttentionCausalDiagonalKeys = 384.0;

/// Head dimension: per query-key pair a fused attention kernel does 4 x head_dim FLOPs of matrix products
/// but one exponential and the online-softmax rescaling, on units that do not scale with head_dim; below
/// 128 that fixed per-pair cost is a larger share. With the fixed cost worth d0 of head dim, of which
/// d_exp is the exponential (the SFU's MUFU.EX2), running at `exp_rate` times Blackwell's rate:
///   f(d) = d (128 + d0) / (128 (d + d0 - d_exp (1 - 1 / exp_rate))),  d <= 128,
/// relative to head dim 128 at exp_rate 1. d0 from cuDNN's fused attention on H100 (FlashAttention-3
/// paper, Shah et al. 2024, fig. 5-6, BF16, seq 16k, cuDNN series): forward 413 TFLOPS at head dim 64
/// against 595 at 128 (0.694 -> d0 = 101), backward 433 against 518 (0.836 -> d0 = 31). cuDNN-frontend's
/// sdpa_benchmark_training on H200 agrees (GPT-OSS's shape, head dim 64: 310-358 forward, 264-303
/// backward, against 484-688 and 370-581 for Llama 3.1's head dim 128).
inline constexpr double kAttentionHeadDimOverheadForward = 101.0;
inline constexpr double kAttentionHeadDimOverheadBackward = 31.0;
/// The exponential's share of d0 (d_exp above): Blackwell Ultra doubles the SFU's exponential rate
/// (GpuSpec::attention_exp_rate), and cuDNN's kernels on GB300 run 1.12-1.26x (forward) and 1.06-1.22x
/// (backward) GB200's at identical shapes (benchmarks/calibration/published_cudnn_sdpa.json, head dims
/// 128 and 192/128, seq 2k-32k; same datasheet BF16 peak): the fit over all rows gives 76 of the
/// forward's 101 and all 31 of the backward's (the backward recomputes P = exp(S - LSE), one
/// exponential per pair, and its other per-pair work is elementwise on the same units).
inline constexpr double kAttentionExpShareForward = 76.0;
inline constexpr double kAttentionExpShareBackward = 31.0;
/// Above head dim 128 the forward keeps its efficiency (cuDNN-frontend: DeepSeek-V3's 192/128 and
/// Qwen3.5's 256 run at Llama 3.1's 128 within a few percent on GB200 and GB300), but the backward's
/// dQ/dK/dV accumulators force smaller tiles: per FLOP it runs 1 / (1 + slope x (d - 128) / 128) of head
/// dim 128's rate, slope fitted to DeepSeek-V3's and Kimi K2.6's MLA shapes (192/128, d = 160) on GB200
/// and GB300 (backward 0.42-0.48 of peak on GB200 against 0.49-0.56 for head dim 128).
inline constexpr double kAttentionWideHeadBackwardSlope = 0.6;
/// f(d) above (and the wide-head backward term); `head_dim` <= 0 (not known): 1 at exp_rate 1.
double attention_head_dim_factor(bool backward, double head_dim, double exp_rate = 1.0);
/// cuDNN's FP8 attention (Megatron fp8_dot_product_attention), as a multiple of the BF16 kernel's time at
/// `mean_span` keys per query. Forward: its two matmuls per query-key pair run at the FP8 rate, so the
/// matmul part of f(d)'s per-pair cost (d) halves while the fixed part (d0, with the exponential) stays,
///   r = (d / 2 + d0 - d_exp (1 - 1 / exp_rate)) / (d + d0 - d_exp (1 - 1 / exp_rate)),  d <= 128,
/// and the per-row prologue and epilogue (kAttentionSpanOverhead keys' worth) do not speed up:
///   (r L + 208) / (L + 208).
/// cudnn-frontend's sdpa_benchmark_training results (cuDNN 9.22, per-tensor FP8 against BF16, causal,
/// seq 2k-8k): Llama 3.1 (d 128) 0.78 on GB200 (this 0.75-0.77) and 0.67-0.70 on GB300 (0.69-0.71);
/// GPT-OSS's window of 128 (d 64) 0.93 on GB200 (0.93) and 0.83 on GB300 (0.90). cuDNN's MXFP8 kernels
/// run 0.03-0.08 slower than per-tensor FP8 (not modelled: Transformer Engine's choice between them under
/// an MXFP8 recipe was not read). Backward: 1 (BF16's time). At training lengths it gains nothing:
/// 0.92-1.06 of BF16's time at seq 2k-8k on GB200 and 0.81-1.02 on GB300 for Llama 3.1 (P, dP and dS are
/// quantized per pair, with their amaxes), 0.69-0.81 only at 16k-32k.
double attention_fp8_time_factor(bool backward, double head_dim, double exp_rate = 1.0, double mean_span = 0);

/// FLOPs a fused attention backward kernel executes, as a multiple of the forward's: five matmuls
/// (S = QK^T recomputed, dV, dP, dQ, dK) against the forward's two. The efficiencies above are quoted
/// on this count (FlashAttention's benchmarks/benchmark_flash_attention.py: bwd = 2.5 x fwd FLOPs), not
/// on the model-FLOPs count of MFU (backward = 2 x forward).
inline constexpr double kAttentionBackwardFlopsRatio = 2.5;
/// FP4 GEMMs inside a model's step run at this fraction of a single cuBLASLt FP4 GEMM's rate (the
/// microbenchmark behind gemm_fp4_peak_efficiency), in training and in serving alike. Set in training
/// from the measured NVFP4 / MXFP8 throughput ratio at identical layouts in one release (Megatron-Bridge
/// 26.04, Llama 3 70B TP2 PP4 VP5 on GB200: 1.28; TP1 PP4 VP5 on GB300: 1.56; with the single-GEMM rate,
/// GB200 FP4 at 77 % of peak (calibration hw-azure-nd-gb200-v6-microbench), fmsim's ratio was 1.71 and
/// 2.0). Checked, not set, on serving: TensorRT-LLM's NVFP4 checkpoints on B200 and GB200 (calibration
/// inf-trtllm-*-fp4, 30 dense rows from prefill-bound 2048/128 to decode-bound 128/4096) were uniformly
/// +30 % fast at the single-GEMM rate and land at 4.5 % mean absolute error with it (docs/validation.md).
/// The mechanism behind it (power draw at the FP4 rate, block-scale handling and activation quantization
/// around each GEMM) is not separated (docs/model.md).
inline constexpr double kFp4ModelGemmRate = 0.58;
/// The rate of kFp4ModelGemmRate for FP4 math, 1 otherwise.
inline constexpr double model_gemm_rate(MathPrecision precision) {
  return precision == MathPrecision::fp4 ? kFp4ModelGemmRate : 1.0;
}

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

/// CTAs (each an SM of its own: NCCL CTAs do not share an SM with compute kernels, NVIDIA/nccl issue
/// #1656) of NCCL's send/recv kernel for an all-to-all under default settings: a grid of 16
/// (all_to_all_single, NVIDIA/nccl issue #1598). The alltoall dispatcher's all-to-alls take these from
/// the compute they overlap.
inline constexpr int kNcclAllToAllSms = 16;

struct GemmShape {
  double m = 0, n = 0, k = 0;
  double flops() const { return 2.0 * m * n * k; }
};

/// A GEMM kernel's time in its parts: the tensor cores' waves, the HBM time of its operands, and the
/// fixed launch overhead; the kernel takes max(compute_s, memory_s) + overhead_s.
struct GemmParts {
  double compute_s = 0, memory_s = 0, overhead_s = 0;
  double total_s() const { return (compute_s > memory_s ? compute_s : memory_s) + overhead_s; }
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
  /// One grouped GEMM kernel over `groups` problems of the same shape (a MoE layer's experts in a
  /// serving engine: TensorRT-LLM's CUTLASS MoE GEMM, vLLM's and SGLang's fused_moe): the tiles of every
  /// group share the waves over the SMs, and the HBM time is that of all groups' operands; one fixed
  /// overhead. `groups` may be fractional (an expected count of active experts). With one group it is
  /// gemm_s.
  double grouped_gemm_s(double groups, const GemmShape& shape, MathPrecision precision) const;
  /// grouped_gemm_s in its parts, for kernels whose tensor-core rate differs from the dense GEMM's
  /// (a serving engine's fused MoE kernels, inference/moe_backend.hpp).
  GemmParts grouped_gemm_parts(double groups, const GemmShape& shape, MathPrecision precision) const;
  /// Fused attention (BF16 unless `fp8`: cuDNN's FP8 kernels, attention_fp8_time_factor); `mean_span`:
  /// keys per query in the kernel (attention_efficiency); `sms_taken` SMs held by a communication kernel
  /// beside it slow it in proportion.
  double attention_s(double flops, bool backward, double mean_span, int sms_taken = 0, bool flash2 = false,
                     double head_dim = 0, int steps = 1, bool fp8 = false) const;
  /// A memory-bound kernel moving `bytes` through HBM.
  double memory_s(double bytes) const;
  const hardware::GpuSpec& gpu() const { return gpu_; }

 private:
  GemmParts gemm_parts(double groups, const GemmShape& shape, MathPrecision precision, int sms_taken, bool split_accumulator) const;
  const hardware::GpuSpec& gpu_;
};

}  // namespace fmsim::compute
