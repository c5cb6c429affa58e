#pragma once
#include <string>

namespace fmsim::cli {

/// Writes `content` to `path` ("-" = stdout). A file is written to a temporary name beside it and then
/// renamed, so a failed run never leaves a partial output file. Throws InputError if it cannot write.
void write_output(const std::string& path, const std::string& content);

}  // namespace fmsim::cli
