// The prefix tree of cached KV blocks (src/inference/prefix_tree.hpp): matching, sharing, LRU eviction
// (deepest first, never a parent before its descendants), the host tier, and redundant inserts.
#include <catch2/catch.hpp>

#include "inference/prefix_tree.hpp"

using fmsim::inference::PrefixTree;

TEST_CASE("prefix tree: a computed prefix is found by the next request of its group only") {
  PrefixTree tree(0);
  std::vector<int> path;
  CHECK(tree.match(0, 4).path.empty());
  CHECK(tree.insert(0, 0, 4, path) == 0);
  REQUIRE(path.size() == 4);
  auto same = tree.match(0, 4);
  CHECK(same.gpu == 4);
  CHECK(same.gpu_evictable == 0);  // held by the first sequence
  CHECK(tree.match(1, 4).path.empty());
  CHECK(tree.match(0, 2).gpu == 2);
  tree.release(path);
  CHECK(tree.evictable() == 4);
  CHECK(tree.match(0, 4).gpu_evictable == 4);
}

TEST_CASE("prefix tree: eviction is LRU and deepest first; a parent never goes before its child") {
  PrefixTree tree(0);
  std::vector<int> a, b;
  tree.insert(0, 0, 3, a);
  tree.release(a);  // group 0 released first: older
  tree.insert(1, 0, 3, b);
  tree.release(b);
  CHECK(tree.evict(1) == 1);
  CHECK(tree.match(0, 3).gpu == 2);  // group 0's last block went first
  CHECK(tree.match(1, 3).gpu == 3);
  CHECK(tree.evict(2) == 2);
  CHECK(tree.match(0, 3).gpu == 0);
  CHECK(tree.gpu_evictions() == 3);
  // Holding a prefix protects it.
  auto m = tree.match(1, 3);
  tree.acquire(m, 0);
  CHECK(tree.evictable() == 0);
  CHECK(tree.evict(5) == 0);
}

TEST_CASE("prefix tree: the host tier keeps evicted blocks until it is full") {
  PrefixTree tree(2);
  std::vector<int> a;
  tree.insert(0, 0, 3, a);
  tree.release(a);
  CHECK(tree.evict(3) == 3);
  CHECK(tree.host_blocks_used() == 2);
  CHECK(tree.host_drops() == 1);  // the deepest block went first, then dropped for room
  auto m = tree.match(0, 3);
  CHECK(m.gpu == 0);
  CHECK(m.host == 2);
  tree.acquire(m, 2);  // loaded back into HBM
  CHECK(tree.host_blocks_used() == 0);
  CHECK(tree.match(0, 3).gpu == 2);
  // Computing the missing block again joins it to the held path; a copy already in HBM is redundant.
  std::vector<int> path = m.path;
  CHECK(tree.insert(0, 2, 3, path) == 0);
  std::vector<int> other;
  CHECK(tree.insert(0, 0, 3, other) == 3);
  CHECK(tree.match(0, 3).gpu == 3);
}
