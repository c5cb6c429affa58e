#include "fmsim/workload/pipeline_schedule.hpp"

#include <algorithm>

namespace fmsim::workload {

std::vector<PipelinePass> pipeline_order(int pp, int vp, int microbatches, int rank) {
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
  int warmup = vp == 1 ? pp - rank - 1 : 2 * (pp - rank - 1) + (vp - 1) * pp;
  warmup = std::min(warmup, total);
  std::vector<PipelinePass> order;
  order.reserve(2 * total);
  for (int k = 0; k < warmup; ++k) order.push_back(pass(k, true));
  for (int i = 0; i < total - warmup; ++i) {
    order.push_back(pass(warmup + i, true));
    order.push_back(pass(i, false));
  }
  for (int k = total - warmup; k < total; ++k) order.push_back(pass(k, false));
  return order;
}

std::vector<std::pair<int, int>> stage_layers(int layers, int stages) {
  std::vector<std::pair<int, int>> ranges;
  if (layers % stages != 0 && (layers + 2) % stages == 0 && stages > 1) {
    const int per = (layers + 2) / stages;
    int begin = 0;
    for (int s = 0; s < stages; ++s) {
      int count = per - (s == 0 ? 1 : 0) - (s == stages - 1 ? 1 : 0);
      ranges.emplace_back(begin, begin + count);
      begin += count;
    }
    return ranges;
  }
  const int base = layers / stages, extra = layers % stages;
  int begin = 0;
  for (int s = 0; s < stages; ++s) {
    int count = base + (s < extra ? 1 : 0);
    ranges.emplace_back(begin, begin + count);
    begin += count;
  }
  return ranges;
}

}  // namespace fmsim::workload
