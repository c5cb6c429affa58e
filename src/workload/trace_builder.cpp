// One training step as a per-rank op graph: Megatron's pipeline schedule over the layers of each model
// chunk and pipeline sends between stages; the data-parallel gradient and parameter traffic in buckets
// is dp_traffic.cpp's, the kernels of each layer layer_ops.cpp's.
#include "fmsim/workload/trace_builder.hpp"
#include "fmsim/workload/low_precision.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"
#include "dp_traffic.hpp"
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

/// Builds the nodes of one rank.
class RankBuilder {
 public:
  RankBuilder(TraceWriter& w, int rank, const std::vector<std::pair<int, int>>& layers, const std::vector<PipelineStage>& stages)
      : w_(w), rank_(rank), layers_(layers), stages_(stages), at_(coords_of(w.s.parallelism, rank)),
        dp_(w, rank, c_, layers, stages, at_.pp) {
    make_communicators();
  }

  void build() {
    const auto& p = w_.s.parallelism;
    dp_.gather_parameters();
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
    dp_.optimizer_step(last_compute_);
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
    if (!w_.s.training.overlap_param_gather && dp_.last_gather() >= 0 && microbatch == 0) deps.push_back(dp_.last_gather());
    if (f.stage == 0) f.node = w_.memory(rank_, "embedding", 2.0 * w_.tokens_sp * w_.s.model.hidden * w_.act_bytes, deps);
    else f.node = w_.memory(rank_, "recv.wait", 0, deps);
    if (dp_.deepspeed()) f.node = dp_.gather_chunk_extras(chunk, f.node);
    else if (microbatch == 0) f.gathers = dp_.gathered(chunk);
    else if (dp_.zero3()) f.gathers = dp_.gather_chunk(chunk, {f.node});  // FSDP: gathered again for every micro-batch
    return f;
  }
  /// The pieces of the forward's i-th layer, after waiting for its parameters.
  detail::LayerPieces forward_layer(Pass& f, int i) {
    const int layer = f.begin + i;
    f.node = dp_.deepspeed() ? dp_.gather_tensors(layer, f.node) : dp_.wait_for_bucket(f.gathers, layer, f.node, true);
    return casting_weights(detail::layer_forward_pieces(w_, rank_, c_, layer), f.microbatch == 0);
  }
  /// Runs `emit` with TraceWriter::weight_cast_bytes of a pass that is (or not) the chunk's first
  /// micro-batch (low_precision.hpp), and returns its last node.
  template <typename Emit>
  int casting_weights(bool first_microbatch, Emit&& emit) {
    w_.weight_cast_bytes = weight_cast_bytes_per_element(w_.s.training, w_.s.cluster.gpu.sm_version, first_microbatch);
    const int node = emit();
    w_.weight_cast_bytes = 0;
    return node;
  }
  /// The pieces, each emitting as above (forward and backward pieces of different passes interleave under
  /// combined 1F1B, so each piece sets the cast for itself).
  detail::LayerPieces casting_weights(detail::LayerPieces pieces, bool first_microbatch) {
    for (auto& piece : pieces) {
      piece.emit = [this, first_microbatch, emit = std::move(piece.emit)](int after) {
        return casting_weights(first_microbatch, [&] { return emit(after); });
      };
    }
    return pieces;
  }
  void forward_finish(Pass& f) {
    if (stages_[f.stage].mtp > 0) {
      f.node = casting_weights(f.microbatch == 0, [&] { return detail::mtp_forward(w_, rank_, c_, stages_[f.stage].mtp, f.node); });
    }
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
    if (stages_[b.stage].mtp > 0) {
      b.node = casting_weights(false, [&] { return detail::mtp_backward(w_, rank_, c_, stages_[b.stage].mtp, b.node); });
    }
    b.reduce_now = w_.s.training.overlap_grad_reduce &&
                   (microbatch == p.microbatches - 1 || p.sharding == Sharding::optim_grads ||
                    p.sharding == Sharding::optim_grads_params);
    if (dp_.deepspeed()) b.node = dp_.gather_chunk_extras(chunk, b.node);
    else if (dp_.zero3()) b.gathers = dp_.gather_chunk(chunk, {b.node});  // FSDP: parameters gathered again for backward
    return b;
  }
  /// The pieces of the backward's i-th layer (last layer first).
  detail::LayerPieces backward_layer(Pass& b, int i) {
    const int layer = b.end - 1 - i;
    if (dp_.deepspeed()) b.node = dp_.gather_tensors(layer, b.node);
    else if (dp_.zero3()) b.node = dp_.wait_for_bucket(b.gathers, layer, b.node, false);
    // Recomputed forward GEMMs find the step's cached weights, unless caching is off.
    auto pieces = casting_weights(detail::layer_backward_pieces(w_, rank_, c_, layer), false);
    if (dp_.deepspeed() && w_.s.training.recompute == Recompute::full) {
      // Parameters released between the recomputed forward and their backward are gathered again.
      auto at = std::find_if(pieces.begin(), pieces.end(), [](const detail::LayerPiece& p) { return p.role == detail::PieceRole::attention; });
      pieces.insert(at, {detail::PieceRole::pre, [this, layer](int after) { return dp_.gather_tensors(layer, after, true); }});
    }
    return pieces;
  }
  /// After the backward's i-th layer: reduce the buckets it completed.
  void backward_layer_done(Pass& b, int i) {
    const int layer = b.end - 1 - i;
    if (b.reduce_now && layer > b.begin) dp_.reduce_bucket_if_full(b.chunk, layer, b.node);
  }
  void backward_finish(Pass& b) {
    if (b.stage == 0 && !w_.frozen_base()) b.node = w_.memory(rank_, "embedding.bwd", 2.0 * w_.tokens_sp * w_.s.model.hidden * w_.act_bytes, {b.node});
    if (b.reduce_now) dp_.reduce_bucket_if_full(b.chunk, b.begin, b.node);
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

  TraceWriter& w_;
  int rank_;
  const std::vector<std::pair<int, int>>& layers_;
  const std::vector<PipelineStage>& stages_;
  RankCoords at_;
  detail::Communicators c_;
  std::map<std::pair<int, int>, int> forward_end_; // (microbatch, chunk) -> last forward node
  DataParallelTraffic dp_;
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
