#pragma once
// mamba_ssm's Triton SSD kernels (ops/triton/ssd_combined.py: chunk_cumsum, chunk_state, state_passing,
// bmm_chunk, chunk_scan, and the backward's recomputation and gradient kernels), which Megatron-Core's
// MambaMixer runs in training. Each kernel takes the longer of its HBM traffic at the GPU's achievable
// bandwidth and its tensor-core work at the rate these Triton kernels reach, which does not grow with the
// GPU generation: their tl.dot tiles are small (mamba_ssm's autotune lists include 2-warp configurations,
// below the 4-warp groups wgmma on Hopper and tcgen05 on Blackwell need, triton-lang/triton pull request
// #5978), and the measured forward time per head and token is the same on Hopper and Blackwell:
//   H100: vLLM pull request #27299 (unfused Triton SSD, 128 heads, head_dim 64, d_state 128, 1 group,
//         8,192 tokens): 1.262e7 tokens/s = 0.62 ns per head-token, 66 kFLOP per head-token -> 106 TFLOP/s;
//   B200: flashinfer pull request #2709 (benchmarks/bench_mamba_ssd_combined.py, mamba_ssm 2.2.4's
//         five-kernel forward, 8 heads = 8 groups, head_dim 64, d_state 128, chunk 128, 4 x 8,192 to
//         256 x 2,048 tokens): 0.89-0.97 ns per head-token, 82 kFLOP per head-token -> 85-92 TFLOP/s;
//   H200: tile-ai/TileOPs (pull requests #1557, #1675, chunk 256, 1 group): 0.58-1.18 ns per head-token.
// (FLOPs per head-token as ssd_forward_flops counts them.) The backward (mamba_ssm's
// _mamba_chunk_scan_combined_bwd: the forward's states again, then about ten gradient kernels, several
// accumulating with atomics in FP32) has no published timing at a stated shape; its rate is what the
// 14 Nemotron 3 Nano rows of ../shared/calibration (Megatron-Bridge 26.02.01-26.06 on H100, GB200, GB300
// and B300, TP1) need beside everything else fmsim prices for them: one figure for all four GPUs brings
// them to +3.0 / +1.1 / -3.2 / -2.0 % per GPU (docs/model.md, hybrid models). A "full bwd" of 3.49 ms at
// 8,192 tokens in state-spaces/mamba issue #530 (shape not stated; 26 TFLOP/s at Mamba-2 2.7B's) is of the
// same order.
namespace fmsim::compute {

inline constexpr double kSsdForwardFlopRate = 95e12;   ///< FLOP/s, any GPU (H100 106, B200 85-92 measured)
inline constexpr double kSsdBackwardFlopRate = 22e12;  ///< FLOP/s, any GPU (from the Nano rows, see above)

}  // namespace fmsim::compute
