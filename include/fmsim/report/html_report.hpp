#pragma once
// `fmsim report RESULT.json --html FILE`: one self-contained page (inline CSS and SVG, no script, a
// Content-Security-Policy that forbids every fetch) for a result of `fmsim run` (step breakdown,
// pipeline time line, memory against HBM), `fmsim serve` (latency percentiles against the SLO, memory,
// replica load) or `fmsim checkpoint` (strategies compared).
#include <string>

#include <nlohmann/json.hpp>

namespace fmsim::report {

/// Throws InputError naming `file` and the key when the document is not a result fmsim knows or lacks
/// a field the page needs.
std::string html_report(const nlohmann::json& result, const std::string& file);

}  // namespace fmsim::report
