// Passes of each pipeline stage, found by the markers trace_builder puts at the start of every pass:
// "embedding" or "recv.wait" opens a forward, "bwd.start" a backward; the optimizer's nodes close the
// step. The i-th marker of a rank is the i-th pass of pipeline_order for its stage.
#include "fmsim/report/pipeline_timeline.hpp"

#include <algorithm>
#include <cmath>
#include <map>

#include "fmsim/workload/pipeline_schedule.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::report {

using nlohmann::json;

namespace {

/// Passes beyond which the time line is left out of the result (it would dwarf the rest).
constexpr std::size_t kMaxTimelinePasses = 200000;

double rounded_s(double t) { return std::round(t * 1e9) / 1e9; }  // nanoseconds are plenty

struct StageColumns {
  std::vector<std::string> kind;
  std::vector<int> microbatch, chunk;
  std::vector<double> start_s, end_s;
  void open(const std::string& k, int mb, int c, double start) {
    kind.push_back(k);
    microbatch.push_back(mb);
    chunk.push_back(c);
    start_s.push_back(start);
    end_s.push_back(start);
  }
  void extend(double end) {
    if (!end_s.empty()) end_s.back() = std::max(end_s.back(), end);
  }
};

}  // namespace

json pipeline_timeline(const TrainingRun& run) {
  const auto& trace = *run.trace;
  const auto& p = run.scenario->parallelism;
  const auto& start = run.step.node_start_s;
  const auto& end = run.step.node_end_s;
  if (start.size() != trace.nodes.size()) return nullptr;
  if (static_cast<std::size_t>(p.pp) * p.vp * p.microbatches * 2 > kMaxTimelinePasses) return nullptr;

  std::map<int, int> rank_of_stage;  // the lowest simulated rank of each stage
  for (int rank : trace.ranks) {
    const int stage = workload::coords_of(p, rank).pp;
    auto [it, inserted] = rank_of_stage.emplace(stage, rank);
    if (!inserted) it->second = std::min(it->second, rank);
  }
  std::map<int, StageColumns> columns;
  std::map<int, std::vector<workload::PipelinePass>> order;
  std::map<int, std::size_t> next_pass;
  for (const auto& [stage, rank] : rank_of_stage) order[rank] = workload::pipeline_order(p.pp, p.vp, p.microbatches, stage);

  for (const auto& node : trace.nodes) {
    auto found = order.find(node.rank);
    if (found == order.end() || node.stream != "compute") continue;
    auto& col = columns[node.rank];
    const bool marker = node.name == "embedding" || node.name == "recv.wait" || node.name == "bwd.start";
    if (marker) {
      std::size_t& i = next_pass[node.rank];
      if (i >= found->second.size()) return nullptr;  // more markers than passes: not an fmsim trace
      const auto& pass = found->second[i++];
      col.open(pass.forward ? "F" : "B", pass.microbatch, pass.chunk, start[node.id]);
    } else if (node.category == workload::Category::optimizer) {
      if (col.kind.empty() || col.kind.back() != "O") col.open("O", -1, -1, start[node.id]);
    }
    col.extend(end[node.id]);
  }
  json stages = json::array();
  for (const auto& [stage, rank] : rank_of_stage) {
    if (next_pass[rank] != order[rank].size()) return nullptr;  // fewer markers than passes
    auto& col = columns[rank];
    std::transform(col.start_s.begin(), col.start_s.end(), col.start_s.begin(), rounded_s);
    std::transform(col.end_s.begin(), col.end_s.end(), col.end_s.begin(), rounded_s);
    stages.push_back({{"pipeline_rank", stage}, {"rank", rank}, {"kind", col.kind}, {"microbatch", col.microbatch},
                      {"chunk", col.chunk}, {"start_s", col.start_s}, {"end_s", col.end_s}});
  }
  return {{"stages", stages}};
}

}  // namespace fmsim::report
