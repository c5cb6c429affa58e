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

/// vLLM V1's batching limits for its OpenAI API server (vllm/engine/arg_utils.py, get_batch_defaults):
/// max_num_seqs 1,024 and max_num_batched_tokens 8,192 on GPUs with at least 70 GiB that are not A100s
/// (H100, H200, B200, MI300X: "use larger default values"), 256 and 2,048 elsewhere.
inline constexpr double kVllmLargeGpu_bytes = 70.0 * 1024 * 1024 * 1024;
inline constexpr int kVllmMaxNumSeqsLargeGpu = 1024;
inline constexpr int kVllmMaxNumBatchedTokensLargeGpu = 8192;
inline constexpr int kVllmMaxNumSeqs = 256;
inline constexpr int kVllmMaxNumBatchedTokens = 2048;

/// TensorRT-LLM defaults (engine "tensorrt_llm"): max_batch_size 2048 and max_num_tokens 8192
/// (tensorrt_llm/builder.py BuildConfig; llmapi/llm_args.py), tokens_per_block 32 (KV cache page size,
/// llm_args.py), free_gpu_memory_fraction 0.9 (KvCacheConfig: the share of the memory left after the
/// model and its activations that the KV cache takes).
inline constexpr int kTrtllmMaxBatchSize = 2048;
inline constexpr int kTrtllmMaxNumTokens = 8192;
inline constexpr int kTrtllmTokensPerBlock = 32;
inline constexpr double kTrtllmFreeGpuMemoryFraction = 0.9;

/// Host time per scheduled sequence per iteration in TensorRT-LLM's PyTorch backend (PyExecutor, a
/// Python loop over the batch: scheduling, KV block tables, input ids and positions, appending the
/// sampled token, stop criteria). Its overlap scheduler (on by default) runs this work during the next
/// GPU iteration, so it binds only when it is the longer of the two: a ceiling of 1 / 35 us = 28.6k
/// sequence-steps per second per executor. Derived from the perf-overview's Llama-3.1-8B 128/128 rows,
/// which sit at the same ~28k output tokens/s on H100 (28,312) and H200 (27,911) although the H200's
/// GPU work is faster there (inf-trtllm-llama-3.1-8b-h100-tp1-fp8, -h200-tp1-fp8); every other row of
/// those cases is below the ceiling, as it must be. docs/model.md, "Engine behaviour".
inline constexpr double kTrtllmHostPerSequence_s = 35e-6;

/// Host time per token returned to a client while streaming, in TensorRT-LLM's executor loop (a
/// response object per request per iteration, handed to the serving front end). Estimate: 15 us per
/// token, not isolated by any calibration row; off-line benchmarks (trtllm-bench, MLPerf Offline) return
/// each request once, at its end. vLLM V1 detokenizes and streams in its front-end process, overlapped
/// with the engine core (vLLM V1 announcement, 2025-01), so its default is 0.
inline constexpr double kTrtllmStreamResponsePerToken_s = 15e-6;

/// Largest decode batch vLLM V1 captures as a CUDA graph by default (cuda_graph_sizes [512]: sizes 1,
/// 2, 4 and multiples of 8 up to it), padding every smaller batch up to a captured size (vllm/config.py,
/// CompilationConfig). TensorRT-LLM's default CudaGraphConfig captures 1-31, 32, 64, 128 without padding
/// (llmapi/llm_args.py, _generate_cuda_graph_batch_sizes).
inline constexpr int kVllmCudaGraphMaxBatch = 512;
inline constexpr int kTrtllmCudaGraphMaxBatch = 128;

/// SMs a DeepEP normal-mode dispatch or combine kernel holds while it runs (deep_ep/buffer.py,
/// `Buffer.num_sms = 20`; Megatron-Core's moe_deepep_num_sms default is the same): with two-batch
/// overlap in a prefill iteration the other micro-batch's compute runs on the remaining SMs. The
/// low-latency kernels of decode iterations overlap through hooks that hold no SMs (DeepEP README).
inline constexpr int kDeepepNormalKernelSms = 20;

}  // namespace fmsim::inference
