// Radix tree of cached prefix blocks with HBM and host tiers (prefix_tree.hpp).
#include "prefix_tree.hpp"

#include <algorithm>

namespace fmsim::inference {
namespace {

/// A block's content: the first block of a prefix is keyed by its group, later ones by their index.
std::uint64_t child_key(int parent, int group, int index) {
  const std::uint64_t content = parent < 0 ? static_cast<std::uint32_t>(group) : static_cast<std::uint32_t>(index);
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(parent + 1)) << 32) | content;
}

}  // namespace

int PrefixTree::child(int parent, int group, int index) const {
  const auto found = children_.find(child_key(parent, group, index));
  return found == children_.end() ? -1 : found->second;
}

int PrefixTree::child_or_new(int parent, int group, int index) {
  const auto [it, inserted] = children_.try_emplace(child_key(parent, group, index), static_cast<int>(nodes_.size()));
  if (inserted) {
    Node node;
    node.parent = parent;
    node.depth = parent < 0 ? 0 : nodes_[static_cast<std::size_t>(parent)].depth + 1;
    nodes_.push_back(node);
  }
  return it->second;
}

PrefixTree::Match PrefixTree::match(int group, int blocks) const {
  Match m;
  int parent = -1;
  for (int i = 0; i < blocks; ++i) {
    const int node = child(parent, group, i);
    if (node < 0) break;
    const Node& n = nodes_[static_cast<std::size_t>(node)];
    if (n.tier == Tier::gpu && m.host == 0) {
      ++m.gpu;
      if (n.refs == 0) ++m.gpu_evictable;
    } else if (n.tier == Tier::host) {
      ++m.host;
    } else {
      break;
    }
    m.path.push_back(node);
    parent = node;
  }
  return m;
}

void PrefixTree::acquire(const Match& match, int loaded) {
  ++clock_;
  for (int i = 0; i < match.gpu + loaded; ++i) {
    const int node = match.path[static_cast<std::size_t>(i)];
    Node& n = nodes_[static_cast<std::size_t>(node)];
    if (n.tier == Tier::host) {
      host_lru_.erase(key(node));
      n.tier = Tier::gpu;
    } else if (n.refs == 0) {
      gpu_lru_.erase(key(node));
    }
    ++n.refs;
  }
}

int PrefixTree::insert(int group, int from, int to, std::vector<int>& path) {
  ++clock_;
  int redundant = 0;
  int parent = path.empty() ? -1 : path.back();
  for (int i = from; i < to; ++i) {
    const int node = child_or_new(parent, group, i);
    Node& n = nodes_[static_cast<std::size_t>(node)];
    if (n.tier == Tier::gpu) {
      ++redundant;                        // cached meanwhile: hold it, give back the private copy
      if (n.refs == 0) gpu_lru_.erase(key(node));
    } else {
      if (n.tier == Tier::host) host_lru_.erase(key(node));  // the fresh HBM copy replaces the host one
      n.tier = Tier::gpu;
    }
    ++n.refs;
    path.push_back(node);
    parent = node;
  }
  return redundant;
}

void PrefixTree::release(const std::vector<int>& path) {
  ++clock_;
  for (int node : path) {
    Node& n = nodes_[static_cast<std::size_t>(node)];
    n.last_use = clock_;
    if (--n.refs == 0) gpu_lru_.insert(key(node));
  }
}

void PrefixTree::to_host(int node) {
  if (host_capacity_ <= 0) {
    nodes_[static_cast<std::size_t>(node)].tier = Tier::none;
    return;
  }
  while (static_cast<long long>(host_lru_.size()) >= host_capacity_) {
    const int victim = std::get<2>(*host_lru_.begin());
    host_lru_.erase(host_lru_.begin());
    nodes_[static_cast<std::size_t>(victim)].tier = Tier::none;
    ++host_drops_;
  }
  nodes_[static_cast<std::size_t>(node)].tier = Tier::host;
  host_lru_.insert(key(node));
}

long long PrefixTree::evict(long long blocks) {
  long long done = 0;
  while (done < blocks && !gpu_lru_.empty()) {
    const int node = std::get<2>(*gpu_lru_.begin());
    gpu_lru_.erase(gpu_lru_.begin());
    to_host(node);
    ++gpu_evictions_;
    ++done;
  }
  return done;
}

}  // namespace fmsim::inference
