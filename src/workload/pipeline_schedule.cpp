#include "fmsim/workload/pipeline_schedule.hpp"

#include <algorithm>
#include <cctype>

#include "fmsim/common/error.hpp"

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

namespace {

/// Expands "(t*2|)*3" and "t*3" repetitions; drops ','.
std::string expand_layout(std::string text, const std::string& where) {
  text.erase(std::remove(text.begin(), text.end(), ','), text.end());
  text.erase(std::remove(text.begin(), text.end(), ' '), text.end());
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    std::string unit;
    if (text[i] == '(') {
      int depth = 0;
      std::size_t j = i;
      for (; j < text.size(); ++j) {
        depth += text[j] == '(' ? 1 : text[j] == ')' ? -1 : 0;
        if (depth == 0) break;
      }
      if (j == text.size()) throw InputError(where + ": unbalanced parentheses in the pipeline layout");
      unit = expand_layout(text.substr(i + 1, j - i - 1), where);
      i = j + 1;
    } else {
      unit = std::string(1, text[i]);
      ++i;
    }
    int repeat = 1;
    if (i < text.size() && text[i] == '*') {
      std::size_t j = i + 1;
      while (j < text.size() && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
      if (j == i + 1) throw InputError(where + ": '*' must be followed by a count in the pipeline layout");
      // No layout has more symbols than a model has layers and stages: a few thousand.
      constexpr std::size_t kMaxLayoutSymbols = 1 << 16;
      const std::string count = text.substr(i + 1, j - i - 1);
      if (count.size() > 5 || std::stoi(count) * unit.size() + out.size() > kMaxLayoutSymbols) {
        throw InputError(where + ": the pipeline layout repeats '" + unit.substr(0, 20) + "' " + count.substr(0, 20) +
                         " times: more than the " + std::to_string(kMaxLayoutSymbols) + " symbols a layout may expand to");
      }
      repeat = std::stoi(count);
      i = j;
    }
    for (int r = 0; r < repeat; ++r) out += unit;
  }
  return out;
}

}  // namespace

std::vector<std::pair<int, int>> stage_layers(int layers, int stages, bool account_for_embedding, bool account_for_loss,
                                              const std::string& layout, const std::string& where) {
  std::vector<int> counts;
  if (!layout.empty()) {
    if (layout.size() > 4096) throw InputError(where + ": a pipeline layout of " + std::to_string(layout.size()) + " characters (at most 4096)");
    const std::string expanded = expand_layout(layout, where);
    counts.push_back(0);
    for (char c : expanded) {
      if (c == '|') counts.push_back(0);
      else if (c == 't') ++counts.back();
      else if (c != 'E' && c != 'L' && c != 'm') {
        throw InputError(where + ": pipeline layout '" + layout + "': unknown symbol '" + std::string(1, c) + "' (t, E, L, m, |, *, parentheses)");
      }
    }
    if (!counts.empty() && counts.back() == 0 && expanded.back() == '|') counts.pop_back();
    int total = 0;
    for (int c : counts) total += c;
    if (static_cast<int>(counts.size()) != stages || total != layers) {
      throw InputError(where + ": pipeline layout '" + layout + "' has " + std::to_string(counts.size()) + " stages and " +
                       std::to_string(total) + " layers; expected " + std::to_string(stages) + " stages (PP x VP) and " +
                       std::to_string(layers) + " layers (after changing the layers or stages, write a new layout "
                       "or drop it: --unset parallelism.pipeline_model_parallel_layout)");
    }
  } else {
    const int slots = layers + (account_for_embedding ? 1 : 0) + (account_for_loss ? 1 : 0);
    const int base = slots / stages, extra = slots % stages;
    counts.assign(stages, base);
    // The remainder goes to the middle stages, away from the embedding and the loss.
    for (int i = 0; i < extra; ++i) ++counts[(stages - extra) / 2 + i];
    if (account_for_embedding) --counts.front();
    if (account_for_loss) --counts.back();
    for (int c : counts) {
      if (c < 0) throw InputError(where + ": too few layers (" + std::to_string(layers) + ") for " + std::to_string(stages) + " pipeline stages");
    }
  }
  std::vector<std::pair<int, int>> ranges;
  int begin = 0;
  for (int c : counts) {
    ranges.emplace_back(begin, begin + c);
    begin += c;
  }
  return ranges;
}

}  // namespace fmsim::workload
