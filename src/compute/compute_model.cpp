#include "fmsim/compute/compute_model.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::compute {

double attention_efficiency(int sm_version, bool backward, double mean_span, int steps) {
  const double asymptote = sm_version >= 90 ? (backward ? 0.535 : 0.663) : (backward ? 0.59 : 0.75);
  if (mean_span <= 0) return asymptote;
  const double query_keys = mean_span * std::max(steps, 1);
  return asymptote * mean_span / (mean_span + kAttentionSpanOverhead) / (1.0 + kAttentionCausalDiagonalKeys / (2.0 * query_keys));
}

double flash2_attention_efficiency(int sm_version, bool backward, double mean_span, int steps) {
  if (sm_version < 90) return attention_efficiency(sm_version, backward, mean_span, steps);
  const double fused_asymptote = backward ? 0.535 : 0.663;
  const double flash2_asymptote = backward ? kFlash2HopperBackward : kFlash2HopperForward;
  return attention_efficiency(sm_version, backward, mean_span, steps) * flash2_asymptote / fused_asymptote;
}

namespace {

/// The fixed (non-matmul) part of a query-key pair's cost in head-dim units: d0 less what the faster
/// exponential saves (attention_head_dim_factor).
double pair_fixed_cost(bool backward, double exp_rate) {
  const double d0 = backward ? kAttentionHeadDimOverheadBackward : kAttentionHeadDimOverheadForward;
  const double exp_share = backward ? kAttentionExpShareBackward : kAttentionExpShareForward;
  return d0 - exp_share * (1.0 - 1.0 / std::max(exp_rate, 1e-3));
}

/// The head dim the per-pair cost counts: 128 when unknown; above 128 the kernels keep 128's rate, the
/// faster exponential included (cuDNN's head dim 256, Qwen3.5, gains 1.14-1.21x on GB300 over GB200, as
/// head dim 128 does; the formula at d = 256 would give 1.12).
double pair_head_dim(double head_dim) { return head_dim <= 0 ? 128.0 : std::clamp(head_dim, 1.0, 128.0); }

}  // namespace

double attention_head_dim_factor(bool backward, double head_dim, double exp_rate) {
  const double d0 = backward ? kAttentionHeadDimOverheadBackward : kAttentionHeadDimOverheadForward;
  const double d = pair_head_dim(head_dim);
  double factor = d * (128.0 + d0) / (128.0 * (d + pair_fixed_cost(backward, exp_rate)));
  if (backward && head_dim > 128) factor /= 1.0 + kAttentionWideHeadBackwardSlope * (head_dim - 128.0) / 128.0;
  return factor;
}

double attention_fp8_time_factor(bool backward, double head_dim, double exp_rate, double mean_span) {
  if (backward) return 1.0;
  const double d = pair_head_dim(head_dim), fixed = pair_fixed_cost(false, exp_rate);
  const double pair = (d / 2.0 + fixed) / (d + fixed);
  if (mean_span <= 0) return pair;
  return (pair * mean_span + kAttentionSpanOverhead) / (mean_span + kAttentionSpanOverhead);
}

double fp8_split_accumulator_efficiency(int sm_version) { return sm_version == 90 ? 1.0 / 1.15 : 1.0; }

double operand_bytes(MathPrecision precision) {
  switch (precision) {
    case MathPrecision::bf16: return 2.0;
    case MathPrecision::fp8: return 1.0;
    case MathPrecision::fp4: return 0.5 + 1.0 / 16.0;
  }
  return 2.0;
}

double ComputeModel::peak_flops(MathPrecision precision) const {
  if (precision == MathPrecision::fp4 && gpu_.fp4_dense_flops > 0) return gpu_.fp4_dense_flops;
  if (precision != MathPrecision::bf16 && gpu_.fp8_dense_flops > 0) return gpu_.fp8_dense_flops;
  return gpu_.bf16_dense_flops;
}

double ComputeModel::gemm_s(const GemmShape& shape, MathPrecision precision, int sms_taken, bool split_accumulator) const {
  return gemm_parts(1.0, shape, precision, sms_taken, split_accumulator).total_s();
}

double ComputeModel::grouped_gemm_s(double groups, const GemmShape& shape, MathPrecision precision) const {
  return gemm_parts(groups, shape, precision, 0, false).total_s();
}

GemmParts ComputeModel::grouped_gemm_parts(double groups, const GemmShape& shape, MathPrecision precision) const {
  return gemm_parts(groups, shape, precision, 0, false);
}

