// Jobs merged into one trace (workload/trace_merge.hpp): ranks, communicators and nodes renumbered after
// the jobs before, repeated steps chained per rank, and what cannot share a fabric refused.
#include <catch2/catch.hpp>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/trace.hpp"
#include "fmsim/workload/trace_merge.hpp"

using namespace fmsim::workload;

namespace {

/// Two ranks on GPUs `gpu0` and `gpu0 + 1`: a compute node each, then an all-reduce between them.
Trace two_rank_trace(int gpu0) {
  Trace t;
  t.world = 2;
  t.symmetric = false;
  t.ranks = {0, 1};
  t.rank_gpu = {gpu0, gpu0 + 1};
  t.comms = {{0, "dp", {0, 1}}};
  for (int r = 0; r < 2; ++r) {
    TraceNode c;
    c.id = r;
    c.rank = r;
    c.name = "compute";
    c.duration_s = 1.0;
    t.nodes.push_back(c);
  }
  for (int r = 0; r < 2; ++r) {
    TraceNode a;
    a.id = 2 + r;
    a.rank = r;
    a.type = NodeType::coll;
    a.category = Category::dp_comm;
    a.name = "allreduce";
    a.comm = 0;
    a.comm_bytes = 1e6;
    a.deps = {r};
    t.nodes.push_back(a);
  }
  t.tokens_per_step = 10;
  return t;
}

}  // namespace

TEST_CASE("merged jobs are renumbered after the jobs before them and their repeated steps chain per rank") {
  const MergedTrace m = merge_traces({two_rank_trace(0), two_rank_trace(8)}, {1, 2});
  const Trace& t = m.trace;
  CHECK(t.world == 4);
  CHECK_FALSE(t.symmetric);
  CHECK(t.rank_gpu == std::vector<int>{0, 1, 8, 9});
  CHECK(t.ranks == std::vector<int>{0, 1, 2, 3});
  REQUIRE(t.comms.size() == 2);
  CHECK(t.comms[1].id == 1);
  CHECK(t.comms[1].ranks == std::vector<int>{2, 3});
  REQUIRE(t.nodes.size() == 4 + 2 * 4);
  CHECK(m.first_rank == std::vector<int>{0, 2});
  CHECK(t.tokens_per_step == Approx(10 + 2 * 10));
  for (std::size_t i = 0; i < t.nodes.size(); ++i) CHECK(t.nodes[i].id == static_cast<int>(i));
  // Job 2's first step: nodes 4..7, its all-reduce on communicator 1, waiting on its own compute.
  CHECK(m.job_of_node[4] == 1);
  CHECK(m.step_of_node[4] == 0);
  CHECK(t.nodes[6].comm == 1);
  CHECK(t.nodes[6].rank == 2);
  CHECK(t.nodes[6].deps == std::vector<int>{4});
  // Its second step (nodes 8..11): each rank's compute waits for that rank's all-reduce of the first step.
  CHECK(m.step_of_node[8] == 1);
  CHECK(t.nodes[8].deps == std::vector<int>{6});
  CHECK(t.nodes[9].deps == std::vector<int>{7});
  CHECK(t.nodes[10].deps == std::vector<int>{8});
  check_trace(t, "merged");  // a valid trace: ids, dependencies, communicators
}

TEST_CASE("jobs that cannot share a fabric are refused") {
  CHECK_THROWS_WITH(merge_traces({two_rank_trace(0), two_rank_trace(1)}, {1, 1}), Catch::Contains("GPU 1"));
  Trace symmetric = two_rank_trace(0);
  symmetric.symmetric = true;
  CHECK_THROWS_AS(merge_traces({symmetric}, {1}), fmsim::InputError);
}
