// NVLS_TREE: NVLS reduce-scatter inside each NVLink domain, a tree between domains on each GPU's
// shard, NVLS all-gather back; all three pipelined in 512 KiB chunks.
#include <cmath>

#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

class NvlsTree final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::nvls_tree; }

  std::optional<std::string> unsupported(Op op, const CommLayout& layout) const override {
    if (!layout.nvlink_sharp) return "nvls_tree needs NVLink SHARP (an NVSwitch with Hopper or later GPUs)";
    if (layout.nvls_efficiency <= 0) return "nvls_tree: the catalog gives this NVLink generation no nvls_efficiency";
    if (op != Op::all_reduce) return "nvls_tree implements all_reduce only";
    if (layout.islands < 2) return "nvls_tree needs more than one NVLink domain (use nvls inside one)";
    if (layout.ranks_per_island < 2) return "nvls_tree needs at least 2 GPUs per NVLink domain";
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::simple}; }

  TrafficShape shape(Op, const CommLayout& layout) const override {
    TrafficShape shape;
    const double g = layout.ranks_per_island;
    shape.nvlink_bytes_per_rank = 1.0 + 1.0 / g;
    shape.nvlink_is_nvls = true;
    shape.net_bytes_per_island = double_binary_tree_bytes_per_island(layout.islands);
    shape.pattern = NetPattern::ring_next;
    // Stages a chunk passes: NVLS reduce, proxy send, wire, reduction with the peer's shard, proxy,
    // NVLS multicast.
    shape.fill_stages = 6;
    // Inside each domain it runs NVLS kernels, whose loop must fill too (an NVL72 domain: 72 ranks).
    shape.fill_loop_bytes = g * tuning::nvls_channels(layout.sm_version, true) * tuning::kNvlsChunkBytes;
    shape.net_chunk_overhead_s = tuning::kNvlsTreeNetChunkOverhead_s;
    return shape;
  }

  double latency_s(Op, const CommLayout& layout, Protocol protocol) const override {
    return tuning::nvlink_step_latency_s(id(), protocol) +
           2.0 * std::log2(static_cast<double>(layout.islands)) *
               tuning::network_step_latency_s(id(), protocol, layout.net_message_latency_s);
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_nvls_tree() { return std::make_unique<NvlsTree>(); }

}  // namespace fmsim::collectives
