#pragma once
// Megatron-Core pipeline schedules (MEGATRON-NOTES.md section 2): the order in which one pipeline rank
// runs the forward and backward passes of its micro-batches and model chunks, and which layers each
// virtual stage holds.
#include <string>
#include <utility>
#include <vector>

namespace fmsim::workload {

struct PipelinePass {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  ///< model chunk on this rank (virtual stage = chunk x pp + rank)
  bool steady = false;  ///< in the steady state (one forward then one backward), not warm-up or cool-down
};

/// 1F1B when vp == 1 (warm-up pp - rank - 1 forwards); interleaved otherwise, with micro-batch groups
/// of pp and warm-up 2 (pp - rank - 1) + (vp - 1) pp, capped at microbatches x vp. `extra_warmup`
/// forwards more (1 with overlap_moe_expert_parallel_comm, MLM get_pp_rank_microbatches) make each
/// steady-state forward independent of the backward it is paired with.
std::vector<PipelinePass> pipeline_order(int pp, int vp, int microbatches, int rank, int extra_warmup = 0);

/// Layers [begin, end) of each virtual stage (pp x vp of them, in model order), as Megatron splits
/// them: from `layout` (pipeline_model_parallel_layout: stages separated by '|', 't' a layer, 'E'
/// embedding, 'L' loss, "x*n" and "(...)*n" repeat, ',' ignored) when given; else evenly, the embedding
/// and the loss counting as one layer each when accounted for. Layers that do not divide evenly go one
/// each to the middle stages. Throws InputError (naming `where`) for a layout that does not fit.
std::vector<std::pair<int, int>> stage_layers(int layers, int stages, bool account_for_embedding = false,
                                              bool account_for_loss = false, const std::string& layout = "",
                                              const std::string& where = "");

}  // namespace fmsim::workload
