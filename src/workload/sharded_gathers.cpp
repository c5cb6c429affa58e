// How each data-parallel engine moves sharded parameters (framework.hpp DataParallelEngine), the parts
// that differ from Megatron's buckets (trace_builder.cpp):
// - FSDP2 (torch.distributed.fsdp.fully_shard, as torchtitan wraps each transformer block): one
//   all-gather and one reduce-scatter per block. The all-gather lands in one flat buffer that
//   foreach_all_gather_copy_out splits into the block's parameters on the compute stream (a read and a
//   write of the unsharded parameters, `fsdp2_copy_out_bytes`), and each reduce-scatter first copies the
//   block's gradients into a flat buffer in the reduce dtype (foreach_reduce's chunk_cat: read the BF16
//   gradients, write them at the reduce precision, `fsdp2_copy_in_bytes`).
// - DeepSpeed ZeRO-3 (2021, stage3.py): each module's parameters are fetched when the module runs, one
//   all-gather per parameter tensor (`layer_parameter_tensors`: weights, biases, norm scales), and a
//   layer's compute waits for its own gathers, issued when the layer before it has finished (the trace
//   prefetcher's bucket of 5e7 elements holds less than one GPT-3-sized weight matrix, so nothing is
//   fetched ahead). Small tensors pay the collective's whole latency, which on a thousand-GPU ring is
//   milliseconds each. With full recompute, a tensor whose reuse distance (the elements the layer uses
//   between its recomputed forward and its backward) exceeds stage3_max_reuse_distance (default 1e9) was
//   released and is gathered again for the backward (`tensors_gathered_again`).
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

std::vector<double> layer_parameter_tensors(const TraceWriter& w, int layer, double dense_on_rank) {
  const auto& m = w.s.model;
  const double tp = w.s.parallelism.tp;
  std::vector<double> tensors;  // in the order the forward uses them
  const bool moe = m.layer_is_moe(layer);
  if (!m.mla && !m.hybrid.enabled()) {
    const double q = m.q_dim(), kv = m.kv_dim(), h = m.hidden;
    // Each norm: a scale and, with the GPT-style biases, a shift (LayerNorm).
    const int per_norm = m.attention_bias || m.mlp_bias ? 2 : 1;
    for (int i = 0; i < per_norm; ++i) tensors.push_back(h);
    tensors.push_back(h * (q + 2 * kv) / tp);  // QKV
    if (m.attention_bias) tensors.push_back((q + 2 * kv) / tp);
    tensors.push_back(q * h / tp);  // projection
    if (m.attention_bias) tensors.push_back(h);
    for (int i = 0; i < per_norm; ++i) tensors.push_back(h);
    if (!moe) {
      tensors.push_back(h * m.ffn * (m.gated_mlp ? 2.0 : 1.0) / tp);  // FC1
      if (m.mlp_bias) tensors.push_back(m.ffn * (m.gated_mlp ? 2.0 : 1.0) / tp);
      tensors.push_back(m.ffn * h / tp);  // FC2
      if (m.mlp_bias) tensors.push_back(h);
    }
  }
  double listed = 0;
  for (double t : tensors) listed += t;
  if (listed > dense_on_rank) {  // a layout this list does not describe: one tensor for the whole layer
    tensors.assign(1, dense_on_rank);
  } else if (dense_on_rank - listed >= 1.0) {
    tensors.push_back(dense_on_rank - listed);  // what the list leaves out (MLA projections, a router, ...)
  }
  return tensors;
}

std::vector<double> tensors_gathered_again(const std::vector<double>& tensors, double max_reuse_distance) {
  // Between a tensor's use in the recomputed forward and its use in the backward, the layer uses every
  // tensor after it twice (recomputed forward, then backward in reverse order).
  std::vector<double> again;
  double after = 0;
  for (auto it = tensors.rbegin(); it != tensors.rend(); ++it) {
    if (2 * after > max_reuse_distance) again.push_back(*it);
    after += *it;
  }
  return again;
}

double fsdp2_copy_out_bytes(double params, double param_bytes) { return 2.0 * params * param_bytes; }

double fsdp2_copy_in_bytes(double params, double grad_bytes) { return params * (2.0 + grad_bytes); }

}  // namespace fmsim::workload::detail
