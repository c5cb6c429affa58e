#pragma once
// The kernels of mamba_ssm's SSD chunked scan (ops/triton/ssd_combined.py), per token on one TP rank:
// the HBM bytes each reads and writes and the matrix products it computes. Training runs the forward and
// the backward (mamba_ops.cpp), serving the forward over prompt chunks (inference/hybrid_serving.cpp);
// each kernel takes the longer of its bytes at the GPU's bandwidth and its products at the Triton
// kernels' own rate (compute/ssd_kernels.hpp).
#include <string>
#include <vector>

#include "fmsim/compute/compute_model.hpp"
#include "fmsim/workload/hybrid_pattern.hpp"

namespace fmsim::workload {

struct SsdKernel {
  std::string name;             ///< ssd.chunk_state, ssd.bwd.dx, ...
  double bytes_per_token = 0;   ///< HBM bytes read and written
  double flops_per_token = 0;   ///< tensor-core work (the matrix products)
};

/// mamba_chunk_scan_combined's forward: chunk_cumsum, chunk_state, state_passing, bmm_chunk, chunk_scan,
/// for the heads and groups of one of `tp` ranks.
std::vector<SsdKernel> ssd_forward_kernels(const MambaShape& shape, double tp);
/// _mamba_chunk_scan_combined_bwd: the chunk states recomputed, then the gradient kernels.
std::vector<SsdKernel> ssd_backward_kernels(const MambaShape& shape, double tp);
/// One kernel's time over `tokens` tokens: its bytes at the GPU's bandwidth or its products at the
/// forward's or the backward's Triton rate, whichever is longer, plus its launch.
double ssd_kernel_s(const compute::ComputeModel& gpu, const SsdKernel& kernel, double tokens, bool backward);

}  // namespace fmsim::workload
