// Continuous batching on one replica: token budget, sequence limit, paged KV blocks, chunked
// prefill, prefix cache, preemption by recompute (vLLM V1's scheduler, simplified as docs/model.md says).
#include "replica_scheduler.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::inference {
namespace {

long long ceil_div(long long a, long long b) { return (a + b - 1) / b; }

}  // namespace

ReplicaScheduler::ReplicaScheduler(const ReplicaModel& model)
    : model_(model), options_(model.pool().engine), state_blocks_(model.memory().state_blocks_per_sequence), total_blocks_(model.memory().kv_blocks), free_blocks_(total_blocks_),
      spec_k_(model.speculative_tokens()), spec_expected_(model.expected_tokens_per_step()) {
  // Prefix caching without a fixed hit rate: a radix tree over the blocks of shared prefixes, with a
  // host tier when KV offloading is configured and reloading pays (docs/model.md, "KV cache beyond HBM").
  if (options_.prefix_caching && options_.prefix_cache_hit_rate == 0) {
    load_host_hits_ = model.offload_pays();
    tree_ = std::make_unique<PrefixTree>(load_host_hits_ ? model.memory().host_kv_blocks : 0);
  }
}

ReplicaScheduler::PrefixCounters ReplicaScheduler::prefix_counters() const {
  PrefixCounters c = counters_;
  if (tree_) {
    c.gpu_evictions = tree_->gpu_evictions();
    c.host_drops = tree_->host_drops();
  }
  return c;
}

void ReplicaScheduler::release_all(SeqState& s) {
  const auto shared = static_cast<long long>(s.prefix_nodes.size());
  free_blocks_ += s.blocks - shared;
  if (shared > 0) {
    tree_->release(s.prefix_nodes);
    s.prefix_nodes.clear();
  }
  s.blocks = 0;
}

long long kv_blocks_for(int samples, int block_size, long long prefilled, long long gen_kv, long long state_blocks) {
  // A hybrid model's Mamba state: one while the prompt is prefilled, one per sample once they decode.
  const long long states = state_blocks * (gen_kv > 0 ? samples : 1);
  if (samples == 1) return ceil_div(prefilled + gen_kv, block_size) + states;
  return ceil_div(prefilled, block_size) + samples * ceil_div(gen_kv, block_size) + states;
}

void ReplicaScheduler::preempt(SeqState& s) {
  // Recompute: the KV is dropped; later the prompt and everything generated so far are prefilled again
  // (a cached prefix is found again on re-admission).
  release_all(s);
  running_samples_ -= s.samples;
  const long long all_tokens = s.target + static_cast<long long>(s.samples) * s.gen_kv;
  s.target = all_tokens;
  s.prefilled = 0;
  s.gen_kv = 0;
  ++s.preemptions;
}

