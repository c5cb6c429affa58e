// One training step as a per-rank op graph: Megatron's pipeline schedule over the layers of each model
// chunk, pipeline sends between stages, and data-parallel gradient/parameter traffic in buckets.
#include "fmsim/workload/trace_builder.hpp"
#include "fmsim/workload/low_precision.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload {

RankCoords coords_of(const Parallelism& p, int rank) {
  RankCoords c;
  c.tp = rank % p.tp;
  rank /= p.tp;
  c.cp = rank % p.cp;
  rank /= p.cp;
  c.dp = rank % p.dp;
  c.pp = rank / p.dp;
  return c;
}

int rank_of(const Parallelism& p, const RankCoords& c) { return c.tp + p.tp * (c.cp + p.cp * (c.dp + p.dp * c.pp)); }

namespace detail {
namespace {

/// A node's identity: who runs it, what kind it is, where its time is booked, and its name.
TraceNode node_of(int rank, NodeType type, Category category, std::string name) {
  TraceNode node;
  node.rank = rank;
  node.type = type;
  node.category = category;
  node.name = std::move(name);
  return node;
}


}  // namespace

TraceWriter::TraceWriter(const Scenario& scenario, Trace& t) : s(scenario), trace(t) {
  const auto& p = s.parallelism;
  tokens = p.micro_batch * s.training.seq / p.cp;
  tokens_sp = p.sequence_parallel ? tokens / p.tp : tokens;
  vocab_padded = padded_vocab(s.model.vocab, p.tp);
  act_bytes = activation_bytes();
  counts = count_parameters(s.model);
}

int TraceWriter::comm(const std::string& kind, std::vector<int> ranks) {
  auto [it, inserted] = comm_ids_.try_emplace({kind, ranks}, static_cast<int>(trace.comms.size()));
  if (inserted) trace.comms.push_back({it->second, kind, std::move(ranks)});
  return it->second;
}

int TraceWriter::add(TraceNode node) {
  node.id = static_cast<int>(trace.nodes.size());
  trace.nodes.push_back(std::move(node));
  return trace.nodes.back().id;
}

TraceNode TraceWriter::compute(int rank, const std::string& name, Kernel kernel, Category category) const {
  TraceNode node = node_of(rank, NodeType::comp, category, name);
  node.kernel = kernel;
  node.stream = "compute";
  // Only the GEMMs and the attention kernels are SM-bound; memory-bound kernels keep the HBM.
  if (kernel == Kernel::gemm || kernel == Kernel::attention_fwd || kernel == Kernel::attention_bwd) node.sms_taken = sms_beside_comm;
  return node;
}

int TraceWriter::collective(int rank, int comm_id, const std::string& stream, Category category, collectives::Op op,
                            double bytes, const std::string& name, std::vector<int> deps) {
  if (comm_id < 0 || trace.comms[comm_id].ranks.size() < 2 || bytes <= 0) {
    if (deps.size() == 1) return deps.front();
    return memory(rank, name + ".join", 0, std::move(deps));
  }
  TraceNode node = node_of(rank, NodeType::coll, category, name);
  node.stream = stream;
  node.op = op;
  node.comm = comm_id;
  node.comm_bytes = std::floor(bytes);
  node.deps = std::move(deps);
  return add(std::move(node));
}

int TraceWriter::gemm(int rank, const std::string& name, double m, double n, double k, bool fp8, std::vector<int> deps,
                      int repeat, int sms_taken) {
  if (skips_gemm(name)) return deps.size() == 1 ? deps.front() : memory(rank, name + ".frozen", 0, std::move(deps));
  TraceNode node = compute(rank, name, Kernel::gemm);
  node.m = m;
  node.n = n;
  node.k = k;
  node.flops = 2.0 * m * n * k * repeat;
  // `fp8`: the layer runs its GEMMs in the scenario's low precision, FP8 or FP4 (TrainingOptions::layer_in_fp8).
  const bool low = fp8;
  node.fp4 = low && s.training.precision == Precision::fp4;
  node.fp8 = low && !node.fp4;
  // A low-precision GEMM quantizes its activation (or gradient) input first (low_precision.cpp).
  // Weight-gradient GEMMs reuse the copies made for the data-gradient GEMM.
  const auto ends_with = [&name](const char* suffix) {
    const std::string s(suffix);
    return name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
  };
  const bool wgrad = ends_with(".wgrad");
  if (low && !wgrad) node.bytes = quantize_bytes_per_element(s.training) * m * k * repeat;
  // Transformer Engine runs the backward FP8 GEMMs with the split (FP32-promoting) accumulator and the
  // forward ones with fast accumulation (recipe MMParams: fprop False, dgrad and wgrad True).
  node.fp8_split_accumulator = node.fp8 && (wgrad || ends_with(".dgrad"));
  // MXFP8 GEMMs read a UE8M0 scale per 32 elements of each operand (GpuSpec::gemm_mxfp8_rate).
  node.fp8_block_scaled = node.fp8 && s.training.fp8_recipe == Fp8Recipe::mxfp8;
  node.repeat = repeat;
  node.sms_taken += sms_taken;
  node.deps = std::move(deps);
  return add(std::move(node));
}

int TraceWriter::memory(int rank, const std::string& name, double bytes, std::vector<int> deps) {
  TraceNode node = compute(rank, name, Kernel::memory);
  node.bytes = bytes;
  node.deps = std::move(deps);
  return add(std::move(node));
}

namespace {

/// Builds the nodes of one rank.
class RankBuilder {
 public:
  RankBuilder(TraceWriter& w, int rank, const std::vector<std::pair<int, int>>& layers, const std::vector<PipelineStage>& stages)
      : w_(w), rank_(rank), layers_(layers), stages_(stages) {
    const auto& p = w.s.parallelism;
    at_ = coords_of(p, rank);
    make_communicators();
  }

