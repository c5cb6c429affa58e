#pragma once
// Memory per GPU for a training scenario: weights, gradients, optimizer state (sharded as configured),
// activations of the micro-batches the pipeline schedule keeps in flight, and a fixed reserve; the
// peak over pipeline ranks decides the OOM verdict. Formulas: MEGATRON-NOTES.md section 7, docs/model.md.
#include <string>
#include <vector>

#include "fmsim/workload/scenario.hpp"

namespace fmsim::workload {

/// CUDA context, cuBLAS/NCCL workspaces and allocator fragmentation not covered by the terms below:
/// an estimate (PyTorch's CUDA context alone is ~0.5-1 GiB on H100; NCCL buffers ~1 GiB at default
/// NCCL_BUFFSIZE over several communicators; MEGATRON-NOTES.md section 7 gives "a few GB" for CUDA
/// graphs, which fmsim does not model). See docs/model.md.
inline constexpr double kReservedBytes = 3.0 * 1024 * 1024 * 1024;

struct MemoryBreakdown {
  int pipeline_rank = 0;
  double parameters_local = 0;     ///< parameters held (before DP sharding), count
  double parameters_unique = 0;    ///< this GPU's share when the replicas of its parameters split them evenly
                                   ///< (what a deduplicated distributed checkpoint writes from it), count
  double weights_bytes = 0;
  double gradients_bytes = 0;
  double optimizer_bytes = 0;
  double activations_bytes = 0;
  double inflight_microbatches = 0;
  double reserved_bytes = kReservedBytes;
  double total_bytes = 0;
};

struct MemoryReport {
  std::vector<MemoryBreakdown> by_pipeline_rank;
  MemoryBreakdown peak;            ///< the pipeline rank with the most
  double hbm_bytes = 0;
  bool oom = false;
};

/// Activation bytes one layer keeps for backward, per micro-batch, on one GPU.
double activation_bytes_per_layer(const Scenario& s, int layer);

MemoryReport estimate_memory(const Scenario& s);

/// "does not fit: needs 91.2 GB of 80.0 GB (weights ..., activations ...)" for error messages.
std::string describe_oom(const MemoryReport& report);

}  // namespace fmsim::workload