std::vector<int> ReplicaScheduler::schedule(std::vector<SeqState>& seqs, std::vector<ScheduledSeq>& batch, BatchShape& shape) {
  batch.clear();
  shape = BatchShape{};
  std::vector<int> preempted;
  long long budget = options_.max_num_batched_tokens;
  auto add = [&](SeqState& s, int seq, int tokens, bool prefill, int accepted) {
    batch.push_back({seq, tokens, prefill, accepted});
    budget -= tokens;
    const bool samples_last = s.generated + accepted >= s.output;
    if (prefill) {
      shape.prefill_tokens += tokens;
      ++shape.prefill_sequences;
      shape.prefill_attention_pairs += tokens * (static_cast<double>(s.prefilled) + 0.5 * (tokens + 1));
      if (s.prefilled + tokens == s.target) {
        shape.sampled_rows += s.samples;
        if (samples_last) shape.finishing_rows += s.samples;
      }
    } else {
      shape.decode_tokens += tokens;
      if (spec_k_ > 0) shape.draft_sequences += s.samples;
      shape.decode_context_tokens += static_cast<double>(s.samples) * static_cast<double>(s.prefilled + s.gen_kv + 1);
      shape.sampled_rows += s.samples;
      if (samples_last) shape.finishing_rows += s.samples;
    }
  };
  // 1. Running sequences, oldest admission first.
  for (std::size_t i = 0; i < running_.size() && budget > 0;) {
    const int seq = running_[i];
    SeqState& s = seqs[static_cast<std::size_t>(seq)];
    const bool prefill = s.in_prefill();
    // A decode step verifies k drafted tokens and samples one more: k + 1 rows and KV slots per sample
    // (vLLM's lookahead slots).
    const int tokens = prefill ? static_cast<int>(std::min<long long>(s.target - s.prefilled, budget)) : s.samples * (spec_k_ + 1);
    if (tokens > budget) break;
    // (Under guaranteed_no_evict the blocks were all reserved at admission: nothing more is needed.)
    const long long need = std::max<long long>(
        0, (prefill ? blocks_for(s, s.prefilled + tokens, 0) : blocks_for(s, s.prefilled, s.gen_kv + 1 + spec_k_)) - s.blocks);
    bool self_preempted = false;
    while (need > available()) {
      const int victim = running_.back();
      running_.pop_back();
      preempt(seqs[static_cast<std::size_t>(victim)]);
      waiting_.push_front(victim);
      preempted.push_back(victim);
      if (victim == seq) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;
    take(need);
    s.blocks += need;
    // Speculative decoding gains spec_expected_ tokens per step on average: each step takes the whole
    // tokens of the running credit (deterministic, its mean exact), never more than the output left.
    int accepted = 1;
    if (!prefill && spec_k_ > 0) {
      s.spec_credit += spec_expected_;
      accepted = static_cast<int>(std::floor(s.spec_credit));
      s.spec_credit -= accepted;
      accepted = std::clamp(accepted, 1, std::max(1, s.output - s.generated));
    }
    add(s, seq, tokens, prefill, accepted);
    ++i;
  }
  // 2. Waiting sequences, first come first served, unless this iteration had to preempt.
  while (preempted.empty() && !waiting_.empty() && budget > 0) {
    const int seq = waiting_.front();
    SeqState& s = seqs[static_cast<std::size_t>(seq)];
    if (running_samples_ + s.samples > options_.max_num_seqs) break;
    if (s.fresh) {
      // Prefix cache: whole blocks of the prompt are found; the last prompt token is always computed.
      if (options_.prefix_caching && options_.prefix_cache_hit_rate > 0) {
        const long long block = options_.block_size;
        const long long hit = static_cast<long long>(std::floor(options_.prefix_cache_hit_rate * s.target / block)) * block;
        s.prefilled = std::min(hit, s.target - 1);
        s.cached = static_cast<int>(s.prefilled);
      }
    }
    // Prefix tree: the prompt's shared prefix, as far as whole blocks of it are cached in HBM (held
    // at once) or in host memory (loaded into fresh blocks when reloading pays; else recomputed).
    PrefixTree::Match match;
    int loaded = 0;
    const long long block = options_.block_size;
    if (tree_ && s.prefix_group >= 0 && s.prefilled == 0) {
      const int wanted = static_cast<int>(std::min<long long>(s.prefix_tokens, s.target - 1) / block);
      match = tree_->match(s.prefix_group, wanted);
      loaded = load_host_hits_ ? match.host : 0;
      s.prefilled = (match.gpu + loaded) * block;
      if (s.fresh) counters_.looked_up_tokens += wanted * block;
    }
    const long long remaining = s.target - s.prefilled;
    const int held = match.gpu + loaded;
    auto undo_match = [&] { s.prefilled -= held * block; };
    if (!options_.chunked_prefill && remaining > budget) {
      undo_match();
      break;
    }
    const int tokens = static_cast<int>(std::min(remaining, budget));
    // Blocks beyond the matched ones: loaded host blocks and the rest of the prompt (or, reserving,
    // everything up to the end of the output).
    const long long need = (options_.guaranteed_no_evict ? blocks_for(s, s.target, s.output + spec_k_) : blocks_for(s, s.prefilled + tokens, 0)) -
                           s.blocks - match.gpu;
    if (need > available() - match.gpu_evictable) {
      undo_match();
      break;
    }
    waiting_.pop_front();
    if (held > 0) {
      tree_->acquire(match, loaded);  // before take(): the matched blocks must not be evicted for it
      s.prefix_nodes.assign(match.path.begin(), match.path.begin() + held);
      s.blocks += match.gpu;
      if (s.fresh) {
        counters_.gpu_hit_tokens += match.gpu * block;
        counters_.host_hit_tokens += loaded * block;
        s.cached = static_cast<int>(s.prefilled);
      }
      shape.host_load_tokens += static_cast<int>(loaded * block);
    }
    s.fresh = false;
    take(need);
    s.blocks += need;
    running_.push_back(seq);
    running_samples_ += s.samples;
    add(s, seq, tokens, true, 1);
  }
  return preempted;
}

void ReplicaScheduler::complete(std::vector<SeqState>& seqs, const std::vector<ScheduledSeq>& batch, bool handoff,
                                std::vector<int>& first_tokens, std::vector<int>& finished, std::vector<int>& handed_off) {
  bool removed = false;
  for (const auto& entry : batch) {
    SeqState& s = seqs[static_cast<std::size_t>(entry.seq)];
    if (entry.prefill) {
      s.prefilled += entry.tokens;
      if (s.prefilled < s.target) continue;
      // The prompt is in KV: its shared prefix's whole blocks join the tree (held by this sequence).
      if (tree_ && s.prefix_group >= 0) {
        const int prefix_blocks = static_cast<int>(std::min<long long>(s.prefix_tokens, s.target) / options_.block_size);
        const int have = static_cast<int>(s.prefix_nodes.size());
        if (prefix_blocks > have) free_blocks_ += tree_->insert(s.prefix_group, have, prefix_blocks, s.prefix_nodes);
      }
      if (s.generated == 0) first_tokens.push_back(entry.seq);
      ++s.generated;
      if (handoff && s.generated < s.output) {
        // The KV leaves from the private blocks (the caller frees them); the tree keeps the prefix.
        if (!s.prefix_nodes.empty()) {
          s.blocks -= static_cast<long long>(s.prefix_nodes.size());
          tree_->release(s.prefix_nodes);
          s.prefix_nodes.clear();
        }
        handed_off.push_back(entry.seq);
        running_samples_ -= s.samples;
        removed = true;
        continue;
      }
    } else {
      s.gen_kv += entry.accepted;
      s.generated += entry.accepted;
      if (spec_k_ > 0) {
        decode_steps_ += s.samples;
        accepted_tokens_ += static_cast<long long>(s.samples) * entry.accepted;
      }
    }
    if (s.generated >= s.output) {
      release_all(s);
      running_samples_ -= s.samples;
      finished.push_back(entry.seq);
      removed = true;
    }
  }
  if (!removed) return;
  std::erase_if(running_, [&](int seq) {
    const SeqState& s = seqs[static_cast<std::size_t>(seq)];
    if (s.generated >= s.output && s.blocks == 0) return true;
    return handoff && !s.in_prefill() && s.generated >= 1 && s.generated < s.output;
  });
}

bool ReplicaScheduler::reserve(SeqState& s) {
  const long long need = blocks_for(s, s.prefilled, s.gen_kv + 1);
  if (running_samples_ + s.samples > options_.max_num_seqs || need > free_blocks_) return false;
  free_blocks_ -= need;
  s.blocks = need;
  running_samples_ += s.samples;
  return true;
}

}  // namespace fmsim::inference