  void build() {
    const auto& p = w_.s.parallelism;
    gather_parameters();
    const bool combine = w_.s.training.overlap_moe_expert_parallel_comm;
    const auto order = pipeline_order(p.pp, p.vp, p.microbatches, at_.pp, combine ? 1 : 0);
    for (std::size_t i = 0; i < order.size(); ++i) {
      const PipelinePass& pass = order[i];
      if (combine && pass.forward && pass.steady) {  // a steady-state forward and the backward after it
        forward_backward(pass, order[++i]);
      } else if (pass.forward) {
        forward(pass.microbatch, pass.chunk);
      } else {
        backward(pass.microbatch, pass.chunk);
      }
    }
    optimizer_step();
  }

 private:
  int virtual_stage(int chunk) const { return chunk * w_.s.parallelism.pp + at_.pp; }
  int stages() const { return w_.s.parallelism.pp * w_.s.parallelism.vp; }
  int tag(int microbatch, int stage, bool forward) const { return (microbatch * stages() + stage) * 2 + (forward ? 0 : 1); }
  int stage_rank(int stage) const {
    RankCoords c = at_;
    c.pp = stage % w_.s.parallelism.pp;
    return rank_of(w_.s.parallelism, c);
  }

  void make_communicators() {
    const auto& p = w_.s.parallelism;
    auto group = [&](auto&& vary, int size) {
      std::vector<int> ranks;
      for (int i = 0; i < size; ++i) {
        RankCoords c = at_;
        vary(c, i);
        ranks.push_back(rank_of(p, c));
      }
      return ranks;
    };
    c_.tp = w_.comm("tp", group([](RankCoords& c, int i) { c.tp = i; }, p.tp));
    c_.cp = w_.comm("cp", group([](RankCoords& c, int i) { c.cp = i; }, p.cp));
    c_.dp_cp = w_.comm("dp", group([&](RankCoords& c, int i) { c.cp = i % p.cp, c.dp = i / p.cp; }, p.cp * p.dp));
    if (w_.s.model.is_moe()) {
      // Expert mesh over the tp x cp x dp ranks of a stage: x = tp_r + tp (cp_r + cp dp_r) = etp_r + etp (ep_r + ep edp_r).
      const int x = at_.tp + p.tp * (at_.cp + p.cp * at_.dp);
      const int etp_r = x % p.etp, ep_r = (x / p.etp) % p.ep, edp_r = x / (p.etp * p.ep);
      const int edp = p.tp * p.cp * p.dp / (p.ep * p.etp);
      auto rank_at = [&](int e, int q, int d) {
        int flat = e + p.etp * (q + p.ep * d);
        RankCoords c = at_;
        c.tp = flat % p.tp;
        c.cp = flat / p.tp % p.cp;
        c.dp = flat / (p.tp * p.cp);
        return rank_of(p, c);
      };
      std::vector<int> ep, edp_ranks, etp;
      for (int q = 0; q < p.ep; ++q) ep.push_back(rank_at(etp_r, q, edp_r));
      for (int d = 0; d < edp; ++d) edp_ranks.push_back(rank_at(etp_r, ep_r, d));
      for (int e = 0; e < p.etp; ++e) etp.push_back(rank_at(e, ep_r, edp_r));
      c_.ep = w_.comm("ep", ep);
      c_.edp = w_.comm("edp", edp_ranks);
      c_.etp = w_.comm("etp", etp);
    }
  }

