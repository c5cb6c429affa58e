// Checks of traces read from files: cycles are found and named (they used to spin forever or free
// memory twice in the reduction), ranks and references are range-checked before anything indexes with
// them.
#include <catch2/catch.hpp>

#include <set>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/trace.hpp"

using namespace fmsim;
using nlohmann::json;

namespace {

json node(int id, int rank, std::vector<int> deps) {
  return {{"id", id}, {"rank", rank}, {"type", "COMP_NODE"}, {"name", "op" + std::to_string(id)}, {"category", "compute"},
          {"data_deps", deps}, {"kernel", "memory"}, {"duration_s", 0.001}};
}

json trace(json nodes, json ranks = json::array({0})) {
  return {{"schema", "fmsim.trace/1"}, {"world_size", 8}, {"ranks", ranks}, {"model_flops_per_step", 1e15},
          {"tokens_per_step", 4096.0}, {"communicators", json::array()}, {"nodes", nodes}};
}

std::string error_of(const json& doc) {
  try {
    workload::trace_from_json(doc, "t.json");
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

}  // namespace

TEST_CASE("find_cycle returns a cycle in dependency order, or nothing", "[trace]") {
  CHECK(workload::find_cycle({{}, {0}, {0, 1}}).empty());
  CHECK(workload::find_cycle({}).empty());
  // 0 <- 1 <- 2 <- 1 (a tail into the cycle 1, 2).
  const auto cycle = workload::find_cycle({{}, {0, 2}, {1}, {2}});
  REQUIRE(cycle.size() == 2);
  CHECK(std::set<int>(cycle.begin(), cycle.end()) == std::set<int>{1, 2});
  const auto three = workload::find_cycle({{2}, {0}, {1}});
  REQUIRE(three.size() == 3);
  for (std::size_t i = 0; i < 3; ++i) {
    // Each vertex waits on the one before it.
    const int before = three[(i + 2) % 3];
    const std::vector<std::vector<int>> preds = {{2}, {0}, {1}};
    CHECK(preds[three[i]] == std::vector<int>{before});
  }
}

TEST_CASE("trace_from_json refuses cycles and bad references", "[trace]") {
  CHECK(error_of(trace({node(0, 0, {}), node(1, 0, {0})})).empty());
  const std::string cycle = error_of(trace({node(0, 0, {1}), node(1, 0, {0})}));
  CHECK(cycle.find("t.json: dependency cycle") != std::string::npos);
  CHECK(cycle.find("node 0 (op0, rank 0)") != std::string::npos);
  CHECK(cycle.find("node 1 (op1, rank 0)") != std::string::npos);
  CHECK(error_of(trace({node(0, 0, {})}, {8})).find("/ranks/0: 8") != std::string::npos);
  CHECK(error_of(trace({node(0, 0, {})}, {0, 0})).find("listed twice") != std::string::npos);
  CHECK(error_of(trace({node(0, 2, {})}, {0})).find("/ranks does not list") != std::string::npos);
  CHECK(error_of(trace({node(0, 0, {3})})).find("/nodes/0/data_deps/0: 3") != std::string::npos);
  json huge = node(0, 0, {});
  huge["rank"] = 4294967296ULL;
  CHECK(error_of(trace({huge})).find("/nodes/0/rank: 4294967296") != std::string::npos);
  json negative = node(0, 0, {});
  negative["duration_s"] = -1.0;
  CHECK(error_of(trace({negative})).find("/nodes/0/duration_s") != std::string::npos);
}
