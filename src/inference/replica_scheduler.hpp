#pragma once
// The batching engine of one replica, as vLLM V1 schedules: running sequences first (decodes and
// unfinished prefill chunks, in admission order), then waiting ones while the token budget, the
// sequence limit and free KV blocks allow; when a running sequence needs a block and none is free, the
// most recently admitted sequence is preempted (its blocks freed, recomputed later). Internal to
// src/inference.
#include <deque>
#include <memory>
#include <vector>

#include "fmsim/inference/replica_model.hpp"
#include "prefix_tree.hpp"

namespace fmsim::inference {

/// One request's state on the replica that holds it (its samples decode in lockstep).
struct SeqState {
  int request = -1;
  int samples = 1;
  int output = 1;             ///< tokens to generate per sample
  int generated = 0;          ///< tokens sampled so far per sample
  long long target = 0;       ///< prompt tokens that must be in KV before sampling
  long long prefilled = 0;    ///< prompt tokens in KV
  int gen_kv = 0;             ///< generated tokens in KV per sample since the last prefill
  long long blocks = 0;       ///< KV blocks held on the current replica
  bool fresh = true;          ///< never admitted: the prefix cache may hold part of the prompt
  int cached = 0;
  int preemptions = 0;
  double spec_credit = 0;     ///< speculative decoding: fraction of a token carried to the next step
  int prefix_group = -1;      ///< shared-prefix workload: the prompt's prefix (-1 = none)
  int prefix_tokens = 0;      ///< its length (the prompt's first tokens)
  std::vector<int> prefix_nodes;  ///< prefix-tree blocks this sequence holds (counted in blocks, not private)
  bool in_prefill() const { return prefilled < target; }
};

/// KV blocks of a sequence of `samples` with `prefilled` prompt tokens and `gen_kv` generated tokens per
/// sample in KV. One sample: its tokens follow the prompt in the same blocks. Several: the prompt's
/// blocks are shared and each sample has its own blocks for what it generates. A hybrid model's sequence
/// holds `state_blocks` more for its Mamba state (ReplicaMemory::state_blocks_per_sequence): one state
/// while its prompt is prefilled, one per sample once they generate.
long long kv_blocks_for(int samples, int block_size, long long prefilled, long long gen_kv, long long state_blocks);

struct ScheduledSeq {
  int seq = 0;
  int tokens = 0;
  bool prefill = false;
  int accepted = 1;           ///< decode: tokens this step adds per sample (more than 1 with speculation)
};

class ReplicaScheduler {
 public:
  explicit ReplicaScheduler(const ReplicaModel& model);

  long long blocks_for(const SeqState& s, long long prefilled, long long gen_kv) const {
    return kv_blocks_for(s.samples, options_.block_size, prefilled, gen_kv, state_blocks_);
  }

  /// Fills `batch` and `shape` for the next iteration; returns the sequences it preempted.
  std::vector<int> schedule(std::vector<SeqState>& seqs, std::vector<ScheduledSeq>& batch, BatchShape& shape);

  /// Applies a finished iteration: progress, sampled tokens. Sequences that completed their prefill
  /// and sampled their first token go to `first_tokens`; those done generating to `finished` (their
  /// blocks freed, removed from running); with `handoff`, sequences that finished prefill leave the
  /// running set instead, keeping their blocks (the caller frees them once their KV has moved).
  void complete(std::vector<SeqState>& seqs, const std::vector<ScheduledSeq>& batch, bool handoff,
                std::vector<int>& first_tokens, std::vector<int>& finished, std::vector<int>& handed_off);

  /// Reserves blocks and a sequence slot for a sequence whose KV will arrive (decode pool); false when
  /// either is short.
  bool reserve(SeqState& s);
  /// A reserved sequence's KV has arrived: it joins the running batch in its decode phase.
  void join_running(int seq) { running_.push_back(seq); }
  /// Returns blocks to the free pool (a handed-off sequence's, once its KV has left).
  void free_blocks(long long blocks) { free_blocks_ += blocks; }

  /// Prefix tree counters: prompt tokens of shared prefixes looked up (whole blocks, first admissions),
  /// found in HBM, found in host memory and loaded; blocks evicted from HBM and dropped from the host.
  struct PrefixCounters {
    long long looked_up_tokens = 0, gpu_hit_tokens = 0, host_hit_tokens = 0, gpu_evictions = 0, host_drops = 0;
  };
  PrefixCounters prefix_counters() const;

  std::deque<int>& waiting() { return waiting_; }
  bool has_work() const { return !running_.empty() || !waiting_.empty(); }
  long long used_blocks() const { return total_blocks_ - free_blocks_; }
  long long total_blocks() const { return total_blocks_; }
  int running_sequences() const { return running_samples_; }
  /// Speculative decoding: decode steps of sequences (per sample) and the tokens they gained.
  long long decode_steps() const { return decode_steps_; }
  long long accepted_tokens() const { return accepted_tokens_; }

 private:
  void preempt(SeqState& s);
  /// Blocks an allocation may take: free ones plus cached prefix blocks no sequence holds.
  long long available() const { return free_blocks_ + (tree_ ? tree_->evictable() : 0); }
  /// Takes `need` blocks (need <= available()), evicting cached prefix blocks when the free ones run out.
  void take(long long need) {
    if (need > free_blocks_) free_blocks_ += tree_->evict(need - free_blocks_);
    free_blocks_ -= need;
  }
  /// A sequence gives back its private blocks and its prefix-tree blocks.
  void release_all(SeqState& s);

  const ReplicaModel& model_;
  const EngineOptions& options_;
  long long state_blocks_ = 0;  ///< a hybrid model's Mamba state per sequence, in KV blocks
  std::vector<int> running_;
  std::deque<int> waiting_;
  long long total_blocks_ = 0, free_blocks_ = 0;
  int running_samples_ = 0;   ///< sequences (samples) holding a slot, reserved ones included
  int spec_k_ = 0;            ///< tokens drafted per decode step (0 = no speculative decoding)
  double spec_expected_ = 1;  ///< tokens a decode step gains on average
  long long decode_steps_ = 0, accepted_tokens_ = 0;
  std::unique_ptr<PrefixTree> tree_;  ///< prefix caching over a shared-prefix workload
  bool load_host_hits_ = false;       ///< reloading an offloaded block is faster than recomputing it
  PrefixCounters counters_;
};

}  // namespace fmsim::inference
