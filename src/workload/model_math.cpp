// Parameter counts and training FLOPs of a ModelSpec. FLOPs follow Megatron-Core's accounting
// (num_floating_point_operations, MEGATRON-NOTES.md section 1), so predicted model TFLOP/s compare with
// the published Megatron-Bridge / NeMo figures.
#include <cmath>

#include "fmsim/workload/model.hpp"

namespace fmsim::workload {
namespace {

double mlp_matrices(const ModelSpec& m) { return m.gated_mlp ? 3.0 : 2.0; }

double attention_parameters(const ModelSpec& m) {
  const double h = m.hidden;
  if (m.mla) {
    const auto& s = m.mla_shape;
    const double n = m.heads;
    double q = s.q_lora_rank > 0 ? h * s.q_lora_rank + s.q_lora_rank + s.q_lora_rank * n * (s.qk_nope_head_dim + s.qk_rope_head_dim)
                                 : h * n * (s.qk_nope_head_dim + s.qk_rope_head_dim);
    double kv = h * (s.kv_lora_rank + s.qk_rope_head_dim) + s.kv_lora_rank + s.kv_lora_rank * n * (s.qk_nope_head_dim + s.v_head_dim);
    return q + kv + n * s.v_head_dim * h;
  }
  const double q = m.q_dim(), kv = m.kv_dim();
  double params = h * (q + 2 * kv) + q * h;
  if (m.attention_sinks) params += m.heads;  // one learned sink logit per head
  if (m.attention_bias) params += q + 2 * kv;
  if (m.mlp_bias) params += h;  // output projection bias (GPT-style add_bias_linear)
  return params;
}

double dense_mlp_parameters(const ModelSpec& m, double ffn) {
  double params = mlp_matrices(m) * m.hidden * ffn;
  if (m.mlp_bias) params += (mlp_matrices(m) - 1) * ffn + m.hidden;
  return params;
}

double norm_parameters_per_layer(const ModelSpec& m) { return (m.mlp_bias ? 4.0 : 2.0) * m.hidden; }

}  // namespace

ParameterCounts count_parameters(const ModelSpec& m) {
  ParameterCounts c;
  const double h = m.hidden;
  c.embedding = static_cast<double>(m.vocab) * h + static_cast<double>(m.learned_positions) * h;
  c.output = m.tied_embeddings ? 0.0 : static_cast<double>(m.vocab) * h;
  c.attention_per_layer = attention_parameters(m);
  c.dense_mlp_per_layer = dense_mlp_parameters(m, m.ffn);
  if (m.is_moe()) {
    c.expert_per_moe_layer = m.moe.experts * mlp_matrices(m) * h * m.moe.expert_ffn;
    c.moe_mlp_per_layer = c.expert_per_moe_layer + mlp_matrices(m) * h * m.moe.shared_ffn + h * m.moe.experts;
  }
  if (m.hybrid.enabled()) {  // hybrid_model.cpp: per-letter layers
    count_hybrid_parameters(m, c);
    return c;
  }
  c.norms = norm_parameters_per_layer(m) * m.layers + h;
  const int moe_layers = m.moe_layers();
  const int dense_layers = m.layers - moe_layers;
  c.total = c.embedding + c.output + c.norms + m.layers * c.attention_per_layer + dense_layers * c.dense_mlp_per_layer +
            moe_layers * c.moe_mlp_per_layer;
  double active_moe = 0;
  if (m.is_moe()) {
    active_moe = c.moe_mlp_per_layer - c.expert_per_moe_layer +
                 c.expert_per_moe_layer * m.moe.experts_per_token / m.moe.experts;
  }
  c.active = c.total - moe_layers * (c.moe_mlp_per_layer - active_moe);
  if (m.mtp_layers > 0) {
    const int last = m.layers - 1;
    const double experts = m.layer_is_moe(last) ? c.expert_per_moe_layer : 0.0;
    c.mtp = m.mtp_layers * (layer_parameters(m, c, last) + 2.0 * h * h + 3.0 * h);
    c.mtp_experts = m.mtp_layers * experts;
  }
  return c;
}

double attended_span(int seq, int window) {
  if (window <= 0 || window >= seq) return seq / 2.0;
  const double w = window;
  return w - w * (w - 1.0) / (2.0 * seq);  // full-window rows plus the ramp of the first w rows
}

double layer_parameters(const ModelSpec& m, const ParameterCounts& c, int layer) {
  if (m.hybrid.enabled()) return hybrid_layer_parameters(m, c, layer);
  return c.attention_per_layer + norm_parameters_per_layer(m) +
         (m.layer_is_moe(layer) ? c.moe_mlp_per_layer : c.dense_mlp_per_layer);
}

int padded_vocab(int vocab, int tensor_parallel) {
  const int multiple = 128 * tensor_parallel;
  return (vocab + multiple - 1) / multiple * multiple;
}

FlopsPerToken training_flops_per_token(const ModelSpec& m, int seq, int vocab_padded) {
  if (m.hybrid.enabled()) return hybrid_training_flops_per_token(m, seq, vocab_padded);
  FlopsPerToken f;
  const double h = m.hidden;
  double projections = 0, core_per_full_layer = 0;
  if (m.mla) {
    const auto& s = m.mla_shape;
    const double n = m.heads, qk = s.qk_nope_head_dim, pe = s.qk_rope_head_dim, v = s.v_head_dim;
    const double q_term = s.q_lora_rank > 0 ? s.q_lora_rank * (h + n * (qk + pe) + 1) : h * n * (qk + pe);
    projections = 6 * (q_term + s.kv_lora_rank * (h + n * (qk + v) + 1) + h * pe + n * v * h);
    core_per_full_layer = 12.0 * (n * (qk + pe) + n * v) / 2.0;  // x span
  } else {
    const double q = m.q_dim(), kv = m.kv_dim();
    projections = 6 * (h * (q + 2 * kv) + q * h);
    core_per_full_layer = 12.0 * q;  // x span: forward 2 GEMMs x 2 FLOP, x3 for backward
  }
  for (int layer = 0; layer < m.layers; ++layer) {
    f.attention += core_per_full_layer * attended_span(seq, m.attention_window(layer));
    f.dense_matmul += projections;
    if (m.layer_is_moe(layer)) {
      f.dense_matmul += 6 * h * mlp_matrices(m) * (static_cast<double>(m.moe.expert_ffn) * m.moe.experts_per_token + m.moe.shared_ffn);
    } else {
      f.dense_matmul += 6 * h * mlp_matrices(m) * m.ffn;
    }
  }
  // Multi-token prediction (MLM training.py transformer_flops): each depth counts as one more layer of
  // the last decoder layer's kind, plus 6 (3h + 2h^2) for its norms and eh_proj, plus its own logits.
  const int last = m.layers - 1;
  for (int d = 0; d < m.mtp_layers; ++d) {
    f.attention += core_per_full_layer * attended_span(seq, m.attention_window(last));
    f.dense_matmul += projections + 6.0 * (3.0 * h + 2.0 * h * h);
    if (m.layer_is_moe(last)) {
      f.dense_matmul += 6 * h * mlp_matrices(m) * (static_cast<double>(m.moe.expert_ffn) * m.moe.experts_per_token + m.moe.shared_ffn);
    } else {
      f.dense_matmul += 6 * h * mlp_matrices(m) * m.ffn;
    }
  }
  f.logits = 6 * h * vocab_padded * (1.0 + m.mtp_layers);
  return f;
}

}  // namespace fmsim::workload
