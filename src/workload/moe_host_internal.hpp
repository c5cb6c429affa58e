#pragma once
// The host stream of a rank (moe_host.hpp), for the layer pieces around a MoE block (layer_ops.cpp):
// host nodes and the gating of a step's last GPU node on its issue. Defined in moe_ops.cpp.
#include "fmsim/workload/moe_host.hpp"

namespace fmsim::workload::detail {

class TraceWriter;

/// A node on `rank`'s "host" stream that takes `seconds` of the host thread, after its previous work.
int host_issue_node(TraceWriter& w, int rank, const char* name, double seconds);
/// `node` also waits for `host` (when `node` was added after it); returns `node`.
int gate_on_host(TraceWriter& w, int node, int host);

}  // namespace fmsim::workload::detail
