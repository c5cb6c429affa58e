// Series-parallel reduction of the pure-delay parts of a task graph (see replay_internal.hpp). Tasks
// without flows do not interact with anything, so a chain of them is one delay (the sum) and a
// fork-join of them is one delay (the longest branch): replacing them changes no simulated time. The
// offsets of the original tasks inside each merged one are kept, so every trace node still gets its
// own start and end.
#include <algorithm>

#include "replay_internal.hpp"

namespace fmsim::training {
namespace {

/// Ancestors visited per redundancy check: enough to span one pipeline pass of one rank.
constexpr int kSearchLimit = 384;

struct Node {
  bool alive = true;
  bool pure = true;       ///< no flows: its duration is known
  double duration = 0;    ///< pure: total; else the phase-1 delay only
  int flow_task = -1;     ///< the original task whose flows this one carries
  std::vector<int> preds, succs;
  std::vector<ReducedGraph::Member> members;
};

void replace(std::vector<int>& list, int from, int to) {
  for (auto& x : list) {
    if (x == from) x = to;
  }
  std::sort(list.begin(), list.end());
  list.erase(std::unique(list.begin(), list.end()), list.end());
}

void erase(std::vector<int>& list, int value) { list.erase(std::remove(list.begin(), list.end(), value), list.end()); }

}  // namespace

ReducedGraph reduce_pure_delays(const engine::SimTaskGraph& graph) {
  const int n = static_cast<int>(graph.tasks.size());
  std::vector<Node> nodes(n);
  for (int i = 0; i < n; ++i) {
    const auto& t = graph.tasks[i];
    auto& node = nodes[i];
    node.pure = t.flows.empty();
    node.flow_task = node.pure ? -1 : i;
    node.duration = node.pure ? t.delay_s + t.overlap_delay_s : t.delay_s;
    node.members.push_back({i, 0.0, node.pure ? node.duration : -1.0});
    node.preds = t.deps;
    std::sort(node.preds.begin(), node.preds.end());
    node.preds.erase(std::unique(node.preds.begin(), node.preds.end()), node.preds.end());
  }
  // Drop dependencies implied by a longer path (u -> ... -> v -> w makes u -> w redundant), as stream
  // order adds them everywhere and they would hide chains. Tasks are numbered mostly in topological
  // order, so the backward search from v only visits tasks numbered above u; a path it misses keeps
  // an edge (harmless), one it finds is real.
  std::vector<long long> seen(n, -1);
  std::vector<int> stack;
  long long stamp = 0;
  auto reaches = [&](int from_v, int target_u) {  // is target_u an ancestor of from_v?
    ++stamp;
    stack.assign(1, from_v);
    for (int visits = 0; !stack.empty() && visits < kSearchLimit; ++visits) {
      const int x = stack.back();
      stack.pop_back();
      for (int p : nodes[x].preds) {
        if (p == target_u) return true;
        if (p > target_u && seen[p] != stamp) {
          seen[p] = stamp;
          stack.push_back(p);
        }
      }
    }
    return false;
  };
  for (int w = 0; w < n; ++w) {
    auto& preds = nodes[w].preds;
    if (preds.size() < 2) continue;
    std::vector<int> implied;
    for (int u : preds) {
      for (int v : preds) {
        if (v > u && reaches(v, u)) {
          implied.push_back(u);
          break;
        }
      }
    }
    for (int u : implied) erase(preds, u);
  }
  for (int i = 0; i < n; ++i) {
    for (int p : nodes[i].preds) nodes[p].succs.push_back(i);
  }
  bool changed = true;
  while (changed) {
    changed = false;
    for (int u = 0; u < n; ++u) {
      if (!nodes[u].alive) continue;
      // Series: u -> v, u's only successor and v's only predecessor: u absorbs v (v runs after u's
      // duration). u stays pure while v is; a v with flows makes u carry them (u's time becomes v's
      // phase-1 delay). Absorbing forward keeps each merge proportional to v's size.
      while (nodes[u].pure && nodes[u].succs.size() == 1) {
        const int v = nodes[u].succs.front();
        if (nodes[v].preds.size() != 1) break;
        Node& a = nodes[u];
        Node& b = nodes[v];
        for (auto m : b.members) {
          m.start_s += a.duration;
          if (m.end_s >= 0) m.end_s += a.duration;
          a.members.push_back(m);
        }
        a.duration += b.duration;
        a.pure = b.pure;
        a.flow_task = b.flow_task;
        a.succs = b.succs;
        for (int s : b.succs) replace(nodes[s].preds, v, u);
        b.alive = false;
        b.members.clear();
        changed = true;
      }
      if (!nodes[u].alive) continue;
      // Parallel: pure successors of u whose only predecessor is u and only successor the same w.
      auto& succs = nodes[u].succs;
      for (std::size_t i = 0; i < succs.size(); ++i) {
        const int b = succs[i];
        const Node& nb = nodes[b];
        if (!nb.pure || nb.preds.size() != 1 || nb.succs.size() != 1) continue;
        for (std::size_t j = i + 1; j < succs.size();) {
          const int c = succs[j];
          Node& nc = nodes[c];
          if (nc.pure && nc.preds.size() == 1 && nc.succs.size() == 1 && nc.succs.front() == nb.succs.front()) {
            Node& keep = nodes[b];
            keep.duration = std::max(keep.duration, nc.duration);
            keep.members.insert(keep.members.end(), nc.members.begin(), nc.members.end());
            erase(nodes[nc.succs.front()].preds, c);
            nc.alive = false;
            nc.members.clear();
            succs.erase(succs.begin() + static_cast<long>(j));
            changed = true;
          } else {
            ++j;
          }
        }
      }
    }
  }
  ReducedGraph out;
  out.task_of.assign(n, -1);
  out.member_start_s.assign(n, 0.0);
  out.member_end_s.assign(n, -1.0);
  std::vector<int> renumber(n, -1);
  for (int i = 0; i < n; ++i) {
    if (!nodes[i].alive) continue;
    renumber[i] = static_cast<int>(out.graph.tasks.size());
    engine::SimTask task;
    if (nodes[i].pure) {
      task.delay_s = nodes[i].duration;
    } else {
      task = graph.tasks[nodes[i].flow_task];
      task.delay_s = nodes[i].duration;
    }
    out.graph.tasks.push_back(std::move(task));
  }
  for (int i = 0; i < n; ++i) {
    if (!nodes[i].alive) continue;
    auto& task = out.graph.tasks[renumber[i]];
    task.deps.clear();
    for (int p : nodes[i].preds) task.deps.push_back(renumber[p]);
    for (const auto& m : nodes[i].members) {
      out.task_of[m.task] = renumber[i];
      out.member_start_s[m.task] = m.start_s;
      out.member_end_s[m.task] = m.end_s;
    }
  }
  return out;
}

}  // namespace fmsim::training
