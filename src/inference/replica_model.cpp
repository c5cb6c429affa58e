// One replica's memory and iteration time. Per layer of the largest pipeline stage: the GEMMs of the
// attention projections and of the MLP (or the routed experts as one grouped GEMM), the norms and the
// activation as HBM-bound kernels, the TP all-reduces (or EP all-to-alls) from the collectives part;
// attention itself is flash attention over the prefill chunks and a KV read for every decoding sequence.
#include "fmsim/inference/replica_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/inference/serving_constants.hpp"
#include "fmsim/units/format.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/moe_routing.hpp"
#include "hybrid_serving.hpp"

namespace fmsim::inference {
namespace {

compute::MathPrecision math_of(WeightPrecision precision) {
  switch (precision) {
    case WeightPrecision::bf16: return compute::MathPrecision::bf16;
    case WeightPrecision::fp8: return compute::MathPrecision::fp8;
    case WeightPrecision::fp4: return compute::MathPrecision::fp4;
  }
  return compute::MathPrecision::bf16;
}

std::string gib(double bytes) { return units::format_bytes(bytes); }

std::string number_text(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

}  // namespace

ReplicaModel::ReplicaModel(const ServeScenario& scenario, const PoolSpec& pool, const topology::ClusterGraph& cluster,
                           const std::vector<int>& tp_gpus, int stage_hop_gpu, const std::string& where)
    : scenario_(scenario), pool_(pool), compute_(scenario.cluster.gpu), math_(math_of(scenario.precision)) {
  const auto& m = scenario.model;
  const auto counts = workload::count_parameters(m);
  const double tp = pool.tp;
  stage_layers_ = (m.layers + pool.pp - 1) / pool.pp;
  moe_stage_layers_ = static_cast<int>(std::ceil(static_cast<double>(m.moe_layers()) * stage_layers_ / m.layers));
  if (m.hybrid.enabled()) {  // one stage (PP 1): the whole pattern
    using workload::HybridLayer;
    hybrid_ = {m.hybrid.count(HybridLayer::mamba), m.hybrid.count(HybridLayer::attention), m.hybrid.count(HybridLayer::mlp),
               m.hybrid.count(HybridLayer::moe)};
    mamba_shape_ = serving_mamba_shape(m.hybrid.mamba, pool.tp);
    mamba_forward_kernels_ = workload::ssd_forward_kernels(mamba_shape_, tp);
  }
  // Layers with a KV cache: every layer, or a hybrid model's attention layers.
  const int kv_layers = m.hybrid.enabled() ? hybrid_.attention : m.layers;
  if (pool.tp > 1) {
    tp_layout_ = collectives::make_layout(cluster, tp_gpus);
    has_tp_layout_ = true;
    if (pool.expert_parallel) ep_send_share_ = workload::domain_send_share(m.moe, static_cast<int>(tp_layout_.island_ranks.size()));
  }
  if (stage_hop_gpu >= 0) {
    const bool same_domain = cluster.domain_of_node(cluster.node_of_gpu(tp_gpus.front())) ==
                             cluster.domain_of_node(cluster.node_of_gpu(stage_hop_gpu));
    stage_hop_Bps_ = same_domain ? scenario.cluster.gpu.nvlink_bandwidth_per_direction_Bps : scenario.cluster.rail_bandwidth_Bps();
    stage_hop_latency_s_ = same_domain ? scenario.cluster.nvlink.message_latency_s : scenario.cluster.network.message_latency_s;
  }

  // Heads each rank computes: a TP share, or all of them for its own sequences with DP attention (the
  // batch's attention work then splits over the ranks instead, breakdown()).
  const double head_split = pool.dp_attention ? 1.0 : tp;
  // KV cache per token. GQA: K and V of the KV heads this rank holds (replicated when TP exceeds them).
  // MLA: the compressed latent plus the rotary key, which every TP rank keeps whole.
  const double kv_element = scenario.kv_bytes_per_element;
  double per_layer_unique = 0, per_layer_gpu = 0;
  if (m.mla) {
    per_layer_unique = (m.mla_shape.kv_lora_rank + m.mla_shape.qk_rope_head_dim) * kv_element;
    per_layer_gpu = per_layer_unique;
    attention_width_per_gpu_ = m.heads * (m.mla_shape.qk_nope_head_dim + m.mla_shape.qk_rope_head_dim + m.mla_shape.v_head_dim) / head_split;
  } else {
    per_layer_unique = 2.0 * m.kv_heads * m.head_dim * kv_element;
    per_layer_gpu = pool.dp_attention ? per_layer_unique : 2.0 * std::max(1.0, m.kv_heads / tp) * m.head_dim * kv_element;
    attention_width_per_gpu_ = m.heads * 2.0 * m.head_dim / head_split;
  }
  kv_bytes_per_token_layer_gpu_ = per_layer_gpu;
  kv_transfer_bytes_per_token_ = per_layer_unique * kv_layers;

  // Weights of the largest stage: layers sharded over TP (experts over the TP x DP ranks with EP, which
  // is the same count per GPU), embedding and LM head vocabulary-parallel and kept in BF16.
  const double weight_bytes = compute::operand_bytes(math_);
  const int moe_layers = moe_stage_layers_, dense_layers = stage_layers_ - moe_stage_layers_;
  const double attention_params = pool.dp_attention ? counts.attention_per_layer : counts.attention_per_layer / tp;
  // With the load balancer's redundant experts each rank holds (experts + redundant) / TP of them.
  const double redundant_params = m.is_moe() ? counts.expert_per_moe_layer * pool.redundant_experts / m.moe.experts : 0.0;
  double layer_params = stage_layers_ * attention_params + dense_layers * counts.dense_mlp_per_layer / tp +
                        moe_layers * (counts.moe_mlp_per_layer + redundant_params) / tp;
  if (m.hybrid.enabled()) {  // each layer its own mixer or MLP (and its norm), all sharded over TP
    layer_params = moe_layers * redundant_params / tp;
    for (int layer = 0; layer < m.layers; ++layer) layer_params += workload::hybrid_layer_parameters(m, counts, layer) / tp;
    // LatentMoE's two projections are whole on every rank, not sharded.
    layer_params += moe_layers * 2.0 * m.hidden * m.hybrid.moe_latent * (1.0 - 1.0 / tp);
  }
  const double vocab_params = pool.pp == 1 ? (counts.embedding + counts.output) / tp : std::max(counts.embedding, counts.output) / tp;
  memory_.weight_bytes_per_gpu = layer_params * weight_bytes + vocab_params * kActivationBytes;

  // Speculative decoding: the proposer's weights and KV (it shares the target's block pool: vLLM
  // allocates the draft layers' KV in the same blocks), and its shape for the draft passes.
  const SpeculativeSpec& spec = scenario.speculative;
  if (spec.enabled()) {
    spec_k_ = spec.k;
    spec_expected_ = spec.expected_tokens_per_step;
    const double fc_params = 2.0 * m.hidden * m.hidden;  // EAGLE fc / MTP eh_proj: [embedding; hidden] -> hidden
    if (spec.method == SpeculativeSpec::Method::draft) {
      // A whole smaller model at the target's TP and precision (vLLM draft_tensor_parallel_size).
      const auto& d = spec.draft_model;
      draft_model_ = d;
      draft_layers_ = d.layers;
      const auto draft_counts = workload::count_parameters(d);
      draft_weight_bytes_per_gpu_ = d.layers * (draft_counts.attention_per_layer + draft_counts.dense_mlp_per_layer) / tp * weight_bytes +
                                    (draft_counts.embedding + draft_counts.output) / tp * kActivationBytes;
      const double draft_layer_unique = 2.0 * d.kv_heads * d.head_dim * kv_element;
      draft_kv_bytes_per_token_gpu_ = d.layers * 2.0 * std::max(1.0, d.kv_heads / tp) * d.head_dim * kv_element;
      kv_transfer_bytes_per_token_ += d.layers * draft_layer_unique;
      draft_attention_width_per_gpu_ = d.heads * 2.0 * d.head_dim / tp;
    } else {
      // EAGLE: one decoder layer of the target's shape with a dense MLP (the EAGLE-1/2 heads published
      // for Llama, Qwen and DeepSeek targets), fed by an fc over [embedding; feature]. MTP (DeepSeek-V3
      // section 2.2): the model's own module, a block of the last layer's kind with eh_proj; vLLM and
      // SGLang run it k times for k drafts. Both share the target's embedding and LM head.
      draft_model_ = m;
      draft_layers_ = 1;
      draft_fc_in_ = 2.0 * m.hidden;
      const bool mtp = spec.method == SpeculativeSpec::Method::mtp;
      if (!mtp && draft_model_.ffn <= 0) draft_model_.ffn = m.moe.expert_ffn;
      draft_moe_layers_ = mtp && m.layer_is_moe(m.layers - 1) ? 1 : 0;
      draft_weight_bytes_per_gpu_ = mtp ? counts.mtp / tp * weight_bytes
                                        : (attention_params + workload::count_parameters(draft_model_).dense_mlp_per_layer / tp + fc_params) * weight_bytes;
      const int kv_layers = mtp ? m.mtp_layers : 1;
      draft_kv_bytes_per_token_gpu_ = kv_layers * per_layer_gpu;
      kv_transfer_bytes_per_token_ += kv_layers * per_layer_unique;
      draft_attention_width_per_gpu_ = attention_width_per_gpu_;
    }
    memory_.weight_bytes_per_gpu += draft_weight_bytes_per_gpu_;
  }

  // Activation workspace at the largest batch (vLLM profiles a forward pass of max_num_batched_tokens):
  // hidden state, residual and norm output, QKV, the MLP's gate/up output, and the sampler's logits.
  const double t_max = pool.engine.max_num_batched_tokens;
  const double mlp_width = m.is_moe() ? std::max<double>(m.ffn, static_cast<double>(m.moe.expert_ffn) * m.moe.experts_per_token)
                                      : static_cast<double>(m.ffn);
  // With DP attention a rank holds only its own share of the batch (t / TP tokens, whole attention
  // widths, its routed rows) and samples its own sequences over the whole vocabulary.
  const double rank_tokens = pool.dp_attention ? t_max / tp : t_max;
  double per_token = pool.dp_attention ? 3.0 * m.hidden + m.q_dim() + 2.0 * m.kv_dim() + 3.0 * mlp_width
                                       : 3.0 * m.hidden + (m.q_dim() + 2.0 * m.kv_dim()) / tp + 3.0 * mlp_width / tp;
  if (m.hybrid.enabled()) per_token += mamba_shape_.in_proj_width() / tp;  // a Mamba layer's z, x, B, C, dt
  memory_.activation_bytes_per_gpu = rank_tokens * per_token * kActivationBytes +
                                     pool.engine.max_num_seqs * static_cast<double>(m.vocab) / tp * kLogitBytes;
  memory_.reserve_bytes_per_gpu = kRuntimeReserve_bytes;
  const double usable = pool.engine.kv_free_memory_fraction > 0 ? scenario.cluster.gpu.hbm_bytes
                                                                 : scenario.cluster.gpu.hbm_bytes * pool.engine.gpu_memory_utilization;
  memory_.kv_bytes_per_gpu = usable - memory_.weight_bytes_per_gpu - memory_.activation_bytes_per_gpu - memory_.reserve_bytes_per_gpu;
  // A hybrid model's Mamba state under TensorRT-LLM: its MambaCacheManager holds a slot for each of
  // max_batch_size sequences, allocated apart from the KV cache (vLLM takes it from the KV pool instead, below).
  if (m.hybrid.enabled()) {
    memory_.mamba_state_bytes_per_sequence_per_gpu = mamba_state_bytes_per_sequence(m, tp, scenario.ssm_state_bytes_per_element);
  }
  if (m.hybrid.enabled() && pool.engine.kind == EngineKind::tensorrt_llm) {
    memory_.mamba_cache_bytes_per_gpu = pool.engine.max_num_seqs * memory_.mamba_state_bytes_per_sequence_per_gpu;
    memory_.kv_bytes_per_gpu -= memory_.mamba_cache_bytes_per_gpu;
  }
  // TensorRT-LLM: the KV cache takes a fraction of the memory free after the model is loaded.
  if (pool.engine.kv_free_memory_fraction > 0) memory_.kv_bytes_per_gpu *= pool.engine.kv_free_memory_fraction;
  memory_.kv_bytes_per_token_per_gpu = per_layer_gpu * (m.hybrid.enabled() ? kv_layers : stage_layers_) + draft_kv_bytes_per_token_gpu_;
  const double ranks_holding_distinct_sequences = pool.dp_attention ? tp : 1.0;
  const double tokens = std::floor(std::max(0.0, memory_.kv_bytes_per_gpu) / memory_.kv_bytes_per_token_per_gpu) *
                        ranks_holding_distinct_sequences;
  memory_.kv_blocks = static_cast<long long>(tokens / pool.engine.block_size);
  memory_.kv_capacity_tokens = memory_.kv_blocks * pool.engine.block_size;
  if (memory_.kv_blocks < 1) {
    const double required = memory_.weight_bytes_per_gpu + memory_.activation_bytes_per_gpu + memory_.reserve_bytes_per_gpu;
    throw ReplicaDoesNotFit(where + ": " + m.name + " does not fit: per GPU (TP " + std::to_string(pool.tp) + ", PP " +
                     std::to_string(pool.pp) + ") weights " + gib(memory_.weight_bytes_per_gpu) + " + activations " +
                     gib(memory_.activation_bytes_per_gpu) + " + runtime " + gib(memory_.reserve_bytes_per_gpu) +
                     " exceed " + gib(usable) + " (" + scenario.cluster.gpu.name +
                     (pool.engine.kv_free_memory_fraction > 0
                          ? " HBM, of which kv_cache_free_gpu_memory_fraction " + number_text(pool.engine.kv_free_memory_fraction) +
                                " of what is left goes to the KV cache"
                          : " HBM x gpu_memory_utilization " + number_text(pool.engine.gpu_memory_utilization)) +
                     "), leaving no KV cache; raise TP or PP, lower precision or max_num_batched_tokens",
                     required, usable);
  }
  // A hybrid model's Mamba state: one slot per running sequence from the same memory (vLLM's hybrid KV
  // cache manager allocates it as blocks of the pool, sized to the state), counted here in KV blocks.
  if (m.hybrid.enabled()) {
    if (pool.engine.kind != EngineKind::tensorrt_llm) {
      const double block_bytes = memory_.kv_bytes_per_token_per_gpu * pool.engine.block_size;
      memory_.state_blocks_per_sequence = static_cast<long long>(std::ceil(memory_.mamba_state_bytes_per_sequence_per_gpu / block_bytes));
    }
    state_transfer_bytes_per_sequence_ = mamba_state_bytes_per_sequence(m, 1.0, scenario.ssm_state_bytes_per_element);
  }
  // vLLM's num_gpu_blocks_override: the KV cache holds exactly this many blocks.
  if (pool.engine.num_gpu_blocks_override > 0) {
    memory_.kv_blocks = pool.engine.num_gpu_blocks_override;
    memory_.kv_capacity_tokens = memory_.kv_blocks * pool.engine.block_size;
  }
  // The largest iteration: the token budget, or the largest decode batch (max_num_seqs) padded up to
  // its CUDA graph (with speculative decoding, k + 1 rows per sequence, within the token budget).
  const int largest_padded = std::max(cuda_graph_batch(pool.engine, pool.engine.max_num_seqs),
                                      spec_k_ > 0 ? cuda_graph_batch(pool.engine, pool.engine.max_num_batched_tokens) : 0);
  const std::size_t table = static_cast<std::size_t>(std::max(pool.engine.max_num_batched_tokens, largest_padded)) + 1;
  by_tokens_.resize(table);
  split_by_tokens_.resize(table);
  known_.assign(table, 0);
  if (spec_k_ > 0) draft_by_rows_.assign(2 * table, -1.0);

  // KV offloading (vLLM kv_offloading_size, TensorRT-LLM host_cache_size): a host tier for cached
  // blocks, over the instance's host link (PCIe Gen4/Gen5, or NVLink-C2C to Grace memory on GB200/GB300;
  // catalog host_gpu_bandwidth). It pays when a token's KV comes back faster than its prefill runs.
  if (pool.engine.kv_offload_bytes > 0) {
    memory_.host_kv_bytes_per_gpu = pool.engine.kv_offload_bytes / pool.gpus_per_replica();
    const double host_tokens = std::floor(memory_.host_kv_bytes_per_gpu / memory_.kv_bytes_per_token_per_gpu) * ranks_holding_distinct_sequences;
    memory_.host_kv_blocks = static_cast<long long>(host_tokens / pool.engine.block_size);
  }
  memory_.host_link_Bps = scenario.cluster.instance.host_gpu_bandwidth_Bps;
  if (memory_.host_link_Bps > 0) memory_.reload_s_per_token = memory_.kv_bytes_per_token_per_gpu / memory_.host_link_Bps;
  {
    const int budget = pool.engine.max_num_batched_tokens;
    memory_.recompute_s_per_token = per_token_count(budget).gpu_s() * pool.pp / budget;
  }
}

double ReplicaModel::allreduce_s(double bytes) const {
  if (!has_tp_layout_ || bytes <= 0) return 0.0;
  return collectives::collective_cost(tp_layout_, collectives::Op::all_reduce, bytes).time_s;
}

double ReplicaModel::alltoall_s(double bytes) const {
  if (!has_tp_layout_ || bytes <= 0) return 0.0;
  return collectives::collective_cost(tp_layout_, collectives::Op::alltoall, bytes).time_s;
}

double ReplicaModel::ep_imbalance(double tokens) const {
  if (!pool_.expert_parallel || pool_.tp < 2) return 1.0;
  if (pool_.expert_load_imbalance > 0) return pool_.expert_load_imbalance;
  return workload::random_routing_imbalance(pool_.tp, tokens * scenario_.model.moe.experts_per_token / pool_.tp);
}

const MoeLayerSplit& ReplicaModel::moe_split(int tokens) const {
  per_token_count(tokens);
  return split_by_tokens_[static_cast<std::size_t>(std::clamp(tokens, 0, static_cast<int>(split_by_tokens_.size()) - 1))];
}

void ReplicaModel::overlap_two_batches(IterationBreakdown& parts, int padded, double attention_per_layer_s, bool prefill) const {
  // SGLang's operations with yield points (LMSYS large-scale EP blog, 2025-05-05): each micro-batch runs
  // [attention] yield [dispatch, experts] yield [combine]; on the compute stream A's and B's pieces
  // alternate and each waits for its own all-to-all, which runs on the communication stream beside the
  // other micro-batch's piece: B's attention beside A's dispatch, A's experts beside B's dispatch, B's
  // experts beside A's combine, A's next attention beside B's combine. A MoE layer costs the sum over
  // the four pairs of the longer of the two. Prefill iterations use DeepEP's normal kernels, which hold
  // kDeepepNormalKernelSms SMs while they run: a compute piece slows by that share while it overlaps.
  const MoeLayerSplit& first = moe_split((padded + 1) / 2);
  const MoeLayerSplit& second = moe_split(padded / 2);
  const double a = (first.attention_side_s + second.attention_side_s + attention_per_layer_s) / 2;
  const double e = (first.expert_side_s + second.expert_side_s) / 2;
  const double d = (first.dispatch_s + second.dispatch_s) / 2, c = (first.combine_s + second.combine_s) / 2;
  const double sms = scenario_.cluster.gpu.sm_count;
  const double slow = prefill ? sms / std::max(1.0, sms - kDeepepNormalKernelSms) - 1.0 : 0.0;
  double slowed = 0, layer = 0;
  for (const auto& [x, y] : {std::pair{a, d}, std::pair{e, d}, std::pair{e, c}, std::pair{a, c}}) {
    const double extra = std::min(x, y) * slow;
    slowed += extra;
    layer += std::max(x + extra, y);
  }
  const double layers = moe_stage_layers_;
  const double compute = parts.gemm_s + parts.attention_s + parts.memory_ops_s;
  // Layers without experts keep their own collectives exposed (none with DP attention).
  const double other_communication = std::max(0.0, parts.communication_s - layers * 2 * (d + c));
  const double scale = compute > 0 ? 1.0 + layers * slowed / compute : 1.0;
  parts.gemm_s *= scale;
  parts.attention_s *= scale;
  parts.memory_ops_s *= scale;
  parts.communication_s = other_communication + layers * (layer - 2 * (a + e) - slowed);
}

double ReplicaModel::draft_pass_s(int rows) const {
  // Two memoized values per row count: [2 r] the layers and fc alone (the proposer's prefill), [2 r + 1]
  // a whole draft pass (plus the LM head and the greedy pick over the vocabulary slice).
  const auto index = 2 * static_cast<std::size_t>(std::clamp(rows, 0, static_cast<int>(draft_by_rows_.size() / 2) - 1));
  if (draft_by_rows_[index] < 0) {
    const auto& d = draft_model_;
    IterationBreakdown parts;
    double linear = rows > 0 ? linear_costs(d, draft_layers_, draft_moe_layers_, rows, parts) : 0.0;
    if (rows > 0 && draft_fc_in_ > 0)
      linear += compute_.gemm_s({static_cast<double>(rows), static_cast<double>(d.hidden), draft_fc_in_}, math_) / compute::model_gemm_rate(math_);
    const double vocab_slice = d.vocab / static_cast<double>(pool_.tp);
    const double head = rows > 0 ? compute_.gemm_s({static_cast<double>(rows), vocab_slice, static_cast<double>(d.hidden)}, compute::MathPrecision::bf16) +
                                       compute_.memory_s(2.0 * rows * vocab_slice * kLogitBytes)
                                 : 0.0;
    draft_by_rows_[index] = linear;
    draft_by_rows_[index + 1] = linear + head;
  }
  return draft_by_rows_[index + 1];
}

double ReplicaModel::linear_costs(const workload::ModelSpec& m, int layers, int moe_layers_here, int tokens, IterationBreakdown& out,
                                  MoeLayerSplit* split) const {
  const double tp = pool_.tp, t = tokens;
  // Every expert-parallel rank waits at the combine for the busiest: its rows are `imbalance` x the mean.
  const double imbalance = m.is_moe() ? ep_imbalance(t) : 1.0;
  // FP4 GEMMs in a model's step run below the single-GEMM rate (compute::kFp4ModelGemmRate).
  auto gemm = [&](double rows, double k, double n) { return compute_.gemm_s({rows, n, k}, math_) / compute::model_gemm_rate(math_); };
  // Attention projections: sharded over TP, or whole on each rank for its own sequences (DP attention).
  const double attn_rows = pool_.dp_attention ? std::ceil(t / tp) : t;
  const double attn_split = pool_.dp_attention ? 1.0 : tp;
  double attention_gemms = 0;
  if (m.mla) {
    const auto& a = m.mla_shape;
    const double q_width = m.heads * (a.qk_nope_head_dim + a.qk_rope_head_dim) / attn_split;
    attention_gemms += a.q_lora_rank > 0 ? gemm(attn_rows, m.hidden, a.q_lora_rank) + gemm(attn_rows, a.q_lora_rank, q_width)
                                         : gemm(attn_rows, m.hidden, q_width);
    attention_gemms += gemm(attn_rows, m.hidden, a.kv_lora_rank + a.qk_rope_head_dim);
    attention_gemms += gemm(attn_rows, a.kv_lora_rank, m.heads * (a.qk_nope_head_dim + a.v_head_dim) / attn_split);
    attention_gemms += gemm(attn_rows, m.heads * a.v_head_dim / attn_split, m.hidden);
  } else {
    attention_gemms += gemm(attn_rows, m.hidden, (m.q_dim() + 2.0 * m.kv_dim()) / attn_split);
    attention_gemms += gemm(attn_rows, m.q_dim() / attn_split, m.hidden);
  }
  const double gate = m.gated_mlp ? 2.0 : 1.0;
  const double dense_mlp = gemm(t, m.hidden, gate * m.ffn / tp) + gemm(t, m.ffn / tp, m.hidden);
  double moe_mlp = 0;
  const double expert_width = m.hybrid.moe_latent > 0 ? m.hybrid.moe_latent : m.hidden;  ///< rows the experts take and return
  if (m.is_moe()) {
    // Routed experts: each GPU holds experts / TP of them (whole with EP, or every expert's 1/TP slice
    // without); an expert is active when at least one token picks it; one grouped GEMM per matrix, whose
    // active experts' tiles share the SMs' waves (the engines' fused MoE kernels: one launch for all
    // experts, not one GEMM per expert). Each active expert gets the mean row count.
    // With redundant experts (EPLB) the tokens of a logical expert split evenly over its copies.
    const double experts = m.moe.experts + pool_.redundant_experts, k = m.moe.experts_per_token;
    const double active_fraction = 1.0 - std::pow(1.0 - k / experts, t);
    const double local = pool_.expert_parallel ? experts / tp : experts;
    const double width = pool_.expert_parallel ? m.moe.expert_ffn : m.moe.expert_ffn / tp;
    const double rows = t * k / (experts * active_fraction) * imbalance;
    const double active = local * active_fraction;
    // The engine's MoE kernels (moe_backend.hpp): a fixed cost per block, their GEMMs' slowdown against
    // dense tiles, and a floor at the rate they stream the active experts' weights. The tiles run at the
    // model's in-step rate (FP4: compute::kFp4ModelGemmRate); the operands' HBM term at the GEMM model's
    // plain rate, the backends' measured stream floors standing for how fast they really stream (so the
    // ideal grouped_gemm never costs more than a measured backend).
    const MoeBackendCosts backend = moe_backend_costs(pool_.engine.moe_backend, math_ == compute::MathPrecision::fp4);
    const double rate = compute::model_gemm_rate(math_);
    const double memory_rate = 1.0;
    const double weight_bytes = active * expert_width * width * compute::operand_bytes(math_);
    auto grouped = [&](double k_dim, double n_dim, double bytes) {
      const compute::GemmParts p = compute_.grouped_gemm_parts(active, {rows, n_dim, k_dim}, math_);
      return MoeGemm{{p.compute_s / rate, p.memory_s / memory_rate, p.overhead_s / rate}, bytes};
    };
    // The module's other kernels fmsim prices apart (router GEMM; two permutation passes and the
    // activation, below) launch inside the backend's measured fixed cost.
    const double other_launches = compute::kGemmFixedOverhead_s / rate + 3 * compute::kMemoryKernelOverhead_s;
    moe_mlp = moe_experts_s(backend, {grouped(expert_width, gate * width, gate * weight_bytes), grouped(width, expert_width, weight_bytes)},
                            scenario_.cluster.gpu.hbm_bandwidth_Bps, other_launches);
    // LatentMoE (Nemotron 3 Super/Ultra): the routed experts work in the latent width, between a down
    // and an up projection of the hidden state (hybrid_pattern.hpp).
    const double latent = m.hybrid.moe_latent;
    // The projections are replicated on every rank (vLLM's ReplicatedLinear; the experts take whole rows).
    if (latent > 0) moe_mlp += gemm(t, m.hidden, latent) + gemm(t, latent, m.hidden);
    moe_mlp += gemm(t, m.hidden, m.moe.experts);  // router
    if (m.moe.shared_ffn > 0) moe_mlp += gemm(t, m.hidden, gate * m.moe.shared_ffn / tp) + gemm(t, m.moe.shared_ffn / tp, m.hidden);
  }
  const int moe_layers = moe_layers_here, dense_layers = layers - moe_layers_here;
  // A hybrid model's layers each hold one block (hybrid_serving.hpp): attention, a Mamba mixer, an MLP or
  // a MoE block; a transformer layer holds attention and an MLP or MoE block.
  const bool hybrid = m.hybrid.enabled();
  const double attention_blocks = hybrid ? hybrid_.attention : layers;
  const double dense_blocks = hybrid ? hybrid_.mlp : dense_layers, moe_blocks = hybrid ? hybrid_.moe : moe_layers;
  const double mamba_blocks = hybrid ? hybrid_.mamba : 0;
  const auto& mamba = mamba_shape_;
  out.gemm_s += attention_blocks * attention_gemms + dense_blocks * dense_mlp + moe_blocks * moe_mlp;
  // Mamba: in_proj (z, x, B, C, dt of this rank's heads and groups) and out_proj, sharded over TP.
  if (hybrid) out.gemm_s += mamba_blocks * (gemm(t, m.hidden, mamba.in_proj_width() / tp) + gemm(t, mamba.inner() / tp, m.hidden));
  // Two fused norm + residual kernels and one activation kernel per layer, HBM-bound. With DP attention a
  // rank holds only its own sequences' hidden states (t / TP rows).
  const double mlp_width = m.is_moe() ? m.moe.expert_ffn * m.moe.experts_per_token / tp : m.ffn / tp;
  const double norms = 2 * compute_.memory_s(3.0 * attn_rows * m.hidden * kActivationBytes);
  const double activation = compute_.memory_s(1.5 * gate * t * mlp_width * kActivationBytes);
  if (!hybrid) {
    out.memory_ops_s += layers * (norms + activation);
  } else {  // one norm per block; the MLP's and the experts' activations; Mamba's gated RMSNorm over d_inner
    const double dense_activation = compute_.memory_s(1.5 * gate * t * m.ffn / tp * kActivationBytes);
    const double gated_norm = compute_.memory_s(3.0 * t * mamba.inner() / tp * kActivationBytes);
    out.memory_ops_s += (attention_blocks + dense_blocks + moe_blocks + mamba_blocks) * norms / 2 + dense_blocks * dense_activation +
                        moe_blocks * activation + mamba_blocks * gated_norm;
  }
  // MoE: the tokens' hidden states are permuted into expert order before the grouped GEMMs and
  // un-permuted and weighted back after (each pass reads and writes t x k rows; TensorRT-LLM's
  // moePermute / finalizeMoeRouting, vLLM's moe_align + moe_sum kernels), HBM-bound.
  double permutation = 0;
  if (m.is_moe()) {
    const double routed_rows = (pool_.dp_attention ? std::ceil(t / tp) : t) * m.moe.experts_per_token;
    permutation = 2 * compute_.memory_s(2.0 * routed_rows * expert_width * kActivationBytes);
    out.memory_ops_s += moe_blocks * permutation;
  }
  // TP: an all-reduce after attention (unless DP attention) and after the MLP; EP: dispatch and combine.
  const double hidden_bytes = t * m.hidden * kActivationBytes;
  const double attention_comm = pool_.dp_attention ? 0.0 : allreduce_s(hidden_bytes);
  const double dense_comm = allreduce_s(hidden_bytes);
  // EP dispatch and combine: each rank sends its own share of the batch (t / TP tokens, k copies each),
  // not the replica's whole batch (the all-to-all's size is the bytes one rank sends). The dispatch
  // carries the tokens already quantized to the expert GEMMs' input precision (DeepEP's FP8 dispatch,
  // TensorRT-LLM's NVFP4 all-to-all); the combine returns BF16 (DeepEP README: "FP8 dispatching and
  // BF16 combining").
  // Across NVLink domains the dispatcher sends a token once to each domain holding one of its experts
  // and fans it out there (DeepEP's internode kernels), the combine sums within the domain before
  // returning: both carry domain_send_share of the one-copy-per-expert bytes (the all-to-all is priced
  // whole at that share, being bound by the cross-domain links, as in training).
  const double rank_share_rows = std::ceil(t / tp) * m.moe.experts_per_token * ep_send_share_ * imbalance;
  const double dispatch_bytes = rank_share_rows * expert_width * compute::operand_bytes(math_);
  const double combine_bytes = rank_share_rows * expert_width * kActivationBytes;
  const double dispatch = pool_.expert_parallel ? alltoall_s(dispatch_bytes) : 0.0;
  const double combine = pool_.expert_parallel ? alltoall_s(combine_bytes) : 0.0;
  const double moe_comm = pool_.expert_parallel ? dispatch + combine : dense_comm;
  // A Mamba block's out_proj is row-parallel: an all-reduce after it, like attention's.
  out.communication_s += attention_blocks * attention_comm + dense_blocks * dense_comm + moe_blocks * moe_comm + mamba_blocks * dense_comm;
  if (split) *split = {attention_gemms + norms, moe_mlp + activation + permutation, dispatch, combine};
  return out.total_s();
}

const IterationBreakdown& ReplicaModel::per_token_count(int tokens) const {
  const auto index = static_cast<std::size_t>(std::clamp(tokens, 0, static_cast<int>(by_tokens_.size()) - 1));
  if (!known_[index]) {
    IterationBreakdown parts;
    if (tokens > 0) linear_costs(scenario_.model, stage_layers_, moe_stage_layers_, tokens, parts, &split_by_tokens_[index]);
    by_tokens_[index] = parts;
    known_[index] = 1;
  }
  return by_tokens_[index];
}

std::vector<std::pair<std::string, double>> named_parts(const IterationBreakdown& parts) {
  return {{"gemm", parts.gemm_s},           {"attention", parts.attention_s}, {"memory_ops", parts.memory_ops_s},
          {"communication", parts.communication_s}, {"sampling", parts.sampling_s}, {"draft", parts.draft_s},
          {"kv_load", parts.kv_load_s},     {"host", parts.total_s() - parts.gpu_s()}};
}

int cuda_graph_batch(const EngineOptions& engine, int decode_tokens) {
  if (!engine.cuda_graph_padding || engine.cuda_graph_batch_sizes.empty()) return decode_tokens;
  const auto& sizes = engine.cuda_graph_batch_sizes;
  const auto found = std::lower_bound(sizes.begin(), sizes.end(), decode_tokens);
  return found == sizes.end() ? decode_tokens : *found;
}

IterationBreakdown ReplicaModel::breakdown(const BatchShape& batch) const {
  const auto& m = scenario_.model;
  const auto& engine = pool_.engine;
  const int tokens = batch.tokens();
  if (tokens <= 0) return {};
  // A decode-only iteration replays a CUDA graph captured for a batch at least as large: the GEMMs,
  // norms and collectives run on the padded rows (the engines pad with dummy sequences), attention on
  // the real ones. Iterations with prefill chunks run eagerly, unpadded.
  const int padded = batch.prefill_tokens == 0 ? cuda_graph_batch(engine, tokens) : tokens;
  if (padded >= static_cast<int>(by_tokens_.size())) {
    throw InternalError("inference: an iteration of " + std::to_string(tokens) + " tokens exceeds max_num_batched_tokens");
  }
  // Two-batch overlap: the GEMMs, memory-bound kernels and collectives run as two half batches.
  const bool two_batches = pool_.two_batch_overlap && padded >= 2;
  IterationBreakdown parts = per_token_count(two_batches ? (padded + 1) / 2 : padded);
  if (two_batches) {
    const IterationBreakdown& second = per_token_count(padded / 2);
    parts.gemm_s += second.gemm_s;
    parts.memory_ops_s += second.memory_ops_s;
    parts.communication_s += second.communication_s;
  }
  parts.padded_tokens = padded;
  // Attention: prefill chunks at flash-attention efficiency, decode as a read of each sequence's KV.
  const double ranks = pool_.dp_attention ? pool_.tp : 1.0;
  const double prefill_flops = 2.0 * batch.prefill_attention_pairs * attention_width_per_gpu_ / ranks;
  const double decode_bytes = batch.decode_context_tokens * kv_bytes_per_token_layer_gpu_ / ranks;
  double per_layer = 0;
  if (prefill_flops > 0) per_layer += compute_.attention_s(prefill_flops, false, batch.prefill_attention_pairs / std::max(1, batch.prefill_tokens), 0, false,
                                                     m.attention_head_dim());
  if (decode_bytes > 0) per_layer += compute_.memory_s(decode_bytes);
  parts.attention_s = stage_layers_ * per_layer;
  // A hybrid model: attention in its attention layers only; its Mamba layers' conv1d and SSD scan over the
  // prompt chunks and the decoding sequences' state updates are its sequence mixing (hybrid_serving.hpp).
  if (m.hybrid.enabled()) {
    const double tp = pool_.tp;
    parts.attention_s = hybrid_.attention * per_layer +
                        hybrid_.mamba * (mamba_prefill_conv_s(compute_, mamba_shape_, tp, batch.prefill_tokens) +
                                         mamba_prefill_scan_s(compute_, mamba_forward_kernels_, batch.prefill_tokens) +
                                         mamba_decode_update_s(compute_, mamba_shape_, tp, batch.decode_tokens,
                                                               scenario_.ssm_state_bytes_per_element));
  }
  // A pipeline runs its stages one after the other for a batch (no micro-batch interleaving), with a
  // send of the hidden states between stages.
  // Two-batch overlap: one micro-batch's all-to-all runs beside the other's compute; only the exposed
  // part stays as communication.
  if (two_batches) overlap_two_batches(parts, padded, per_layer, batch.prefill_tokens > 0);
  const double stages = pool_.pp;
  parts.gemm_s *= stages;
  parts.attention_s *= stages;
  parts.memory_ops_s *= stages;
  parts.communication_s *= stages;
  if (pool_.pp > 1) {
    parts.communication_s += (stages - 1) * (stage_hop_latency_s_ + tokens * m.hidden * kActivationBytes / stage_hop_Bps_);
  }
  // LM head on the sampled rows (vocabulary-parallel, BF16), then the sampler: the FP32 logits of each
  // row over the rank's vocabulary slice are written and read back (softmax / argmax / top-k), HBM-bound.
  // Speculative decoding: the proposer drafts k tokens for each decoding sequence, one pass per token
  // (its layers at the graph-padded batch, reading its own KV), and runs over the prompt chunks; the
  // target's pass above already covers k + 1 rows per sequence, and samples (rejection sampling) on all.
  if (spec_k_ > 0) {
    double draft = 0;
    if (batch.draft_sequences > 0) {
      const double kv_read = compute_.memory_s(batch.decode_context_tokens * draft_kv_bytes_per_token_gpu_ / ranks);
      draft += spec_k_ * (draft_pass_s(cuda_graph_batch(engine, batch.draft_sequences)) + kv_read);
    }
    if (batch.prefill_tokens > 0) {
      draft_pass_s(batch.prefill_tokens);
      draft += draft_by_rows_[2 * static_cast<std::size_t>(std::min(batch.prefill_tokens, static_cast<int>(draft_by_rows_.size() / 2) - 1))];
      const double flops = 2.0 * batch.prefill_attention_pairs * draft_attention_width_per_gpu_ / ranks;
      if (flops > 0)
        draft += draft_layers_ * compute_.attention_s(flops, false, batch.prefill_attention_pairs / batch.prefill_tokens, 0, false,
                                                      draft_model_.attention_head_dim());
    }
    parts.draft_s = draft;
  }
  // Offloaded prefix blocks found in host memory are copied back over the host link before the forward
  // (serialized with it: vLLM's offloading connector starts the load when it schedules the request).
  if (batch.host_load_tokens > 0) parts.kv_load_s = batch.host_load_tokens * memory_.reload_s_per_token;
  const int sampled = batch.sampled_rows + spec_k_ * batch.draft_sequences + (padded - tokens);
  if (sampled > 0) {
    const double vocab_slice = m.vocab / static_cast<double>(pool_.tp);
    parts.gemm_s += compute_.gemm_s({static_cast<double>(sampled), vocab_slice, static_cast<double>(m.hidden)},
                                    compute::MathPrecision::bf16);
    parts.sampling_s = compute_.memory_s(2.0 * sampled * vocab_slice * kLogitBytes);
  }
  // Host: a fixed cost per iteration, bookkeeping per scheduled sequence, and a response per token
  // returned to a client (every sampled token when streaming, else one per finished request).
  // With DP attention each rank runs its own scheduler over its own sequences (TensorRT-LLM's
  // attention DP, SGLang's DP attention): the host work splits over the TP ranks.
  const double host_ranks = pool_.dp_attention ? pool_.tp : 1.0;
  const double sequences = std::ceil((batch.decode_tokens - spec_k_ * batch.draft_sequences + batch.prefill_sequences) / host_ranks);
  const double responses = std::ceil((engine.stream_tokens ? batch.sampled_rows : batch.finishing_rows) / host_ranks);
  parts.overhead_s = engine.iteration_overhead_s + engine.host_per_sequence_s * sequences + engine.response_per_token_s * responses;
  parts.host_overlapped = engine.overlap_scheduler;
  return parts;
}

double ReplicaModel::iteration_s(const BatchShape& batch) const { return breakdown(batch).total_s(); }

}  // namespace fmsim::inference
