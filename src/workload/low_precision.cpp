#include "fmsim/workload/low_precision.hpp"

#include "fmsim/compute/compute_model.hpp"

namespace fmsim::workload {

namespace {

/// FP4 payload per element (E2M1) plus its block scale: NVFP4 keeps one E4M3 scale per 16 elements
/// (and one FP32 scale per tensor), MXFP4 one E8M0 scale per 32 (OCP Microscaling spec v1.0; NVIDIA,
/// "Pretraining Large Language Models with NVFP4", arXiv 2509.25149, section 2).
double fp4_element_bytes(Fp4Recipe recipe) { return 0.5 + (recipe == Fp4Recipe::nvfp4 ? 1.0 / 16.0 : 1.0 / 32.0); }

/// Parameters kept in FP8 (fp8_param_gather): per-tensor FP8, or MXFP8 (mxfp8_parameters).
bool fp8_parameters(const TrainingOptions& t) { return t.fp8_param_gather && t.precision == Precision::fp8; }
bool mxfp8_parameters(const TrainingOptions& t) { return fp8_parameters(t) && t.fp8_recipe == Fp8Recipe::mxfp8; }

}  // namespace

bool non_tn_fp8_gemm(int sm_version) { return (sm_version >= 100 && sm_version < 120) || sm_version >= 130; }

double quantize_bytes_per_element(const TrainingOptions& t, int sm_version) {
  if (t.precision == Precision::fp4) {
    // Read the BF16 input, write the row-wise FP4 copy and the column-wise one for the weight-gradient
    // GEMM (Transformer Engine applies its 16x16 random Hadamard transform on the way, a few FLOPs per
    // element that the memory traffic hides). NVFP4's per-tensor scale needs the tensor's amax first:
    // one more BF16 read, as FP8 current scaling.
    const double amax_pass = t.fp4_recipe == Fp4Recipe::nvfp4 ? 2.0 : 0.0;
    return amax_pass + 2.0 + 2.0 * fp4_element_bytes(t.fp4_recipe);
  }
  // FP8: read BF16 (twice for current scaling: amax, then cast) and write the FP8 copy and its
  // transpose (none where the GEMMs take non-TN layouts); MXFP8 writes a row-wise and a column-wise copy
  // with E8M0 scales per 32 elements (its blocks run along one dimension) and needs no amax pass.
  const double transpose = non_tn_fp8_gemm(sm_version) ? 0.0 : 1.0;
  switch (t.fp8_recipe) {
    case Fp8Recipe::tensorwise: return 5.0 + transpose;
    case Fp8Recipe::delayed: return 3.0 + transpose;
    case Fp8Recipe::mxfp8: return 4.0 + 2.0 / 32.0;
  }
  return 4.0;
}

double weight_cast_bytes_per_element(const TrainingOptions& t, int sm_version, bool first_microbatch) {
  if (t.precision == Precision::bf16) return 0.0;
  if (mxfp8_parameters(t)) {
    // MXFP8 parameters: the BF16 values gathered into the gradient buffer are cast to the parameter's
    // row-wise and column-wise copies once per optimizer step (Megatron-Core under
    // reuse_grad_buf_for_mxfp8_param_ag: "The parameters are cast from bf16 to MXFP8 during copy",
    // distributed_data_parallel.py at core_v0.15, param_and_grad_buffer.py _post_param_sync later), at
    // the chunk's first micro-batch; TE quantizes nothing more, disable_parameter_transpose_cache or not.
    // Frozen weights (LoRA's base) are never cast again.
    if (!first_microbatch || t.fine_tuning.frozen_base()) return 0.0;
    return quantize_bytes_per_element(t, sm_version);
  }
  if (fp8_parameters(t)) {
    // FP8 parameters: TE builds the transpose when it is missing or invalid (Float8TensorStorage
    // update_usage), whatever is_first_microbatch says, and Megatron invalidates it once per optimizer
    // step; frozen weights (LoRA's base, outside the gradient buffers) keep theirs.
    if (!first_microbatch || t.fine_tuning.frozen_base() || non_tn_fp8_gemm(sm_version)) return 0.0;
    return 2.0;
  }
  if (!(first_microbatch || t.disable_parameter_transpose_cache)) return 0.0;
  return quantize_bytes_per_element(t, sm_version);
}

double saved_gemm_input_bytes(const TrainingOptions& t) {
  switch (t.precision) {
    case Precision::bf16: return 2.0;
    case Precision::fp8: return 1.0;
    case Precision::fp4: return fp4_element_bytes(t.fp4_recipe);  // the column-wise copy the wgrad GEMM reads
  }
  return 2.0;
}

double weight_bytes_per_parameter(const TrainingOptions& t) {
  switch (t.precision) {
    case Precision::bf16: return 2.0;
    // FP8 parameters: per-tensor FP8 with its cached transpose (2); MXFP8 with its row-wise and
    // column-wise copies and their scales (the gathered BF16 values live in the gradient buffer).
    case Precision::fp8:
      if (fp8_parameters(t)) return mxfp8_parameters(t) ? 2.0 * (1.0 + 1.0 / 32.0) : 2.0;
      return 3.0;
    // Megatron-Bridge's NVFP4 recipe gathers BF16 parameters (fp8_param_gather False): the BF16 weights
    // plus a row-wise and a column-wise FP4 copy (forward and data-gradient GEMMs).
    case Precision::fp4: return 2.0 + 2.0 * fp4_element_bytes(t.fp4_recipe);
  }
  return 2.0;
}

double param_gather_bytes_per_element(const TrainingOptions& t) {
  // Per-tensor FP8 parameters are gathered as FP8; MXFP8 ones as their BF16 values, through the gradient
  // buffer (reuse_grad_buf_for_mxfp8_param_ag), and cast after the gather (weight_cast_bytes_per_element).
  return fp8_parameters(t) && !mxfp8_parameters(t) ? 1.0 : 2.0;
}

double precision_peak_flops(const TrainingOptions& t, const hardware::GpuSpec& gpu) {
  const auto math = t.precision == Precision::fp4   ? compute::MathPrecision::fp4
                    : t.precision == Precision::fp8 ? compute::MathPrecision::fp8
                                                    : compute::MathPrecision::bf16;
  return compute::ComputeModel(gpu).peak_flops(math);  // the peak the compute model prices its GEMMs at
}

const char* precision_peak_name(const TrainingOptions& t, const hardware::GpuSpec& gpu) {
  if (t.precision == Precision::fp4 && gpu.fp4_dense_flops > 0) return "FP4";
  if (t.precision != Precision::bf16 && gpu.fp8_dense_flops > 0) return "FP8";
  return "BF16";
}

}  // namespace fmsim::workload
