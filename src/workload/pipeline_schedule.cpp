#include "fmsim/workload/pipeline_schedule.hpp"

#include <algorithm>
#include <cctype>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/parallelism.hpp"
#include "fmsim/workload/pipeline_layout.hpp"

namespace fmsim::workload {

std::vector<PipelinePass> pipeline_order(int pp, int vp, int microbatches, int rank, int extra_warmup) {
  const int total = microbatches * vp;
  auto pass = [&](int k, bool forward) {
    PipelinePass p;
    p.forward = forward;
    if (vp == 1) {
      p.microbatch = k;
      return p;
    }
    const int group = k / (pp * vp), within = k % (pp * vp);
    p.chunk = within / pp;
    p.microbatch = group * pp + within % pp;
    if (!forward) p.chunk = vp - 1 - p.chunk;
    return p;
  };
  int warmup = (vp == 1 ? pp - rank - 1 : 2 * (pp - rank - 1) + (vp - 1) * pp) + extra_warmup;
  warmup = std::min(warmup, total);
  std::vector<PipelinePass> order;
  order.reserve(2 * total);
  for (int k = 0; k < warmup; ++k) order.push_back(pass(k, true));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(pass(warmup + i, true));
    order.push_back(pass(i, false));
    order[order.size() - 2].steady = order.back().steady = true;
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(pass(k, false));
  return order;
}

std::vector<std::pair<int, int>> stage_layers(int layers, int stages, bool account_for_embedding, bool account_for_loss,
                                              const std::string& layout, const std::string& where) {
  Parallelism p;
  p.pp = stages;
  p.account_for_embedding = account_for_embedding;
  p.account_for_loss = account_for_loss;
  p.layout = layout;
  std::vector<std::pair<int, int>> ranges;
  for (const auto& stage : pipeline_stages(layers, -1, p, where)) ranges.emplace_back(stage.begin, stage.end);
  return ranges;
}

}  // namespace fmsim::workload
