// Pipeline stage contents (pipeline_layout.hpp), following MLM
// megatron/core/transformer/pipeline_parallel_layer_layout.py and transformer_config.py.
#include "fmsim/workload/pipeline_layout.hpp"

#include <algorithm>
#include <cctype>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/parallelism.hpp"

namespace fmsim::workload {
namespace {

std::string expand(std::string text, const std::string& where) {
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
      unit = expand(text.substr(i + 1, j - i - 1), where);
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

std::vector<std::string> split_stages(const std::string& expanded) {
  std::vector<std::string> stages(1);
  for (char c : expanded) {
    if (c == '|') stages.emplace_back();
    else stages.back() += c;
  }
  return stages;
}

std::vector<PipelineStage> from_layout(int layers, int mtp_layers, const Parallelism& p, const std::string& where) {
  const std::string& layout = p.layout;
  if (layout.size() > 4096) throw InputError(where + ": a pipeline layout of " + std::to_string(layout.size()) + " characters (at most 4096)");
  const std::string expanded = expand(layout, where);
  const auto parts = split_stages(expanded);
  const int total_stages = p.pp * p.vp;
  std::vector<PipelineStage> stages;
  int decoder = 0, mtp = 0, embedding = 0, loss = 0;
  for (const auto& part : parts) {
    PipelineStage stage;
    stage.begin = stage.end = decoder;
    for (char c : part) {
      if (c == 't') {
        ++stage.end;
        ++decoder;
      } else if (c == 'm') {
        ++stage.mtp;
        ++mtp;
      } else if (c == 'E') {
        stage.embedding = true;
        ++embedding;
      } else if (c == 'L') {
        stage.loss = true;
        ++loss;
      } else {
        throw InputError(where + ": pipeline layout '" + layout + "': unknown symbol '" + std::string(1, c) +
                         "' (t decoder layer, E embedding, L loss, m MTP layer, | stage, *N repeat, parentheses)");
      }
    }
    stages.push_back(stage);
  }
  const auto fail = [&](const std::string& why) {
    throw InputError(where + ": pipeline layout '" + layout + "': " + why);
  };
  if (static_cast<int>(stages.size()) != total_stages || decoder != layers) {
    fail("has " + std::to_string(stages.size()) + " stages and " + std::to_string(decoder) + " layers; expected " +
         std::to_string(total_stages) + " stages (PP x VP) and " + std::to_string(layers) +
         " layers (after changing the layers or stages, write a new layout or drop it: --unset "
         "parallelism.pipeline_model_parallel_layout)");
  }
  // MLM validate_layer_layout.
  if (embedding != 1 || expanded.find_first_not_of('|') == std::string::npos || expanded[expanded.find_first_not_of('|')] != 'E') {
    fail("the embedding 'E' must appear exactly once, as the first symbol (Megatron's layout rule)");
  }
  if (loss != 1 || expanded[expanded.find_last_not_of('|')] != 'L') {
    fail("the loss 'L' must appear exactly once, as the last symbol (Megatron's layout rule)");
  }
  if (mtp_layers >= 0 && mtp != mtp_layers) {
    fail("holds " + std::to_string(mtp) + " MTP layers ('m') but the model has " + std::to_string(mtp_layers) +
         " (num_nextn_predict_layers, or training.mtp_num_layers); Megatron needs them equal");
  }
  if (mtp > 0) {
    const auto first_m = expanded.find('m');
    if (expanded.find('t', first_m) != std::string::npos) fail("decoder layers 't' must come before the MTP layers 'm'");
    int holding = 0, where_m = -1;
    for (int i = 0; i < total_stages; ++i) {
      if (stages[i].mtp > 0) {
        ++holding;
        where_m = i;
      }
    }
    if (holding != 1) fail("all MTP layers 'm' must be in one stage");
    if (where_m < (p.vp - 1) * p.pp) {
      fail("the MTP layers must be in the last virtual stage (model chunk) of a pipeline rank; stage " +
           std::to_string(where_m) + " is chunk " + std::to_string(where_m / p.pp) + " of " + std::to_string(p.vp));
    }
    if (where_m % p.pp == 0 && p.pp > 1) fail("the MTP layers cannot be on the first pipeline rank");
  }
  return stages;
}

std::vector<int> uneven_counts(int layers, const Parallelism& p, const std::string& where) {
  const int stages = p.pp * p.vp;
  const auto fail = [&](const std::string& key, int value, const std::string& why) {
    throw InputError(where + ": /parallelism/" + key + " = " + std::to_string(value) + ": " + why);
  };
  int middle_layers = layers, middle_ranks = p.pp;
  for (const auto& [key, value] : {std::pair<std::string, int>{"num_layers_in_first_pipeline_stage", p.first_stage_layers},
                                   std::pair<std::string, int>{"num_layers_in_last_pipeline_stage", p.last_stage_layers}}) {
    if (value <= 0) continue;
    if (value % p.vp != 0) fail(key, value, "must be divisible by virtual_pipeline_model_parallel_size " + std::to_string(p.vp));
    middle_layers -= value;
    --middle_ranks;
  }
  if (middle_ranks < 0 || middle_layers < 0 || (middle_layers > 0) != (middle_ranks > 0)) {
    fail("num_layers_in_first_pipeline_stage", p.first_stage_layers,
         std::to_string(middle_layers) + " layers remain for " + std::to_string(std::max(middle_ranks, 0)) +
             " middle pipeline ranks (Megatron needs layers for every middle rank and none without one)");
  }
  if (middle_ranks > 0 && (middle_layers % middle_ranks != 0 || middle_layers / middle_ranks % p.vp != 0)) {
    fail("num_layers_in_first_pipeline_stage", p.first_stage_layers,
         "leaves " + std::to_string(middle_layers) + " layers for " + std::to_string(middle_ranks) +
             " middle pipeline ranks: not a multiple of the ranks x virtual_pipeline_model_parallel_size");
  }
  // Per rank, then split evenly over its vp chunks (virtual stage = chunk x pp + rank).
  std::vector<int> counts(stages, 0);
  for (int rank = 0; rank < p.pp; ++rank) {
    int per_rank = middle_ranks > 0 ? middle_layers / middle_ranks : 0;
    if (rank == 0 && p.first_stage_layers > 0) per_rank = p.first_stage_layers;
    if (rank == p.pp - 1 && p.last_stage_layers > 0) per_rank = p.last_stage_layers;
    for (int chunk = 0; chunk < p.vp; ++chunk) counts[chunk * p.pp + rank] = per_rank / p.vp;
  }
  return counts;
}

}  // namespace

std::string expand_pipeline_layout(const std::string& layout, const std::string& where) { return expand(layout, where); }

int pipeline_layout_stage_count(const std::string& layout, const std::string& where) {
  if (layout.size() > 4096) throw InputError(where + ": a pipeline layout of " + std::to_string(layout.size()) + " characters (at most 4096)");
  return static_cast<int>(split_stages(expand(layout, where)).size());
}

std::vector<PipelineStage> pipeline_stages(int layers, int mtp_layers, const Parallelism& p, const std::string& where) {
  if (!p.layout.empty()) return from_layout(layers, mtp_layers, p, where);
  const int stages = p.pp * p.vp;
  std::vector<int> counts;
  if (p.first_stage_layers > 0 || p.last_stage_layers > 0) {
    counts = uneven_counts(layers, p, where);
  } else {
    const int slots = layers + (p.account_for_embedding ? 1 : 0) + (p.account_for_loss ? 1 : 0);
    const int base = slots / stages, extra = slots % stages;
    counts.assign(stages, base);
    // The remainder goes to the middle stages, away from the embedding and the loss.
    for (int i = 0; i < extra; ++i) ++counts[(stages - extra) / 2 + i];
    if (p.account_for_embedding) --counts.front();
    if (p.account_for_loss) --counts.back();
    for (int c : counts) {
      if (c < 0) throw InputError(where + ": too few layers (" + std::to_string(layers) + ") for " + std::to_string(stages) + " pipeline stages");
    }
  }
  std::vector<PipelineStage> out;
  int begin = 0;
  for (int c : counts) {
    PipelineStage stage;
    stage.begin = begin;
    stage.end = begin + c;
    begin += c;
    out.push_back(stage);
  }
  out.front().embedding = true;
  out.back().loss = true;
  out.back().mtp = std::max(mtp_layers, 0);  // Megatron's default: MTP on the last stage, before the loss
  return out;
}

}  // namespace fmsim::workload
