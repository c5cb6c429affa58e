#pragma once
// Megatron-Core pipeline schedules (MEGATRON-NOTES.md section 2): the order in which one pipeline rank
// runs the forward and backward passes of its micro-batches and model chunks, and which layers each
// virtual stage holds.
#include <utility>
#include <vector>

namespace fmsim::workload {

struct PipelinePass {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;  ///< model chunk on this rank (virtual stage = chunk x pp + rank)
};

/// 1F1B when vp == 1 (warm-up pp - rank - 1 forwards); interleaved otherwise, with micro-batch groups
/// of pp and warm-up 2 (pp - rank - 1) + (vp - 1) pp, capped at microbatches x vp.
std::vector<PipelinePass> pipeline_order(int pp, int vp, int microbatches, int rank);

/// Layers [begin, end) of each virtual stage (pp x vp of them, in model order). When the layers do not
/// divide evenly, the embedding and the loss count as one layer each (Megatron's
/// account_for_embedding/loss_in_pipeline_split) if that makes them divide; otherwise the earlier
/// stages get one layer more.
std::vector<std::pair<int, int>> stage_layers(int layers, int stages);

}  // namespace fmsim::workload
