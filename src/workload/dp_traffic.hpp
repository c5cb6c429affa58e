#pragma once
// One rank's data-parallel traffic in a training step (trace_builder.cpp's RankBuilder drives it): the
// gradient buckets Megatron's DDP fills in backward order, their reduction as the last micro-batch's
// backward completes each, the distributed optimizer's parameter all-gathers (and FSDP's again for every
// micro-batch and for backward, FSDP2's copies, DeepSpeed ZeRO-3's per-tensor gathers), and the
// optimizer step after the reductions.
#include <map>
#include <utility>
#include <vector>

#include "fmsim/workload/low_precision.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "trace_builder_internal.hpp"

namespace fmsim::workload::detail {

class DataParallelTraffic {
 public:
  /// `layers` and `stages`: each virtual stage's layers [begin, end) and what it holds; `pp_rank`: this
  /// rank's pipeline stage (chunk c of it is virtual stage c x PP + pp_rank).
  DataParallelTraffic(TraceWriter& w, int rank, const Communicators& c, const std::vector<std::pair<int, int>>& layers,
                      const std::vector<PipelineStage>& stages, int pp_rank)
      : w_(w), rank_(rank), c_(c), layers_(layers), stages_(stages), pp_rank_(pp_rank) {}

  bool zero3() const { return w_.s.parallelism.sharding == Sharding::optim_grads_params; }
  bool fsdp2() const { return w_.s.framework.dp_engine == DataParallelEngine::fsdp2; }
  bool deepspeed() const { return zero3() && w_.s.framework.dp_engine == DataParallelEngine::deepspeed; }

  /// Distributed optimizer: the updated parameters are all-gathered at the start of the step (Megatron
  /// overlaps them with the first forward, one bucket ahead); each layer's first forward waits for its bucket.
  void gather_parameters();
  /// The all-gathers of chunk `chunk` made at the start of the step: first layer of a bucket -> its node.
  const std::map<int, int>& gathered(int chunk) { return gathered_[chunk]; }
  /// The last parameter all-gather issued (-1: none).
  int last_gather() const { return last_gather_; }
  /// Parameter all-gathers of a chunk, bucket by bucket in forward order on the DP stream. Returns first
  /// layer of each bucket -> its all-gather node.
  std::map<int, int> gather_chunk(int chunk, const std::vector<int>& deps);
  /// The all-gather a layer must wait for: that of the bucket holding it (the greatest first layer <= layer).
  int wait_for_bucket(const std::map<int, int>& gathers, int layer, int node, bool only_at_start);
  /// DeepSpeed ZeRO-3: the layer's parameter tensors gathered one by one when the layer is reached (no
  /// prefetch); the layer waits for all of them (sharded_gathers.cpp).
  int gather_tensors(int layer, int node, bool again = false);
  /// DeepSpeed ZeRO-3: a chunk's embedding and output layer, gathered when its pass starts.
  int gather_chunk_extras(int chunk, int node);
  /// Gradient reduction issued as the last micro-batch's backward completes each bucket.
  void reduce_bucket_if_full(int chunk, int layer, int after);
  /// The optimizer step after the gradient reductions (all of them after `last_compute` without
  /// overlap_grad_reduce) and the rank's last compute.
  void optimizer_step(int last_compute);

 private:
  struct Bucket {
    int first_layer_forward = 0;  ///< first layer (model order) of the bucket
    double dense_params = 0, expert_params = 0;
  };

  int virtual_stage(int chunk) const { return chunk * w_.s.parallelism.pp + pp_rank_; }
  int stages() const { return w_.s.parallelism.pp * w_.s.parallelism.vp; }
  /// Local (TP/EP-sharded) parameters of a layer: dense part and routed-expert part.
  std::pair<double, double> layer_params(int layer) const;
  /// Embedding, output layer and MTP parameters of a chunk: (dense, routed experts).
  std::pair<double, double> extra_params(int chunk) const;
  double bucket_limit() const;
  /// Buckets of a chunk in backward order (last layer first), as Megatron fills them.
  std::vector<Bucket> buckets(int chunk) const;
  const std::vector<Bucket>& chunk_buckets(int chunk);
  int dp_collective(collectives::Op op, const Bucket& b, double bytes_per_param, const std::string& name, std::vector<int> deps);
  double param_bytes() const { return param_gather_bytes_per_element(w_.s.training); }
  double grad_bytes() const { return w_.s.training.grad_reduce_in_fp32 ? 4.0 : 2.0; }
  bool shards_params() const { return w_.s.parallelism.sharding != Sharding::no_shard; }

  TraceWriter& w_;
  int rank_;
  const Communicators& c_;
  const std::vector<std::pair<int, int>>& layers_;
  const std::vector<PipelineStage>& stages_;
  int pp_rank_;
  std::map<int, std::map<int, int>> gathered_;  // chunk -> first layer of bucket -> all-gather node
  std::map<int, std::vector<Bucket>> bucket_cache_;
  std::vector<int> reductions_;
  int last_gather_ = -1;
};

}  // namespace fmsim::workload::detail
