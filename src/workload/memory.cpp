// Memory per GPU (see memory.hpp).
#include "fmsim/workload/memory.hpp"

#include "fmsim/workload/low_precision.hpp"

#include <algorithm>
#include <cstdio>

#include "fmsim/units/format.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"

namespace fmsim::workload {

double activation_bytes_per_layer(const Scenario& s, int layer) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  const double tokens = static_cast<double>(p.micro_batch) * t.seq / p.cp;  // this GPU's sequence chunk
  const double tp = p.tp, h = m.hidden;
  const double sp_share = p.sequence_parallel ? 1.0 / tp : 1.0;  // LayerNorm/dropout regions
  // FP8 and FP4 keep GEMM inputs quantized for the backward pass (low_precision.cpp).
  const double linear_in = t.layer_in_fp8(layer, m.layers) ? saved_gemm_input_bytes(t) : 2.0;
  if (t.recompute == Recompute::full) return 2.0 * tokens * h * sp_share;  // only the layer input
  if (m.hybrid.enabled()) return hybrid_activation_bytes(s, layer);  // mamba_ops.cpp
  const double q = m.q_dim() / tp;
  const double kv = (m.mla ? m.heads * (m.mla_shape.qk_nope_head_dim + m.mla_shape.qk_rope_head_dim + m.mla_shape.v_head_dim) / 2.0
                           : m.kv_dim()) / tp;
  const double o_in = (m.mla ? m.heads * m.mla_shape.v_head_dim : m.heads * m.head_dim) / tp;
  // Attention block (Korthikanti et al. 2022, table 2, with flash attention: no s^2 scores):
  // LN input 2, QKV input (LN output), Q/K/V for the attention backward, attention output (proj input),
  // dropout mask 1 byte/element.
  // Under sequence parallelism Transformer Engine keeps the LayerNorm output sharded and gathers it
  // again in backward. Checks: 34 sbh/t for MHA, ffn = 4h, BF16 with SP; sbh (10 + 24/t) without SP.
  // Selective recompute of the norms drops their outputs; of the experts' activation, FC2's input; of a
  // dense MLP, everything but the MLP input (MLM recompute_modules).
  const bool selective = t.recompute == Recompute::selective;
  const RecomputeModules& again = t.recompute_modules;
  const double norm_out = selective && again.layernorm ? 0.0 : linear_in;
  // LoRA: a frozen GEMM computes no weight gradient, so its input is kept only when an adapter (whose A
  // matrix needs it for its own gradient) sits on it; the adapters keep their rank-r intermediates.
  const auto& ft = t.fine_tuning;
  const auto kept = [&ft](const char* module) { return !ft.frozen_base() || ft.lora.targets(module) ? 1.0 : 0.0; };
  // Recomputing MLA's up-projections keeps their low-rank inputs (the down-projections' outputs, whole on
  // every TP rank) in place of the Q/K/V they make; without a Q latent (q_lora_rank 0) Q itself stays.
  const auto& mla = m.mla_shape;
  const double q_kept = mla.q_lora_rank > 0 ? static_cast<double>(mla.q_lora_rank) : q;
  const double attention_inputs = m.mla && selective && again.mla_up_proj
                                      ? 2.0 * tokens * (q_kept + mla.kv_lora_rank + mla.qk_rope_head_dim)
                                      : 2.0 * tokens * (q + 2 * kv);
  double bytes = tokens * h * sp_share * (2 + norm_out * kept("linear_qkv") + 1) + attention_inputs + tokens * o_in * linear_in;
  if (ft.frozen_base()) bytes += ft.lora.target_modules.size() * tokens * ft.lora.rank * 2.0;
  // MLP block: LN input, LN output (FC1 input), mask; FC1 output (both halves when gated), FC2 input.
  const bool mlp_again = selective && again.mlp && !m.layer_is_moe(layer);
  bytes += tokens * h * sp_share * (2 + (mlp_again ? 0.0 : norm_out * kept("linear_fc1")) + 1);
  if (m.layer_is_moe(layer) && selective && again.moe) {
    // recompute "moe": only the MoE block's input (the norm output above) is kept.
  } else if (m.layer_is_moe(layer)) {
    const double rows = tokens * sp_share * m.moe.experts_per_token * p.etp;  // routed rows this GPU computes
    const double ffn = m.moe.expert_ffn / static_cast<double>(p.etp);
    const double act_out = selective && again.moe_act ? 0.0 : linear_in;
    bytes += rows * h * 2.0 + rows * ffn * (m.gated_mlp ? 2 : 1) * 2.0 + rows * ffn * act_out;
    const double shared = m.moe.shared_ffn;
    bytes += tokens * sp_share * shared * ((m.gated_mlp ? 2 : 1) * 2.0 + linear_in);
  } else if (!mlp_again) {
    const double ffn = m.ffn / tp;
    bytes += tokens * ffn * (m.gated_mlp ? 2 : 1) * 2.0 + tokens * ffn * linear_in * kept("linear_fc2");
  }
  return bytes;
}

