#pragma once
// The prefix cache of one replica as a radix tree over KV blocks (vLLM's hashed block chain, SGLang's
// RadixAttention): a node is one full block of a shared prompt prefix, reached from its parent by the
// block's content. A node lives in HBM (held by running sequences, or cached and evictable), in host
// memory (offloaded on eviction when a host tier exists), or nowhere. Eviction is LRU over unreferenced
// nodes, deepest first among equals, so a node never outlives its descendants in a tier. Internal to
// src/inference.
#include <cstdint>
#include <set>
#include <tuple>
#include <unordered_map>
#include <vector>

namespace fmsim::inference {

class PrefixTree {
 public:
  enum class Tier : std::uint8_t { none, gpu, host };

  /// `host_blocks`: capacity of the host tier (0 = no offload: evicted blocks are dropped).
  explicit PrefixTree(long long host_blocks) : host_capacity_(host_blocks) {}

  struct Match {
    std::vector<int> path;    ///< nodes of the matched blocks, in order (GPU ones first, then host ones)
    int gpu = 0;              ///< leading nodes in HBM
    int host = 0;             ///< following nodes in host memory
    int gpu_evictable = 0;    ///< of the GPU nodes, those no sequence holds (acquiring them takes them off the free list)
  };
  /// The longest cached run of `blocks` blocks of prefix `group` (HBM, then host memory).
  Match match(int group, int blocks) const;

  /// A sequence takes the HBM nodes of `path` [0, gpu) and the host nodes [gpu, gpu + loaded), which the
  /// caller has given HBM blocks to (they move to HBM).
  void acquire(const Match& match, int loaded);
  /// Blocks [from, to) of prefix `group`, now computed in a sequence's private blocks, join the tree held
  /// by that sequence (appended to `path`). Returns how many of those private blocks became redundant (an
  /// HBM copy was cached meanwhile: the sequence holds that one instead).
  int insert(int group, int from, int to, std::vector<int>& path);
  /// A sequence no longer holds these nodes (finished, preempted or handed off).
  void release(const std::vector<int>& path);

  /// Unreferenced HBM nodes: blocks the allocator may reclaim.
  long long evictable() const { return static_cast<long long>(gpu_lru_.size()); }
  /// Evicts up to `blocks` unreferenced HBM nodes (to host memory when there is a tier); returns how many.
  long long evict(long long blocks);

  long long gpu_evictions() const { return gpu_evictions_; }
  long long host_drops() const { return host_drops_; }
  long long host_blocks_used() const { return static_cast<long long>(host_lru_.size()); }

 private:
  struct Node {
    int parent = -1;
    int depth = 0;
    Tier tier = Tier::none;
    int refs = 0;
    long long last_use = 0;
  };
  using Key = std::tuple<long long, int, int>;  ///< (last use, -depth, node): oldest and deepest first
  Key key(int node) const { return {nodes_[node].last_use, -nodes_[node].depth, node}; }
  int child(int parent, int group, int index) const;
  int child_or_new(int parent, int group, int index);
  void to_host(int node);

  std::vector<Node> nodes_;
  std::unordered_map<std::uint64_t, int> children_;  ///< (parent + 1, content) -> node
  std::set<Key> gpu_lru_, host_lru_;
  long long host_capacity_ = 0;
  long long clock_ = 0;
  long long gpu_evictions_ = 0, host_drops_ = 0;
};

}  // namespace fmsim::inference
