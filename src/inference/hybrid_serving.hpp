#pragma once
// Serving a hybrid Mamba/attention model (Nemotron-H, Nemotron 3; workload/hybrid_pattern.hpp) as vLLM
// and TensorRT-LLM run it: attention ('*') layers keep a KV cache per token; every Mamba ('M') layer keeps
// one state per sequence instead, its causal conv1d's last conv_kernel - 1 inputs and its SSM state
// (heads x head_dim x state), whatever the sequence's length. A prompt chunk runs the SSD chunked scan's
// forward kernels over its tokens (workload/ssd_scan.hpp, at the Triton kernels' rate); a decoding
// sequence runs causal_conv1d_update and selective_state_update, which read and write its conv and SSM
// state once per layer and step (HBM-bound). MLP ('-') and MoE ('E') layers are the transformer's.
#include <vector>

#include "fmsim/compute/compute_model.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/ssd_scan.hpp"

namespace fmsim::inference {

/// vLLM's MambaMixer2 shards the Mamba groups over TP, or replicates a single group on every rank
/// (n_groups = 1, as in Granite 4.0-H). Whether `tp` ranks replicate the model's single group.
/// (Inline: the scenario reader uses them without the rest of this file, as the fuzz targets link it.)
inline bool replicates_single_mamba_group(const workload::MambaShape& shape, int tp) { return shape.groups == 1 && tp > 1; }
/// Whether the engines can split `shape` over `tp` ranks: the heads, and the groups or a single replicated one.
inline bool mamba_fits_tp(const workload::MambaShape& shape, int tp) {
  return shape.heads % tp == 0 && (shape.groups % tp == 0 || replicates_single_mamba_group(shape, tp));
}
/// The Mamba shape the per-rank formulas use at TP `tp`: with a replicated single group each rank computes
/// as if the model had `tp` groups, one per rank.
workload::MambaShape serving_mamba_shape(const workload::MambaShape& shape, int tp);

/// Bytes of one sequence's Mamba state on one of `tp` ranks, over every Mamba layer: the conv state
/// (conv_dim / TP channels x (conv_kernel - 1) inputs, BF16) and the SSM state (heads / TP x head_dim x
/// state, `ssm_element_bytes` each: mamba_ssm_cache_dtype).
double mamba_state_bytes_per_sequence(const workload::ModelSpec& model, double tp, double ssm_element_bytes);

/// One iteration's SSD scan over `tokens` prompt tokens of one Mamba layer: the five forward kernels
/// (workload::ssd_forward_kernels of the rank's shape, built once by the caller), each launched once over
/// all the iteration's chunks.
double mamba_prefill_scan_s(const compute::ComputeModel& gpu, const std::vector<workload::SsdKernel>& forward_kernels,
                            double tokens);

/// One iteration's state update of one Mamba layer for `sequences` decoding sequences: their conv and SSM
/// states read and written, their x, z, B, C, dt read and y written (two kernels, HBM-bound). `shape` is
/// serving_mamba_shape's at TP `tp`.
double mamba_decode_update_s(const compute::ComputeModel& gpu, const workload::MambaShape& shape, double tp, double sequences,
                             double ssm_element_bytes);

/// The causal conv1d over `tokens` prompt tokens of one Mamba layer (channels read and written once).
double mamba_prefill_conv_s(const compute::ComputeModel& gpu, const workload::MambaShape& shape, double tp, double tokens);

}  // namespace fmsim::inference
