// Consistency of a trace read from a file (trace.hpp, check_trace): references between ranks, nodes and
// communicators, and a dependency graph without cycles. The replay trusts what passes here: a rank
// outside the world indexes past the GPU map, and a cycle never lets its tasks start.
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/trace.hpp"

namespace fmsim::workload {
namespace {

/// Longest cycle spelled out in a message; a longer one ends with "...".
constexpr std::size_t kCycleShown = 6;

}  // namespace

std::string describe_node(const TraceNode& node) {
  std::string text = "node " + std::to_string(node.id) + " (";
  if (!node.name.empty()) text += node.name + ", ";
  return text + "rank " + std::to_string(node.rank) + ")";
}

std::vector<int> find_cycle(const std::vector<std::vector<int>>& preds) {
  const int n = static_cast<int>(preds.size());
  std::vector<int> waiting(n, 0);
  std::vector<std::vector<int>> succs(n);
  for (int v = 0; v < n; ++v) {
    for (int p : preds[v]) {
      succs[p].push_back(v);
      ++waiting[v];
    }
  }
  std::vector<int> ready;
  for (int v = 0; v < n; ++v) {
    if (waiting[v] == 0) ready.push_back(v);
  }
  int done = 0;
  while (!ready.empty()) {
    const int v = ready.back();
    ready.pop_back();
    ++done;
    for (int s : succs[v]) {
      if (--waiting[s] == 0) ready.push_back(s);
    }
  }
  if (done == n) return {};
  // Every vertex left waits on another one left: walking back along those edges must come round.
  int v = static_cast<int>(std::find_if(waiting.begin(), waiting.end(), [](int w) { return w > 0; }) - waiting.begin());
  std::vector<int> order(n, -1), path;
  while (order[v] < 0) {
    order[v] = static_cast<int>(path.size());
    path.push_back(v);
    v = *std::find_if(preds[v].begin(), preds[v].end(), [&](int p) { return waiting[p] > 0; });
  }
  std::vector<int> cycle(path.begin() + order[v], path.end());
  std::reverse(cycle.begin(), cycle.end());  // dependency order: each waits on the one before
  return cycle;
}

std::string describe_cycle(const std::vector<int>& cycle, const std::function<std::string(int)>& name) {
  std::string text;
  for (std::size_t i = 0; i < cycle.size() && i < kCycleShown; ++i) text += name(cycle[i]) + " -> ";
  if (cycle.size() > kCycleShown) text += "... -> ";
  return text + name(cycle.front());
}

void check_trace(const Trace& t, const std::string& file) {
  auto fail = [&](const std::string& what) { throw InputError(file + ": " + what); };
  const std::set<int> listed(t.ranks.begin(), t.ranks.end());
  if (!t.rank_gpu.empty() && static_cast<int>(t.rank_gpu.size()) != t.world) {
    fail("/rank_gpu lists " + std::to_string(t.rank_gpu.size()) + " GPUs for a world of " + std::to_string(t.world) + " ranks");
  }
  for (const auto& comm : t.comms) {
    if (comm.ranks.empty()) fail("/communicators/" + std::to_string(comm.id) + "/ranks: empty");
  }
  std::map<std::pair<int, int>, int> calls;  // (communicator, rank) -> collectives
  for (const auto& n : t.nodes) {
    if (!listed.count(n.rank)) {
      fail("/nodes/" + std::to_string(n.id) + "/rank: " + describe_node(n) + " runs on rank " + std::to_string(n.rank) +
           ", which /ranks does not list");
    }
    if (n.type == NodeType::coll) {
      const auto& members = t.comms[n.comm].ranks;
      if (std::find(members.begin(), members.end(), n.rank) == members.end()) {
        fail("/nodes/" + std::to_string(n.id) + "/comm_group: " + describe_node(n) + " calls communicator " + std::to_string(n.comm) +
             " (" + t.comms[n.comm].kind + "), which does not have rank " + std::to_string(n.rank));
      }
      ++calls[{n.comm, n.rank}];
    }
    if (n.type == NodeType::comp && n.kernel == Kernel::gemm && (n.m > 0 || n.n > 0 || n.k > 0) && n.flops > 0) {
      const double shape_flops = 2.0 * n.m * n.n * n.k * n.repeat;
      if (std::abs(n.flops - shape_flops) > 1e-6 * std::max(n.flops, shape_flops)) {
        fail("/nodes/" + std::to_string(n.id) + "/num_ops: " + describe_node(n) + " claims " + std::to_string(n.flops) +
             " FLOPs, but its GEMM shape and repeat execute 2 x m x n x k x repeat = " + std::to_string(shape_flops));
      }
    }
  }
  // A communicator whose members are all simulated joins the n-th call of each member: each must make
  // as many calls as the others.
  for (const auto& comm : t.comms) {
    if (!std::all_of(comm.ranks.begin(), comm.ranks.end(), [&](int r) { return listed.count(r) > 0; })) continue;
    const int first = calls[{comm.id, comm.ranks.front()}];
    for (int r : comm.ranks) {
      const int made = calls[{comm.id, r}];
      if (made != first) {
        fail("communicator " + std::to_string(comm.id) + " (" + comm.kind + "): rank " + std::to_string(comm.ranks.front()) +
             " makes " + std::to_string(first) + " collective calls on it but rank " + std::to_string(r) + " makes " +
             std::to_string(made) + " (every member must make the same calls)");
      }
    }
  }
  // Data dependencies plus stream order (a node waits for the previous one of its rank on its stream).
  std::vector<std::vector<int>> preds(t.nodes.size());
  std::map<std::pair<int, std::string>, int> last_on_stream;
  for (const auto& n : t.nodes) {
    preds[n.id] = n.deps;
    if (n.stream.empty()) continue;
    auto [it, first] = last_on_stream.try_emplace(std::make_pair(n.rank, n.stream), n.id);
    if (!first) {
      preds[n.id].push_back(it->second);
      it->second = n.id;
    }
  }
  const auto cycle = find_cycle(preds);
  if (!cycle.empty()) {
    fail("dependency cycle (data_deps and stream order), no node of it can start: " +
         describe_cycle(cycle, [&](int id) { return describe_node(t.nodes[id]); }));
  }
}

}  // namespace fmsim::workload
