#pragma once
// Escaping for text placed in XML or HTML (element text and quoted attributes): JUnit reports, the
// HTML report and its SVG charts.
#include <string>
#include <string_view>

namespace fmsim {

/// & < > " ' replaced by their entities.
std::string markup_escape(std::string_view text);

}  // namespace fmsim
