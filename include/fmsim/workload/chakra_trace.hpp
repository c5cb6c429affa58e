#pragma once
// MLCommons Chakra execution traces (protobuf, proto/chakra_et.proto): one file per rank,
// PREFIX.RANK.et, plus PREFIX.comm_groups.json (ASTRA-sim's process-group file: {"0": [ranks], ...}).
// fmsim writes its own traces in that form (every rank, each node with Chakra's attributes for ASTRA-sim
// and fmsim_* attributes that keep the trace lossless) and reads traces that Chakra's converters and
// PyTorch's execution-trace observer produce. Reading goes through the fmsim.trace/1 JSON document, so
// every check of trace_from_json applies. docs/formats.md, "Chakra execution traces".
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/workload/trace.hpp"

namespace fmsim::workload {

/// True when `path` names a Chakra trace: PATH.0.et exists, or PATH ends in ".RANK.et".
bool is_chakra_trace(const std::string& path);

/// Reads every rank's file of the trace `path` names (the prefix, or any one of its files) into an
/// fmsim.trace/1 document. `tokens_per_step`, `model_flops_per_step` and `scenario` are present only when
/// the trace carries them (fmsim writes them); a caller fills them from its scenario otherwise. Throws
/// InputError naming the file, the byte offset or node, and what is wrong (a truncated message, an
/// unknown node type, a dependency on a missing node, a process group not in comm_groups.json).
nlohmann::json read_chakra_trace(const std::string& path);

/// The files of a full trace (every rank; a symmetric trace is refused) as (path, bytes): PREFIX.RANK.et
/// for each rank and PREFIX.comm_groups.json. `duration_s` prices a compute node for Chakra's
/// duration_micros (the replay re-prices fmsim's own nodes from their fmsim_* attributes).
std::vector<std::pair<std::string, std::string>> chakra_files(const Trace& trace, const std::string& prefix,
                                                             const std::function<double(const TraceNode&)>& duration_s);

}  // namespace fmsim::workload
