#pragma once
// What each virtual pipeline stage holds, as Megatron-Core builds it: decoder layers, the embedding,
// the loss (output layer), the multi-token-prediction layers. From pipeline_model_parallel_layout
// (MLM pipeline_parallel_layer_layout.py, with its checks), from num_layers_in_first/last_pipeline_stage
// (uneven split), or evenly (with account_for_embedding/loss_in_pipeline_split).
#include <string>
#include <vector>

namespace fmsim::workload {

struct Parallelism;

struct PipelineStage {
  int begin = 0, end = 0;   ///< decoder layers [begin, end)
  bool embedding = false;   ///< holds the input embedding ('E')
  bool loss = false;        ///< holds the output layer and the loss ('L')
  int mtp = 0;              ///< multi-token-prediction depths it holds ('m')
  int layers() const { return end - begin; }
};

/// Expands "(tt|)*3" and "t*3" repetitions and drops ',' and spaces (throws InputError naming `where`).
std::string expand_pipeline_layout(const std::string& layout, const std::string& where);
/// Stages of a layout string: the '|'-separated parts of its expansion (an empty part is an empty stage).
int pipeline_layout_stage_count(const std::string& layout, const std::string& where);

/// The pp x vp virtual stages in model order (virtual stage = chunk x pp + rank). `mtp_layers` < 0:
/// do not check the layout's 'm' count. Throws InputError (naming `where`, with the reason) for a
/// layout Megatron rejects: wrong stage or layer count, E not first or L not last or either repeated,
/// decoder layers after an MTP layer, MTP layers split over stages or outside a rank's last chunk,
/// an MTP count that differs from the model's.
std::vector<PipelineStage> pipeline_stages(int layers, int mtp_layers, const Parallelism& p, const std::string& where);

}  // namespace fmsim::workload
