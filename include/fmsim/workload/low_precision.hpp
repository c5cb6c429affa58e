#pragma once
// Low-precision GEMM recipes (Transformer Engine's FP8 and FP4 recipes as Megatron-Core runs them): the
// HBM traffic of quantizing a GEMM input, the bytes a quantized input kept for the backward pass takes,
// and the bytes per parameter of the weights with their quantized copies.
#include "fmsim/workload/parallelism.hpp"

namespace fmsim::workload {

/// HBM bytes per element that quantizing one BF16 GEMM input moves (both the row-wise copy for the
/// forward or data-gradient GEMM and the column-wise copy for the weight-gradient GEMM, with scales).
/// Per-tensor FP8 (tensorwise, delayed) writes the transpose only where the GPU's FP8 GEMMs take the TN
/// layout alone (Hopper); Blackwell's run any layout and read the row-wise copy (`sm_version`, below).
double quantize_bytes_per_element(const TrainingOptions& training, int sm_version);

/// Whether the GPU's FP8 GEMMs take non-TN layouts, so that per-tensor FP8 needs no transposed copies
/// (Transformer Engine v2.9 nvte_is_non_tn_fp8_gemm_supported in common/transformer_engine.cpp, called by
/// pytorch/csrc/quantizer.cpp: sm 10.x and 13+).
bool non_tn_fp8_gemm(int sm_version);

/// HBM bytes per weight element that Transformer Engine moves to make the quantized copies of a
/// low-precision GEMM weight in a pass of one micro-batch through a model chunk (0: none made). With
/// cached copies (Megatron passes is_first_microbatch) it makes them once per step, at the chunk's first
/// micro-batch; under disable_parameter_transpose_cache (is_first_microbatch = None) at every call. BF16
/// weights are quantized as an input is (quantize_bytes_per_element). Per-tensor FP8 parameters
/// (fp8_param_gather) are FP8 already and need only their transpose for the data-gradient GEMM where the
/// GPU's FP8 GEMMs take the TN layout alone (Hopper: read 1 + write 1 byte; Blackwell runs non-TN FP8
/// GEMMs and needs none: TE v2.9 nvte_is_non_tn_fp8_gemm_supported, common/transformer_engine.cpp, sm 10.x
/// and 13+). TE makes that transpose when it is missing or invalid whatever is_first_microbatch says
/// (Float8TensorStorage.update_usage), Megatron invalidates it once per optimizer step, and frozen weights
/// (LoRA's base, outside the gradient buffers) keep theirs: at most once per step. MXFP8 parameters
/// (Megatron-Bridge's MXFP8 preset: fp8_param_gather with reuse_grad_buf_for_mxfp8_param_ag) are cast from
/// their gathered BF16 values to both MXFP8 copies once per step, at the first micro-batch; frozen ones never.
double weight_cast_bytes_per_element(const TrainingOptions& training, int sm_version, bool first_microbatch);

/// Bytes per element of the data-parallel parameter all-gather: 1 for per-tensor FP8 parameters, 2 (BF16)
/// otherwise, MXFP8 parameters included (gathered in BF16 through the gradient buffer, then cast).
double param_gather_bytes_per_element(const TrainingOptions& training);

/// Bytes per element of a GEMM input that a layer running its GEMMs in low precision keeps for the
/// backward pass (the quantized copy, with scales); 2 for BF16.
double saved_gemm_input_bytes(const TrainingOptions& training);

/// Bytes per parameter of the model weights as trained: BF16, plus the quantized copies of the GEMM
/// weights Transformer Engine caches for the step unless parameters are gathered in FP8.
double weight_bytes_per_parameter(const TrainingOptions& training);

/// The dense tensor-core peak of the scenario's GEMM precision (FP8 or FP4 peak, else BF16), FLOP/s.
double precision_peak_flops(const TrainingOptions& training, const hardware::GpuSpec& gpu);
/// "FP4", "FP8" or "BF16", as precision_peak_flops counts it.
const char* precision_peak_name(const TrainingOptions& training, const hardware::GpuSpec& gpu);

}  // namespace fmsim::workload
