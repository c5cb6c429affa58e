// One rank's data-parallel traffic in a training step (dp_traffic.hpp).
#include "dp_traffic.hpp"

#include <algorithm>

#include "fmsim/workload/workload_kind.hpp"

namespace fmsim::workload::detail {

std::pair<double, double> DataParallelTraffic::layer_params(int layer) const {
  const auto& m = w_.s.model;
  const auto& p = w_.s.parallelism;
  // LoRA: only the adapters have gradients (reduced over DP) and optimizer state.
  if (w_.frozen_base()) return {lora_parameters_per_layer(w_.s.training.fine_tuning, m) / p.tp, 0.0};
  const double all = layer_parameters(m, w_.counts, layer);
  const double experts = m.layer_is_moe(layer) ? w_.counts.expert_per_moe_layer : 0.0;
  return {(all - experts) / p.tp, experts / (p.ep * p.etp)};
}
std::pair<double, double> DataParallelTraffic::extra_params(int chunk) const {
  if (w_.frozen_base()) return {0.0, 0.0};
  const int stage = virtual_stage(chunk);
  const auto& p = w_.s.parallelism;
  const PipelineStage& held = stages_[stage];
  const double vocab = static_cast<double>(w_.vocab_padded) * w_.s.model.hidden / p.tp;
  double params = 0, experts = 0;
  if (stage == 0) params += vocab;
  if (stage == stages() - 1 && !w_.s.model.tied_embeddings) params += vocab;
  if (held.mtp > 0) {  // the MTP stage keeps its own copy of the embedding and output layer when it lacks them
    params += (w_.counts.mtp - w_.counts.mtp_experts) / p.tp + (stage != 0 ? vocab : 0.0) + (stage != stages() - 1 ? vocab : 0.0);
    experts += w_.counts.mtp_experts / (p.ep * p.etp);
  }
  return {params, experts};
}
double DataParallelTraffic::bucket_limit() const {
  const auto& p = w_.s.parallelism;
  return w_.s.training.bucket_params > 0 ? w_.s.training.bucket_params : std::max(4e7, 1e6 * p.dp * p.cp);
}
std::vector<DataParallelTraffic::Bucket> DataParallelTraffic::buckets(int chunk) const {
  const auto [begin, end] = layers_[virtual_stage(chunk)];
  std::vector<Bucket> out;
  Bucket current;
  current.first_layer_forward = end;
  const bool bucketing = w_.s.training.overlap_grad_reduce;
  const bool per_block = fsdp2();  // FSDP2: one unit per transformer block (sharded_gathers.cpp)
  for (int layer = end - 1; layer >= begin; --layer) {
    auto [dense, expert] = layer_params(layer);
    current.dense_params += dense;
    current.expert_params += expert;
    current.first_layer_forward = layer;
    if (per_block || (bucketing && current.dense_params + current.expert_params >= bucket_limit())) {
      out.push_back(current);
      current = Bucket{};
      current.first_layer_forward = layer;
    }
  }
  const auto [extra_dense, extra_experts] = extra_params(chunk);
  current.dense_params += extra_dense;
  current.expert_params += extra_experts;
  current.first_layer_forward = begin;
  if (current.dense_params + current.expert_params > 0) out.push_back(current);
  return out;
}

int DataParallelTraffic::dp_collective(collectives::Op op, const Bucket& b, double bytes_per_param, const std::string& name, std::vector<int> deps) {
  int node = w_.collective(rank_, c_.dp_cp, "dp", Category::dp_comm, op, b.dense_params * bytes_per_param, name, deps);
  if (b.expert_params > 0) {
    node = w_.collective(rank_, c_.edp, "dp", Category::dp_comm, op, b.expert_params * bytes_per_param, name + ".experts",
                         node >= 0 ? std::vector<int>{node} : deps);
  }
  return node;
}

std::map<int, int> DataParallelTraffic::gather_chunk(int chunk, const std::vector<int>& deps) {
  std::map<int, int> out;
  auto list = chunk_buckets(chunk);
  std::reverse(list.begin(), list.end());
  for (const auto& bucket : list) {
    int node = dp_collective(collectives::Op::all_gather, bucket, param_bytes(), "param.ag", deps);
    if (node >= 0 && (deps.empty() || node != deps.front())) out[bucket.first_layer_forward] = node;
    last_gather_ = node;
  }
  return out;
}

void DataParallelTraffic::gather_parameters() {
  if (!shards_params() || deepspeed()) return;
  for (int chunk = 0; chunk < w_.s.parallelism.vp; ++chunk) gathered_[chunk] = gather_chunk(chunk, {});
}

int DataParallelTraffic::wait_for_bucket(const std::map<int, int>& gathers, int layer, int node, bool only_at_start) {
  auto it = gathers.upper_bound(layer);
  if (it == gathers.begin()) return node;
  --it;
  if (only_at_start && it->first != layer) return node;
  if (fsdp2() && zero3()) {  // FSDP2 splits the gathered buffer into the block's parameters (sharded_gathers.cpp)
    const auto [dense, expert] = layer_params(layer);
    return w_.memory(rank_, "param.copy_out", fsdp2_copy_out_bytes(dense + expert, param_bytes()), {node, it->second});
  }
  return w_.memory(rank_, "param.wait", 0, {node, it->second});
}
int DataParallelTraffic::gather_tensors(int layer, int node, bool again) {
  const auto [dense, expert] = layer_params(layer);
  std::vector<int> wait{node};
  auto tensors = layer_parameter_tensors(w_, layer, dense);
  if (again) tensors = tensors_gathered_again(tensors, w_.s.framework.max_reuse_distance);
  for (double elements : tensors) {
    const int gather = w_.collective(rank_, c_.dp_cp, "dp", Category::dp_comm, collectives::Op::all_gather,
                                     elements * param_bytes(), again ? "param.ag.again" : "param.ag", {node});
    if (gather != node) wait.push_back(gather);
  }
  if (expert > 0 && !again) {
    const int gather = w_.collective(rank_, c_.edp, "dp", Category::dp_comm, collectives::Op::all_gather,
                                     expert * param_bytes(), "param.ag.experts", {node});
    if (gather != node) wait.push_back(gather);
  }
  return wait.size() == 1 ? node : w_.memory(rank_, "param.wait", 0, wait);
}
int DataParallelTraffic::gather_chunk_extras(int chunk, int node) {
  const auto [dense, expert] = extra_params(chunk);
  if (dense + expert <= 0) return node;
  Bucket extras;
  extras.dense_params = dense;
  extras.expert_params = expert;
  const int gather = dp_collective(collectives::Op::all_gather, extras, param_bytes(), "param.ag", {node});
  return gather == node ? node : w_.memory(rank_, "param.wait", 0, {node, gather});
}

void DataParallelTraffic::reduce_bucket_if_full(int chunk, int layer, int after) {
  for (const auto& bucket : chunk_buckets(chunk)) {
    if (bucket.first_layer_forward != layer) continue;
    auto op = shards_params() ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
    int ready = after;
    if (fsdp2() && zero3()) {  // FSDP2's copy of the gradients into the reduce buffer (sharded_gathers.cpp)
      ready = w_.memory(rank_, "grad.copy_in", fsdp2_copy_in_bytes(bucket.dense_params + bucket.expert_params, grad_bytes()), {after});
    }
    reductions_.push_back(dp_collective(op, bucket, grad_bytes(), "grad.rs", {ready}));
  }
}
const std::vector<DataParallelTraffic::Bucket>& DataParallelTraffic::chunk_buckets(int chunk) {
  auto it = bucket_cache_.find(chunk);
  if (it == bucket_cache_.end()) it = bucket_cache_.emplace(chunk, buckets(chunk)).first;
  return it->second;
}

void DataParallelTraffic::optimizer_step(int last_compute) {
  const auto& p = w_.s.parallelism;
  std::vector<int> deps = reductions_;
  if (!w_.s.training.overlap_grad_reduce) {
    // No bucketing: every chunk's gradients are reduced after the last backward.
    for (int chunk = 0; chunk < p.vp; ++chunk) {
      for (const auto& bucket : chunk_buckets(chunk)) {
        auto op = shards_params() ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
        deps.push_back(dp_collective(op, bucket, grad_bytes(), "grad.rs", {last_compute}));
      }
    }
  }
  deps.push_back(last_compute);
  double dense = 0, expert = 0;
  for (int chunk = 0; chunk < p.vp; ++chunk) {
    for (const auto& bucket : chunk_buckets(chunk)) {
      dense += bucket.dense_params;
      expert += bucket.expert_params;
    }
  }
  const int edp = p.tp * p.cp * p.dp / (p.ep * p.etp);
  const double local = shards_params() ? dense / (p.dp * p.cp) + expert / edp : dense + expert;
  // Adam with FP32 master weights: read param, grad, m, v; write param, m, v and the BF16 copy.
  TraceNode node = w_.compute(rank_, "optimizer.adam", Kernel::optimizer, Category::optimizer);
  node.bytes = local * (4 + grad_bytes() + 4 + 4 + 4 + 4 + 4 + 2);
  node.deps = deps;
  w_.add(std::move(node));
}

}  // namespace fmsim::workload::detail