MemoryReport estimate_memory(const Scenario& s) {
  const auto& m = s.model;
  const auto& p = s.parallelism;
  const auto& t = s.training;
  MemoryReport report;
  report.hbm_bytes = s.cluster.gpu.hbm_bytes;
  const auto stages = pipeline_stages(m.layers, m.mtp_layers, p, s.file);
  const ParameterCounts counts = count_parameters(m);
  const double vocab_h = static_cast<double>(padded_vocab(m.vocab, p.tp)) * m.hidden / p.tp;
  const double dense_shards = p.dp * p.cp;
  const double expert_shards = static_cast<double>(p.tp) * p.cp * p.dp / (p.ep * p.etp);
  const double grad_bytes = t.grad_reduce_in_fp32 ? 4.0 : 2.0;
  const double tokens = static_cast<double>(p.micro_batch) * t.seq / p.cp;
  for (int rank = 0; rank < p.pp; ++rank) {
    MemoryBreakdown b;
    b.pipeline_rank = rank;
    double dense = 0, expert = 0, adapters = 0;
    std::vector<double> chunk_activation(p.vp, 0.0);
    for (int chunk = 0; chunk < p.vp; ++chunk) {
      const int stage = chunk * p.pp + rank;
      for (int layer = stages[stage].begin; layer < stages[stage].end; ++layer) {
        const double experts = m.layer_is_moe(layer) ? counts.expert_per_moe_layer : 0.0;
        dense += (layer_parameters(m, counts, layer) - experts) / p.tp;
        expert += experts / (p.ep * p.etp);
        chunk_activation[chunk] += activation_bytes_per_layer(s, layer);
        adapters += lora_parameters_per_layer(t.fine_tuning, m) / p.tp;
      }
      if (stages[stage].mtp > 0) {
        // MTP depths: their layers (like the last decoder layer), eh_proj and norms, and copies of the
        // embedding and output layer unless the stage holds them; per depth the eh_proj input, norms and
        // FP32 logits are kept too.
        const int depths = stages[stage].mtp;
        dense += (counts.mtp - counts.mtp_experts) / p.tp + (stage != 0 ? vocab_h : 0.0) + (stage != p.pp * p.vp - 1 ? vocab_h : 0.0);
        expert += counts.mtp_experts / (p.ep * p.etp);
        const double sp = p.sequence_parallel ? p.tp : 1;
        double depth_layers = 0;  // a hybrid model's MTP pattern (numbered after the decoder), else the last layer
        if (m.hybrid.enabled() && !m.hybrid.mtp_layers.empty()) {
          for (std::size_t i = 0; i < m.hybrid.mtp_layers.size(); ++i) depth_layers += activation_bytes_per_layer(s, m.layers + static_cast<int>(i));
        } else {
          depth_layers = activation_bytes_per_layer(s, m.layers - 1);
        }
        chunk_activation[chunk] += depths * (depth_layers + 2.0 * tokens * 2.0 * m.hidden +
                                             3 * 2.0 * tokens * m.hidden / sp + 4.0 * tokens * padded_vocab(m.vocab, p.tp) / p.tp);
      }
      if (stage == 0) {
        dense += vocab_h;
        chunk_activation[chunk] += 2.0 * tokens * m.hidden / (p.sequence_parallel ? p.tp : 1);
      }
      if (stage == p.pp * p.vp - 1) {
        if (!m.tied_embeddings || p.pp * p.vp > 1) dense += vocab_h;
        chunk_activation[chunk] += 4.0 * tokens * padded_vocab(m.vocab, p.tp) / p.tp;  // FP32 logits for the loss
      }
    }
    b.parameters_local = dense + expert;
    b.parameters_unique = dense / dense_shards + expert / expert_shards;
    // Weights: BF16 (plus an FP8 copy of the GEMM weights under FP8 training), or FP8 parameters
    // (fp8_param_gather: per-tensor FP8 with its transpose, or MXFP8's two copies) (low_precision.hpp).
    const double weight_bytes = weight_bytes_per_parameter(t);
    const bool zero3 = p.sharding == Sharding::optim_grads_params;
    const bool zero2 = zero3 || p.sharding == Sharding::optim_grads;
    const bool zero1 = zero2 || p.sharding == Sharding::optim;
    auto sharded = [&](double per_param, bool shard) {
      return shard ? per_param * (dense / dense_shards + expert / expert_shards) : per_param * (dense + expert);
    };
    b.weights_bytes = sharded(weight_bytes, zero3);
    if (zero3) {
      // About two FSDP units (here: layers) unsharded at a time, double-buffered.
      double largest = 0;
      for (int layer = 0; layer < m.layers; ++layer) largest = std::max(largest, layer_parameters(m, counts, layer) / p.tp);
      b.weights_bytes += 2 * largest * weight_bytes;
    }
    b.gradients_bytes = sharded(grad_bytes, zero2);
    b.optimizer_bytes = sharded(12.0, zero1);  // FP32 master weights and two Adam moments
    if (t.fine_tuning.frozen_base()) {
      // LoRA: the base weights are frozen (no gradients, no optimizer state); the adapters train.
      b.parameters_local += adapters;
      b.parameters_unique = adapters / dense_shards;  // a PEFT checkpoint holds only the adapters (Megatron-Bridge)
      b.weights_bytes += 2.0 * adapters;
      b.gradients_bytes = grad_bytes * adapters / (zero2 ? dense_shards : 1.0);
      b.optimizer_bytes = 12.0 * adapters / (zero1 ? dense_shards : 1.0);
    }
    // In-flight micro-batches: the warm-up forwards plus the one being run (per model chunk).
    const auto order = pipeline_order(p.pp, p.vp, p.microbatches, rank, t.overlap_moe_expert_parallel_comm ? 1 : 0);
    std::vector<int> live(p.vp, 0);
    double peak = 0, current = 0;
    int peak_microbatches = 0, in_flight = 0;
    for (const auto& pass : order) {
      double delta = chunk_activation[pass.chunk];
      if (pass.forward) {
        current += delta;
        ++in_flight;
      } else {
        current -= delta;
        --in_flight;
      }
      if (current > peak) {
        peak = current;
        peak_microbatches = in_flight;
      }
    }
    b.activations_bytes = peak;
    b.inflight_microbatches = p.vp > 1 ? peak_microbatches / static_cast<double>(p.vp) : peak_microbatches;
    b.total_bytes = b.weights_bytes + b.gradients_bytes + b.optimizer_bytes + b.activations_bytes + b.reserved_bytes;
    report.by_pipeline_rank.push_back(b);
    if (b.total_bytes > report.peak.total_bytes) report.peak = b;
  }
  report.oom = report.peak.total_bytes > report.hbm_bytes;
  return report;
}

std::string describe_oom(const MemoryReport& r) {
  const auto& b = r.peak;
  auto gb = [](double bytes) {
    char text[32];
    std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
    return std::string(text);
  };
  return "needs " + gb(b.total_bytes) + " per GPU on pipeline rank " + std::to_string(b.pipeline_rank) + " but the GPU has " +
         gb(r.hbm_bytes) + " (weights " + gb(b.weights_bytes) + ", gradients " + gb(b.gradients_bytes) + ", optimizer " +
         gb(b.optimizer_bytes) + ", activations " + gb(b.activations_bytes) + ", reserved " + gb(b.reserved_bytes) + ")";
}

}  // namespace fmsim::workload