GemmParts ComputeModel::gemm_parts(double groups, const GemmShape& shape, MathPrecision precision, int sms_taken, bool split_accumulator) const {
  if (groups <= 0 || shape.m <= 0 || shape.n <= 0 || shape.k <= 0) return {};
  const int sms = std::max(1, gpu_.sm_count - sms_taken);
  // Output tiles a CUTLASS/cuBLAS kernel may use; the library picks the fastest (wave quantization).
  // Hopper's warp-specialized kernels compute 128-row tiles (two consumer warpgroups of 64 rows) once the
  // GEMM has 128 rows; a 64-row tile at the full per-SM rate made the 1024^3 and 1024x2145x1024 FP8
  // microbenchmarks 25-40 % fast (docs/model.md). Skinny GEMMs (decode) keep the small tile.
  static constexpr double kTiles[][2] = {{128, 256}, {256, 128}, {128, 128}, {64, 128}};
  const int tile_options = gpu_.sm_version == 90 && shape.m >= 128 ? 3 : 4;
  const double accumulate = split_accumulator && precision == MathPrecision::fp8 ? fp8_split_accumulator_efficiency(gpu_.sm_version) : 1.0;
  // FP4 GEMMs reach their own fraction of the FP4 peak where one was measured (GB200: 76 % against 58 %
  // for FP8, calibration hw-azure-nd-gb200-v6-microbench).
  const double efficiency = precision == MathPrecision::fp4 && gpu_.gemm_fp4_peak_efficiency > 0 ? gpu_.gemm_fp4_peak_efficiency
                                                                                               : gpu_.gemm_peak_efficiency;
  const double per_sm_flops = peak_flops(precision) * efficiency * gpu_.sustained_clock_fraction * accumulate / gpu_.sm_count;
  double best = INFINITY;
  for (int t = 0; t < tile_options; ++t) {
    const auto& tile = kTiles[t];
    const double tiles = std::ceil(groups * std::ceil(shape.m / tile[0]) * std::ceil(shape.n / tile[1]));
    const double waves = std::ceil(tiles / sms);
    // Each wave runs full tiles: the padded work of one tile per SM, plus the tile's fixed pipeline fill
    // and epilogue (gemm_tile_k_overhead, in K elements of the same work).
    const double tile_flops = 2.0 * tile[0] * tile[1] * (shape.k + gpu_.gemm_tile_k_overhead);
    best = std::min(best, waves * tile_flops / per_sm_flops);
  }
  const double element_bytes = operand_bytes(precision);
  const double bytes = groups * ((shape.m * shape.k + shape.k * shape.n) * element_bytes + shape.m * shape.n * 2.0);
  const double memory = bytes / (gpu_.hbm_bandwidth_Bps * gpu_.hbm_achievable_fraction);
  return {best, memory, kGemmFixedOverhead_s};
}

double ComputeModel::attention_s(double flops, bool backward, double mean_span, int sms_taken, bool flash2,
                                 double head_dim, int steps, bool fp8) const {
  if (flops <= 0) return 0.0;
  const double sm_share = static_cast<double>(std::max(1, gpu_.sm_count - sms_taken)) / gpu_.sm_count;
  const double efficiency = flash2 ? flash2_attention_efficiency(gpu_.sm_version, backward, mean_span, steps)
                                   : attention_efficiency(gpu_.sm_version, backward, mean_span, steps);
  // The head-dim factor is cuDNN's on Hopper and later (its source); FlashAttention-2 (Ampere's fused kernel,
  // or PyTorch SDPA's) keeps its own curve.
  const double head_dim_factor = !flash2 && gpu_.sm_version >= 90 ? attention_head_dim_factor(backward, head_dim, gpu_.attention_exp_rate) : 1.0;
  const double fp8_factor = fp8 && !flash2 ? attention_fp8_time_factor(backward, head_dim, gpu_.attention_exp_rate, mean_span) : 1.0;
  return fp8_factor * flops / (gpu_.bf16_dense_flops * gpu_.sustained_clock_fraction * efficiency * head_dim_factor * sm_share) +
         kGemmFixedOverhead_s;
}

double ComputeModel::memory_s(double bytes) const {
  if (bytes <= 0) return 0.0;
  return bytes / (gpu_.hbm_bandwidth_Bps * gpu_.hbm_achievable_fraction) + kMemoryKernelOverhead_s;
}

}  // namespace fmsim::compute
