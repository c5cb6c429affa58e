// NVLS: NVLink SHARP, reduction and multicast inside the NVSwitch (Hopper and later). For all_reduce
// the busiest GPU moves S (1 + 1/g) bytes: it is read once by the switch for every shard and receives
// the multicast result. One NVLink domain only (across nodes NVLS needs IB SHARP, absent on EFA).
#include "fmsim/collectives/algorithm.hpp"
#include "fmsim/collectives/tuning.hpp"

namespace fmsim::collectives {
namespace {

class Nvls final : public AlgorithmModel {
 public:
  Algorithm id() const override { return Algorithm::nvls; }

  std::optional<std::string> unsupported(Op op, const CommLayout& layout) const override {
    if (!layout.nvlink_sharp) return "nvls needs NVLink SHARP (an NVSwitch with Hopper or later GPUs)";
    if (layout.nvls_efficiency <= 0) return "nvls: the catalog gives this NVLink generation no nvls_efficiency";
    if (op != Op::all_reduce && op != Op::all_gather && op != Op::reduce_scatter) {
      return "nvls implements all_reduce, all_gather and reduce_scatter";
    }
    if (layout.islands > 1) return "nvls spans one NVLink domain (use nvls_tree across domains)";
    if (layout.ranks_per_island < 2) return "nvls needs at least 2 GPUs";
    if (op != Op::all_reduce && layout.ranks_per_island > 32) return "nvls all_gather/reduce_scatter allow at most 32 GPUs";
    return std::nullopt;
  }

  std::vector<Protocol> protocols() const override { return {Protocol::simple}; }

  TrafficShape shape(Op op, const CommLayout& layout) const override {
    TrafficShape shape;
    const double g = layout.ranks_per_island;
    shape.nvlink_bytes_per_rank = op == Op::all_reduce ? 1.0 + 1.0 / g : (g - 1) / g;
    shape.nvlink_is_nvls = true;
    // The pipeline fills one loop of NCCL's NVLS kernel: every channel handles one chunk per rank
    // (NCCL shrinks the chunk for smaller messages, hence the F S / (S + F) form in cost.cpp).
    shape.fill_loop_bytes = g * tuning::nvls_channels(layout.sm_version, false) * tuning::kNvlsChunkBytes;
    return shape;
  }

  double latency_s(Op, const CommLayout&, Protocol protocol) const override {
    return tuning::nvlink_step_latency_s(id(), protocol);
  }
};

}  // namespace

std::unique_ptr<AlgorithmModel> make_nvls() { return std::make_unique<Nvls>(); }

}  // namespace fmsim::collectives
