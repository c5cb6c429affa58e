#pragma once
// Model constants of the serving part, in one place, each with its source or marked as an estimate;
// docs/model.md ("Serving") explains how they are used.

namespace fmsim::inference {

/// Host-side time per engine iteration that the GPU does not hide: scheduling, input preparation,
/// sampling and detokenisation hand-off. vLLM V1 moved these off the critical path ("CPU overhead
/// ... under 5 %" of a decode step, vLLM V1 alpha blog, 2025-01); TensorRT-LLM overlaps its scheduler
/// with the GPU. Estimate: 0.5 ms, set per scenario with "iteration_overhead".
inline constexpr double kDefaultIterationOverhead_s = 0.5e-3;

/// HBM the engine cannot give to weights, activations or the KV cache: CUDA context, cuBLAS and NCCL
/// workspaces and CUDA-graph pools. vLLM's memory profiler reports 1-3 GiB of "non-torch memory" and
/// CUDA graphs on H100 (estimate from vLLM start-up logs; docs/model.md).
inline constexpr double kRuntimeReserve_bytes = 2.0 * 1024 * 1024 * 1024;

/// Bytes per element of activations moved between GPUs (TP all-reduce, EP all-to-all, pipeline sends)
/// and of the hidden state in HBM: BF16, as vLLM and TensorRT-LLM keep activations.
inline constexpr double kActivationBytes = 2.0;

/// Bytes per element of the logits the sampler reads (FP32, vLLM's sampler).
inline constexpr double kLogitBytes = 4.0;

}  // namespace fmsim::inference