  // ---- data parallelism ----
  struct Bucket {
    int first_layer_forward = 0;  ///< first layer (model order) of the bucket
    double dense_params = 0, expert_params = 0;
  };

  /// Local (TP/EP-sharded) parameters of a layer: dense part and routed-expert part.
  std::pair<double, double> layer_params(int layer) const {
    const auto& m = w_.s.model;
    const auto& p = w_.s.parallelism;
    // LoRA: only the adapters have gradients (reduced over DP) and optimizer state.
    if (w_.frozen_base()) return {lora_parameters_per_layer(w_.s.training.fine_tuning, m) / p.tp, 0.0};
    const double all = layer_parameters(m, w_.counts, layer);
    const double experts = m.layer_is_moe(layer) ? w_.counts.expert_per_moe_layer : 0.0;
    return {(all - experts) / p.tp, experts / (p.ep * p.etp)};
  }
  /// Embedding, output layer and MTP parameters of a chunk: (dense, routed experts).
  std::pair<double, double> extra_params(int chunk) const {
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
  double bucket_limit() const {
    const auto& p = w_.s.parallelism;
    return w_.s.training.bucket_params > 0 ? w_.s.training.bucket_params : std::max(4e7, 1e6 * p.dp * p.cp);
  }
  /// Buckets of a chunk in backward order (last layer first), as Megatron fills them.
  std::vector<Bucket> buckets(int chunk) const {
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

  int dp_collective(collectives::Op op, const Bucket& b, double bytes_per_param, const std::string& name, std::vector<int> deps) {
    int node = w_.collective(rank_, c_.dp_cp, "dp", Category::dp_comm, op, b.dense_params * bytes_per_param, name, deps);
    if (b.expert_params > 0) {
      node = w_.collective(rank_, c_.edp, "dp", Category::dp_comm, op, b.expert_params * bytes_per_param, name + ".experts",
                           node >= 0 ? std::vector<int>{node} : deps);
    }
    return node;
  }

  double param_bytes() const { return w_.s.training.fp8_param_gather ? 1.0 : 2.0; }
  double grad_bytes() const { return w_.s.training.grad_reduce_in_fp32 ? 4.0 : 2.0; }
  bool shards_params() const { return w_.s.parallelism.sharding != Sharding::no_shard; }

  /// Parameter all-gathers of a chunk, bucket by bucket in forward order on the DP stream. Returns
  /// first layer of each bucket -> its all-gather node.
  std::map<int, int> gather_chunk(int chunk, const std::vector<int>& deps) {
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

  /// Distributed optimizer: the updated parameters are all-gathered at the start of the step (Megatron
  /// overlaps them with the first forward, one bucket ahead); each layer's first forward waits for its bucket.
  void gather_parameters() {
    if (!shards_params() || deepspeed()) return;
    for (int chunk = 0; chunk < w_.s.parallelism.vp; ++chunk) gathered_[chunk] = gather_chunk(chunk, {});
  }

  /// The all-gather a layer must wait for: that of the bucket holding it (the greatest first layer <= layer).
  int wait_for_bucket(const std::map<int, int>& gathers, int layer, int node, bool only_at_start) {
    auto it = gathers.upper_bound(layer);
    if (it == gathers.begin()) return node;
    --it;
    if (only_at_start && it->first != layer) return node;
    if (fsdp2() && zero3()) {  // FSDP2 splits the gathered buffer into the block's parameters (sharded_gathers.cpp)
      const auto [dense, expert] = layer_params(layer);
      return w_.memory(rank_, "param.copy_out", detail::fsdp2_copy_out_bytes(dense + expert, param_bytes()), {node, it->second});
    }
    return w_.memory(rank_, "param.wait", 0, {node, it->second});
  }
  bool zero3() const { return w_.s.parallelism.sharding == Sharding::optim_grads_params; }
  bool fsdp2() const { return w_.s.framework.dp_engine == DataParallelEngine::fsdp2; }
  bool deepspeed() const { return zero3() && w_.s.framework.dp_engine == DataParallelEngine::deepspeed; }

  /// DeepSpeed ZeRO-3: the layer's parameter tensors gathered one by one when the layer is reached (no
  /// prefetch); the layer waits for all of them (sharded_gathers.cpp).
  int gather_tensors(int layer, int node, bool again = false) {
    const auto [dense, expert] = layer_params(layer);
    std::vector<int> wait{node};
    auto tensors = detail::layer_parameter_tensors(w_, layer, dense);
    if (again) tensors = detail::tensors_gathered_again(tensors, w_.s.framework.max_reuse_distance);
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
  /// DeepSpeed ZeRO-3: a chunk's embedding and output layer, gathered when its pass starts.
  int gather_chunk_extras(int chunk, int node) {
    const auto [dense, expert] = extra_params(chunk);
    if (dense + expert <= 0) return node;
    Bucket extras;
    extras.dense_params = dense;
    extras.expert_params = expert;
    const int gather = dp_collective(collectives::Op::all_gather, extras, param_bytes(), "param.ag", {node});
    return gather == node ? node : w_.memory(rank_, "param.wait", 0, {node, gather});
  }

  /// Gradient reduction issued as the last micro-batch's backward completes each bucket.
  void reduce_bucket_if_full(int chunk, int layer, int after) {
    for (const auto& bucket : chunk_buckets(chunk)) {
      if (bucket.first_layer_forward != layer) continue;
      auto op = shards_params() ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
      int ready = after;
      if (fsdp2() && zero3()) {  // FSDP2's copy of the gradients into the reduce buffer (sharded_gathers.cpp)
        ready = w_.memory(rank_, "grad.copy_in", detail::fsdp2_copy_in_bytes(bucket.dense_params + bucket.expert_params, grad_bytes()), {after});
      }
      reductions_.push_back(dp_collective(op, bucket, grad_bytes(), "grad.rs", {ready}));
    }
  }
  const std::vector<Bucket>& chunk_buckets(int chunk) {
    auto it = bucket_cache_.find(chunk);
    if (it == bucket_cache_.end()) it = bucket_cache_.emplace(chunk, buckets(chunk)).first;
    return it->second;
  }

  // ---- pipeline passes ----
  /// A forward or backward pass of one micro-batch through one model chunk, while it is being emitted.
  struct Pass {
    int microbatch = 0, chunk = 0, stage = 0, begin = 0, end = 0;
    int node = -1;                ///< last node so far
    std::map<int, int> gathers;   ///< parameter all-gathers its layers wait for
    bool reduce_now = false;      ///< backward: gradients are reduced as the layers complete
    int layers() const { return end - begin; }
  };

  Pass forward_begin(int microbatch, int chunk) {
    Pass f;
    f.microbatch = microbatch;
    f.chunk = chunk;
    f.stage = virtual_stage(chunk);
    std::tie(f.begin, f.end) = layers_[f.stage];
    std::vector<int> deps;
    if (f.stage > 0) deps.push_back(receive(f.stage - 1, microbatch, f.stage, true));
    if (!w_.s.training.overlap_param_gather && last_gather_ >= 0 && microbatch == 0) deps.push_back(last_gather_);
    if (f.stage == 0) f.node = w_.memory(rank_, "embedding", 2.0 * w_.tokens_sp * w_.s.model.hidden * w_.act_bytes, deps);
    else f.node = w_.memory(rank_, "recv.wait", 0, deps);
    if (deepspeed()) f.node = gather_chunk_extras(chunk, f.node);
    else if (microbatch == 0) f.gathers = gathered_[chunk];
    else if (zero3()) f.gathers = gather_chunk(chunk, {f.node});  // FSDP: gathered again for every micro-batch
    return f;
  }
  /// The pieces of the forward's i-th layer, after waiting for its parameters.
  detail::LayerPieces forward_layer(Pass& f, int i) {
    const int layer = f.begin + i;
    f.node = deepspeed() ? gather_tensors(layer, f.node) : wait_for_bucket(f.gathers, layer, f.node, true);
    return detail::layer_forward_pieces(w_, rank_, c_, layer);
  }
  void forward_finish(Pass& f) {
    if (stages_[f.stage].mtp > 0) f.node = detail::mtp_forward(w_, rank_, c_, stages_[f.stage].mtp, f.node);
    if (f.stage == stages() - 1) {
      const double t = w_.tokens, v = w_.vocab_padded / static_cast<double>(w_.s.parallelism.tp);
      f.node = w_.gemm(rank_, "logits", t, v, w_.s.model.hidden, false, {f.node});
      // FP32 softmax cross-entropy, with the stack's unfused passes (elementwise_fusion.cpp)
      f.node = w_.memory(rank_, "loss", 2 * t * v * 4.0 + detail::cross_entropy_extra_bytes(w_, false) * t * v, {f.node});
    } else {
      f.node = send(f.stage + 1, f.microbatch, true, f.node);
    }
    forward_end_[{f.microbatch, f.chunk}] = f.node;
  }

  Pass backward_begin(int microbatch, int chunk) {
    const auto& p = w_.s.parallelism;
    Pass b;
    b.microbatch = microbatch;
    b.chunk = chunk;
    b.stage = virtual_stage(chunk);
    std::tie(b.begin, b.end) = layers_[b.stage];
    std::vector<int> deps{forward_end_.at({microbatch, chunk})};
    if (b.stage < stages() - 1) deps.push_back(receive(b.stage + 1, microbatch, b.stage, false));
    b.node = w_.memory(rank_, "bwd.start", 0, deps);
    if (b.stage == stages() - 1) {
      const double t = w_.tokens, v = w_.vocab_padded / static_cast<double>(p.tp);
      b.node = w_.memory(rank_, "loss.bwd", 2 * t * v * 4.0 + detail::cross_entropy_extra_bytes(w_, true) * t * v, {b.node});
      b.node = w_.gemm(rank_, "logits.dgrad", t, w_.s.model.hidden, v, false, {b.node});
      b.node = w_.gemm(rank_, "logits.wgrad", w_.s.model.hidden, v, t, false, {b.node});
    }
    if (stages_[b.stage].mtp > 0) b.node = detail::mtp_backward(w_, rank_, c_, stages_[b.stage].mtp, b.node);
    b.reduce_now = w_.s.training.overlap_grad_reduce &&
                   (microbatch == p.microbatches - 1 || p.sharding == Sharding::optim_grads ||
                    p.sharding == Sharding::optim_grads_params);
    if (deepspeed()) b.node = gather_chunk_extras(chunk, b.node);
    else if (zero3()) b.gathers = gather_chunk(chunk, {b.node});  // FSDP: parameters gathered again for backward
    return b;
  }
  /// The pieces of the backward's i-th layer (last layer first).
  detail::LayerPieces backward_layer(Pass& b, int i) {
    const int layer = b.end - 1 - i;
    if (deepspeed()) b.node = gather_tensors(layer, b.node);
    else if (zero3()) b.node = wait_for_bucket(b.gathers, layer, b.node, false);
    auto pieces = detail::layer_backward_pieces(w_, rank_, c_, layer);
    if (deepspeed() && w_.s.training.recompute == Recompute::full) {
      // Parameters released between the recomputed forward and their backward are gathered again.
      auto at = std::find_if(pieces.begin(), pieces.end(), [](const detail::LayerPiece& p) { return p.role == detail::PieceRole::attention; });
      pieces.insert(at, {detail::PieceRole::pre, [this, layer](int after) { return gather_tensors(layer, after, true); }});
    }
    return pieces;
  }
  /// After the backward's i-th layer: reduce the buckets it completed.
  void backward_layer_done(Pass& b, int i) {
    const int layer = b.end - 1 - i;
    if (b.reduce_now && layer > b.begin) reduce_bucket_if_full(b.chunk, layer, b.node);
  }
  void backward_finish(Pass& b) {
    if (b.stage == 0 && !w_.frozen_base()) b.node = w_.memory(rank_, "embedding.bwd", 2.0 * w_.tokens_sp * w_.s.model.hidden * w_.act_bytes, {b.node});
    if (b.reduce_now) reduce_bucket_if_full(b.chunk, b.begin, b.node);
    if (b.stage > 0) b.node = send(b.stage - 1, b.microbatch, false, b.node);
    last_compute_ = b.node;
  }

  void forward(int microbatch, int chunk) {
    Pass f = forward_begin(microbatch, chunk);
    for (int i = 0; i < f.layers(); ++i) f.node = detail::emit_pieces(forward_layer(f, i), f.node);
    forward_finish(f);
  }

  void backward(int microbatch, int chunk) {
    Pass b = backward_begin(microbatch, chunk);
    for (int i = 0; i < b.layers(); ++i) {
      b.node = detail::emit_pieces(backward_layer(b, i), b.node);
      backward_layer_done(b, i);
    }
    backward_finish(b);
  }

  /// overlap_moe_expert_parallel_comm: a forward and a backward of other micro-batches run as one step,
  /// their layers paired (the forward's first with the backward's first, i.e. the chunk's last).
  void forward_backward(const PipelinePass& fp, const PipelinePass& bp) {
    Pass f = forward_begin(fp.microbatch, fp.chunk);
    Pass b = backward_begin(bp.microbatch, bp.chunk);
    for (int i = 0; i < std::max(f.layers(), b.layers()); ++i) {
      detail::LayerPieces fwd = i < f.layers() ? forward_layer(f, i) : detail::LayerPieces{};
      detail::LayerPieces bwd = i < b.layers() ? backward_layer(b, i) : detail::LayerPieces{};
      std::tie(f.node, b.node) = detail::emit_pieces_combined(w_, fwd, bwd, f.node, b.node);
      if (i < b.layers()) backward_layer_done(b, i);
    }
    forward_finish(f);
    backward_finish(b);
  }

  /// A pipeline transfer of one micro-batch's activations (forward) or their gradients (backward),
  /// tagged by the receiving virtual stage so that the send and its receive match.
  TraceNode p2p_node(NodeType type, int peer_stage, int receiver_stage, int microbatch, bool forward) const {
    TraceNode node = node_of(rank_, type, Category::pp_comm,
                             std::string(type == NodeType::send ? "pp.send_" : "pp.recv_") + (forward ? "act" : "grad"));
    node.peer = stage_rank(peer_stage);
    node.tag = tag(microbatch, receiver_stage, forward);
    node.comm_bytes = static_cast<double>(w_.tokens_sp) * w_.s.model.hidden * w_.act_bytes;
    return node;
  }

  int send(int to_stage, int microbatch, bool forward, int after) {
    const bool blocking = w_.s.parallelism.vp == 1;
    TraceNode node = p2p_node(NodeType::send, to_stage, to_stage, microbatch, forward);
    // 1F1B blocks on its sends (batched isend/irecv, then synchronize); interleaved overlaps them.
    node.stream = blocking ? "compute" : "pp";
    node.deps = {after};
    int id = w_.add(std::move(node));
    return blocking ? id : after;
  }

  int receive(int from_stage, int microbatch, int stage, bool forward) {
    TraceNode node = p2p_node(NodeType::recv, from_stage, stage, microbatch, forward);
    node.stream = "";  // posted ahead; completes when the matching send's data has arrived
    return w_.add(std::move(node));
  }

  void optimizer_step() {
    const auto& p = w_.s.parallelism;
    std::vector<int> deps = reductions_;
    if (!w_.s.training.overlap_grad_reduce) {
      // No bucketing: every chunk's gradients are reduced after the last backward.
      for (int chunk = 0; chunk < p.vp; ++chunk) {
        for (const auto& bucket : chunk_buckets(chunk)) {
          auto op = shards_params() ? collectives::Op::reduce_scatter : collectives::Op::all_reduce;
          deps.push_back(dp_collective(op, bucket, grad_bytes(), "grad.rs", {last_compute_}));
        }
      }
    }
    deps.push_back(last_compute_);
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

  TraceWriter& w_;
  int rank_;
  const std::vector<std::pair<int, int>>& layers_;
  const std::vector<PipelineStage>& stages_;
  RankCoords at_;
  detail::Communicators c_;
  std::map<int, std::map<int, int>> gathered_;     // chunk -> first layer of bucket -> all-gather node
  std::map<std::pair<int, int>, int> forward_end_; // (microbatch, chunk) -> last forward node
  std::map<int, std::vector<Bucket>> bucket_cache_;
  std::vector<int> reductions_;
  int last_gather_ = -1;
  int last_compute_ = -1;
};

}  // namespace
}  // namespace detail

nlohmann::json self_contained_scenario(const Scenario& s) {
  nlohmann::json doc = s.resolved;
  if (doc.contains("cluster")) doc["cluster"] = expand_cluster(doc["cluster"], s.file, s.base_dir);
  if (doc.contains("model")) {
    nlohmann::json& model = doc["model"];
    if (model.is_string() && is_model_path(model.get<std::string>())) model = nlohmann::json{{"base", model}};
    if (model.is_object() && model.contains("base") && model["base"].is_string() && is_model_path(model["base"].get<std::string>())) {
      std::filesystem::path path = model["base"].get<std::string>();
      if (path.is_relative() && std::filesystem::exists(s.base_dir / path)) path = s.base_dir / path;
      model["base"] = std::filesystem::absolute(path).lexically_normal().string();
    }
  }
  return doc;
}

StepTotals step_totals(const Scenario& s) {
  const auto& p = s.parallelism;
  StepTotals totals;
  totals.tokens = static_cast<double>(p.global_batch) * s.training.seq;
  totals.model_flops = model_flops_per_row(s.model, s.training.fine_tuning, s.training.seq, padded_vocab(s.model.vocab, p.tp)) *
                       static_cast<double>(p.global_batch);
  return totals;
}

Trace build_trace(const Scenario& s, const std::vector<int>& rank_gpu, bool all_ranks) {
  const auto& p = s.parallelism;
  Trace trace;
  trace.scenario = self_contained_scenario(s);
  trace.world = p.world();
  trace.symmetric = !all_ranks;
  trace.rank_gpu = rank_gpu;
  const StepTotals totals = step_totals(s);
  trace.tokens_per_step = totals.tokens;
  trace.model_flops_per_step = totals.model_flops;
  const auto stages = pipeline_stages(s.model.layers, s.model.mtp_layers, p, s.file);
  std::vector<std::pair<int, int>> layers;
  for (const auto& stage : stages) layers.emplace_back(stage.begin, stage.end);
  detail::TraceWriter writer(s, trace);
  for (int rank = 0; rank < trace.world; ++rank) {
    RankCoords c = coords_of(p, rank);
    if (!all_ranks && (c.tp != 0 || c.cp != 0 || c.dp != 0)) continue;
    trace.ranks.push_back(rank);
    detail::RankBuilder(writer, rank, layers, stages).build();
  }
  return trace;
}

}  // namespace fmsim::workload
