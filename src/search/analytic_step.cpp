// The search's analytic tier (analytic_step.hpp).
#include "fmsim/search/analytic_step.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>

#include "fmsim/collectives/cost.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/collectives/tuning.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/low_precision.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/trace_builder.hpp"
#include "../workload/trace_builder_internal.hpp"

namespace fmsim::search {

namespace tuning = collectives::tuning;

using workload::Category;
using workload::NodeType;

std::vector<std::pair<std::string, double>> AnalyticStep::terms() const {
  return {{"compute", compute_s},   {"tp_comm", tp_comm_s}, {"cp_comm", cp_comm_s}, {"ep_comm", ep_comm_s},
          {"pp_comm", pp_comm_s},   {"dp_comm", dp_comm_s}, {"optimizer", optimizer_s}, {"host", 0.0}, {"bubble", bubble_s}};
}

AnalyticModel::AnalyticModel(const topology::ClusterSpec& cluster) : cluster_(topology::build_cluster_graph(cluster)) {}

double AnalyticModel::collective_s(const std::vector<int>& gpus, int op, double bytes) {
  if (gpus.size() < 2 || bytes <= 0) return 0.0;
  auto key = std::make_tuple(gpus, op, bytes);
  auto it = collectives_.find(key);
  if (it != collectives_.end()) return it->second;
  const auto layout = collectives::make_layout(cluster_, gpus);
  const double t = collectives::collective_cost(layout, static_cast<collectives::Op>(op), bytes).time_s;
  collectives_.emplace(std::move(key), t);
  return t;
}

/// A pipeline send as the replay costs it on an idle fabric (NetworkModel::fill_p2p).
double AnalyticModel::p2p_s(int src_gpu, int dst_gpu, double bytes) const {
  const auto& spec = cluster_.spec;
  const auto base = tuning::base_latency_s(collectives::Algorithm::ring, collectives::Protocol::simple);
  const int src_node = cluster_.node_of_gpu(src_gpu), dst_node = cluster_.node_of_gpu(dst_gpu);
  if (src_node / spec.nvlink_domain_nodes == dst_node / spec.nvlink_domain_nodes) {
    return base + tuning::nvlink_step_latency_s(collectives::Algorithm::ring, collectives::Protocol::simple) +
           bytes / (spec.gpu.nvlink_bandwidth_per_direction_Bps * tuning::kNvlinkCopyEfficiency);
  }
  return base + spec.fabric.message_latency_s + bytes / spec.rail_bandwidth_Bps();
}

/// One layer's forward and backward on rank 0, emitted by the trace builder's layer code and timed along
/// their critical path: each node starts when its dependencies and the previous node of its stream end.
const AnalyticModel::LayerTime& AnalyticModel::layer_time(const workload::Scenario& s, int layer) {
  const auto& p = s.parallelism;
  const auto& t = s.training;
  const auto& m = s.model;
  const int kind = m.hybrid.enabled() ? static_cast<int>(m.hybrid.kind(layer)) : -1;
  // Transformer Engine's weight casts (low_precision.hpp): the chunk's first micro-batch makes them, the
  // others under disable_parameter_transpose_cache; one layer's forward carries their mean per micro-batch.
  const double cast_later = workload::weight_cast_bytes_per_element(t, s.cluster.gpu.sm_version, false);
  const double cast_mean =
      cast_later + (workload::weight_cast_bytes_per_element(t, s.cluster.gpu.sm_version, true) - cast_later) / std::max(1, p.microbatches);
  char key[400];
  std::snprintf(key, sizeof key, "%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%d|%.6g", p.tp, p.cp, p.ep, p.etp,
                m.is_moe() ? p.dp : 0, p.sequence_parallel, p.micro_batch, t.seq, static_cast<int>(t.precision),
                static_cast<int>(t.fp8_recipe), static_cast<int>(t.recompute), t.tp_comm_overlap, static_cast<int>(t.moe_dispatcher),
                t.moe_shared_expert_overlap, t.overlap_moe_expert_parallel_comm, kind, m.layer_is_moe(layer),
                t.layer_in_fp8(layer, m.layers), static_cast<int>(p.cp_comm), static_cast<int>(t.fine_tuning.workload),
                t.recompute_modules.core_attn + 2 * t.recompute_modules.mlp + 4 * t.recompute_modules.moe_act +
                    8 * t.recompute_modules.layernorm + 16 * t.recompute_modules.moe,
                static_cast<int>(std::min<double>(workload::detail::attention_kernel_keys(s, layer), 1e9)), t.fp8_dot_product_attention,
                cast_mean);
  auto found = layers_.find(key);
  if (found != layers_.end()) return found->second;

  workload::Trace trace;
  trace.world = p.world();
  workload::detail::TraceWriter w(s, trace);
  // Communicators of rank 0 (tp, cp, dp coordinates 0; packed placement: rank r on GPU r), as RankBuilder
  // makes them.
  workload::detail::Communicators c;
  auto group = [&](int stride, int size) {
    std::vector<int> ranks;
    for (int i = 0; i < size; ++i) ranks.push_back(i * stride);
    return ranks;
  };
  c.tp = w.comm("tp", group(1, p.tp));
  c.cp = w.comm("cp", group(p.tp, p.cp));
  if (m.is_moe()) {
    // Expert mesh over the tp x cp x dp ranks of stage 0: flat = etp_r + etp (ep_r + ep edp_r) is the rank.
    c.ep = w.comm("ep", group(p.etp, p.ep));
    c.edp = w.comm("edp", group(p.etp * p.ep, p.tp * p.cp * p.dp / (p.ep * p.etp)));
    c.etp = w.comm("etp", group(1, p.etp));
  }
  const int start = w.memory(0, "start", 0, {});
  w.weight_cast_bytes = cast_mean;
  const int forward_end = workload::detail::emit_layer_forward(w, 0, c, layer, start);
  w.weight_cast_bytes = cast_later;  // recomputed forward GEMMs
  const int backward_end = workload::detail::emit_layer_backward(w, 0, c, layer, forward_end);
  w.weight_cast_bytes = 0;

  const auto& gpu = s.cluster.gpu;
  std::vector<double> end(trace.nodes.size(), 0.0), duration(trace.nodes.size(), 0.0);
  std::vector<int> cause(trace.nodes.size(), -1);
  std::map<std::string, int> last_on_stream;
  for (const auto& n : trace.nodes) {
    double begin = 0;
    auto wait_for = [&](int dep) {
      if (dep >= 0 && end[dep] > begin) begin = end[dep], cause[n.id] = dep;
    };
    for (int dep : n.deps) wait_for(dep);
    if (!n.stream.empty()) {
      auto it = last_on_stream.find(n.stream);
      if (it != last_on_stream.end()) wait_for(it->second);
      last_on_stream[n.stream] = n.id;
    }
    if (n.type == NodeType::comp) {
      duration[n.id] = training::compute_node_s(n, gpu);
    } else if (n.type == NodeType::coll) {
      std::vector<int> gpus = trace.comms[n.comm].ranks;  // packed placement: rank = GPU
      duration[n.id] = collective_s(gpus, static_cast<int>(n.op), n.comm_bytes / n.comm_bandwidth_share);
    }
    end[n.id] = begin + duration[n.id];
  }
  LayerTime lt;
  lt.forward_s = end[forward_end];
  lt.backward_s = end[backward_end] - end[forward_end];
  for (int node = backward_end; node >= 0; node = cause[node]) {
    lt.by_category_s[static_cast<int>(trace.nodes[node].category)] += duration[node];
  }
  return layers_.emplace(key, lt).first->second;
}

AnalyticStep AnalyticModel::step(const workload::Scenario& s) {
  const auto& p = s.parallelism;
  const auto& m = s.model;
  const auto& t = s.training;
  const compute::ComputeModel model(s.cluster.gpu);
  const auto stages = workload::pipeline_stages(m.layers, m.mtp_layers, p, s.file);
  const double tokens = static_cast<double>(p.micro_batch) * t.seq / p.cp;
  const int vocab = workload::padded_vocab(m.vocab, p.tp);
  const auto counts = workload::count_parameters(m);

  // Per physical stage: one micro-batch's forward + backward through all its chunks, and its parameters.
  std::vector<double> stage_s(p.pp, 0.0), stage_params(p.pp, 0.0), stage_expert_params(p.pp, 0.0), stage_backward_s(p.pp, 0.0);
  std::vector<std::array<double, 7>> stage_terms(p.pp, std::array<double, 7>{});
  // Layers of one class (same kind, precision and attention span) take the same time: look each class up once.
  if (layer_class_.empty()) {
    std::map<std::tuple<int, bool, bool, double>, int> classes;
    for (int layer = 0; layer < m.layers; ++layer) {
      const auto id = std::make_tuple(m.hybrid.enabled() ? static_cast<int>(m.hybrid.kind(layer)) : -1, m.layer_is_moe(layer),
                                      t.layer_in_fp8(layer, m.layers), workload::detail::attention_row_span(s, layer));
      layer_class_.push_back(classes.try_emplace(id, static_cast<int>(classes.size())).first->second);
    }
  }
  std::vector<const LayerTime*> by_class(m.layers, nullptr);
  for (std::size_t v = 0; v < stages.size(); ++v) {
    const int stage = static_cast<int>(v) % p.pp;
    for (int layer = stages[v].begin; layer < stages[v].end; ++layer) {
      const LayerTime*& cached = by_class[layer_class_[layer]];
      if (!cached) cached = &layer_time(s, layer);
      const LayerTime& lt = *cached;
      stage_s[stage] += lt.forward_s + lt.backward_s;
      stage_backward_s[stage] += lt.backward_s;
      for (int k = 0; k < 7; ++k) stage_terms[stage][k] += lt.by_category_s[k];
      const double experts = m.layer_is_moe(layer) ? counts.expert_per_moe_layer : 0.0;
      stage_params[stage] += (workload::layer_parameters(m, counts, layer) - experts) / p.tp;
      stage_expert_params[stage] += experts / (p.ep * p.etp);
    }
    const double embedding = static_cast<double>(vocab) * m.hidden / p.tp;
    if (stages[v].embedding) stage_params[stage] += embedding;
    if (stages[v].loss) {
      // Output layer (BF16: forward, data and weight gradients) and the cross-entropy over its logits.
      const double gemm = model.gemm_s({tokens, vocab / static_cast<double>(p.tp), static_cast<double>(m.hidden)}, compute::MathPrecision::bf16);
      const double loss = 3 * model.memory_s(tokens * vocab / p.tp * 4.0);
      stage_s[stage] += 3 * gemm + loss;
      stage_backward_s[stage] += 2 * gemm;
      stage_terms[stage][0] += 3 * gemm + loss;
      if (!m.tied_embeddings) stage_params[stage] += embedding;
    }
  }
  const int critical = static_cast<int>(std::max_element(stage_s.begin(), stage_s.end()) - stage_s.begin());
  double mean = 0;
  for (double x : stage_s) mean += x / p.pp;

  AnalyticStep out;
  const double mb = p.microbatches;
  out.compute_s = mb * stage_terms[critical][static_cast<int>(Category::compute)];
  out.tp_comm_s = mb * stage_terms[critical][static_cast<int>(Category::tp_comm)];
  out.cp_comm_s = mb * stage_terms[critical][static_cast<int>(Category::cp_comm)];
  out.ep_comm_s = mb * stage_terms[critical][static_cast<int>(Category::ep_comm)];
  // Anything on the layers' path not named above (e.g. a category the layer code adds later) counts as compute.
  out.compute_s += mb * stage_s[critical] - (out.compute_s + out.tp_comm_s + out.cp_comm_s + out.ep_comm_s);

  // Interleaved 1F1B: the warm-up and cool-down hold (pp - 1) / vp micro-batches' worth of a stage.
  if (p.pp > 1) {
    out.bubble_s = (p.pp - 1) * mean / p.vp;
    const double bytes = tokens / (p.sequence_parallel ? p.tp : 1) * m.hidden * workload::activation_bytes();
    const int stride = p.tp * p.cp * p.dp;  // the next stage's rank 0
    const double send = p2p_s(0, stride, bytes);
    // The sends of the warm-up and cool-down sit on the critical path; the steady state's overlap compute.
    out.pp_comm_s = 2.0 * (p.pp - 1) * send;
  }

  // Data parallelism: gradients reduced (and parameters gathered) in buckets over the dp x cp ranks.
  const bool shard = p.sharding != workload::Sharding::no_shard;
  const double grad_bytes = t.grad_reduce_in_fp32 ? 4.0 : 2.0;
  const double param_bytes = workload::param_gather_bytes_per_element(t);
  const double bucket = t.bucket_params > 0 ? t.bucket_params : std::max(4e7, 1e6 * p.dp * p.cp);
  const double dense = stage_params[critical], experts = stage_expert_params[critical];
  const std::vector<int> dp_group = [&] {
    std::vector<int> g;
    for (int i = 0; i < p.dp * p.cp; ++i) g.push_back(i * p.tp);
    return g;
  }();
  const int reduce = static_cast<int>(shard ? collectives::Op::reduce_scatter : collectives::Op::all_reduce);
  const int gather = static_cast<int>(collectives::Op::all_gather);
  auto dp_time = [&](double params, double bytes_per_param, int op) {
    if (params <= 0) return 0.0;
    const double buckets = std::max(1.0, std::ceil(params / bucket));
    return buckets * collective_s(dp_group, op, std::floor(params / buckets * bytes_per_param));
  };
  const double buckets = std::max(1.0, std::ceil(dense / bucket));
  const double reduce_all = dp_time(dense, grad_bytes, reduce);
  const double gather_all = shard ? dp_time(dense, param_bytes, gather) : 0.0;
  double dp = 0;
  // As the simulator's buckets run (trace_builder.cpp): with optim_grads and optim_grads_params the
  // gradients are reduce-scattered after every micro-batch's backward, and with optim_grads_params (ZeRO-3,
  // Megatron-FSDP) the parameters are all-gathered again for every micro-batch's forward and backward
  // pass; otherwise one reduction after the last backward and one gather per step.
  const bool grads_every_microbatch = p.sharding == workload::Sharding::optim_grads ||
                                      p.sharding == workload::Sharding::optim_grads_params;
  const bool params_every_pass = p.sharding == workload::Sharding::optim_grads_params;
  if (grads_every_microbatch || params_every_pass) {
    // The DP stream carries them all, one bucket behind the passes; what the micro-batches' compute cannot
    // hide is exposed, and at least the last bucket of each reduction and the first of each gather are.
    const double reduces = (grads_every_microbatch ? mb : 1.0) * reduce_all;
    const double gathers = params_every_pass ? 2.0 * mb * gather_all : (shard ? gather_all : 0.0);
    const double floor = (t.overlap_grad_reduce ? (grads_every_microbatch ? mb : 1.0) * reduce_all / buckets : reduces) +
                         (t.overlap_param_gather ? (params_every_pass ? 2.0 * mb : 1.0) * gather_all / buckets : gathers);
    dp += std::max(floor, reduces + gathers - mb * stage_s[critical]);
  } else {
    if (t.overlap_grad_reduce) {
      // The last bucket's reduction follows the last backward; the rest hide behind the last micro-batch's
      // backward unless they outlast it.
      const double window = stage_backward_s[critical];
      dp += reduce_all / buckets + std::max(0.0, reduce_all * (buckets - 1) / buckets - window);
    } else {
      dp += reduce_all;
    }
    if (shard) dp += t.overlap_param_gather ? gather_all / buckets : gather_all;
  }
  if (experts > 0) {
    std::vector<int> edp;
    for (int i = 0; i < p.tp * p.cp * p.dp / (p.ep * p.etp); ++i) edp.push_back(i * p.etp * p.ep);
    dp += t.overlap_grad_reduce ? 0.0 : buckets * collective_s(edp, reduce, std::floor(experts / buckets * grad_bytes));
  }
  out.dp_comm_s = dp;

  // Adam with FP32 master weights on this rank's shard (trace_builder.cpp optimizer_step).
  const int edp_size = std::max(1, p.tp * p.cp * p.dp / (p.ep * p.etp));
  const double local = shard ? dense / (p.dp * p.cp) + experts / edp_size : dense + experts;
  out.optimizer_s = model.memory_s(local * (4 + grad_bytes + 4 + 4 + 4 + 4 + 4 + 2));

  out.step_s = out.compute_s + out.tp_comm_s + out.cp_comm_s + out.ep_comm_s + out.pp_comm_s + out.dp_comm_s + out.optimizer_s + out.bubble_s;
  return out;
}

}  // namespace fmsim::search
