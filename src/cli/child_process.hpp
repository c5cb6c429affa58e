#pragma once
// Runs this fmsim binary again as a child process (one simulation per process, as SimGrid requires)
// and captures what it prints. Used by `fmsim check` and `fmsim sweep`.
#include <string>
#include <vector>

namespace fmsim::cli {

struct ChildResult {
  int exit_code = 0;
  std::string out;   ///< stdout
  std::string err;   ///< stderr
};

/// Runs `fmsim ARGS...` (the running executable) and waits for it. Throws InternalError when it cannot start.
ChildResult run_fmsim(const std::vector<std::string>& arguments);

/// A failed child's one-line error message: the last line of its stderr, without the "fmsim: error: " prefix.
std::string error_message(const ChildResult& child);

}  // namespace fmsim::cli
