#pragma once
// Runs this fmsim binary again as a child process (one simulation per process, as SimGrid requires)
// and captures what it prints. Used by `fmsim check` and `fmsim sweep`.
#include <string>
#include <vector>

#include "fmsim/report/scenario_job.hpp"

namespace fmsim::cli {

struct ChildResult {
  int exit_code = 0;
  std::string out;   ///< stdout
  std::string err;   ///< stderr
};

/// Runs `fmsim ARGS...` (the running executable) and waits for it. Throws InternalError when it cannot start.
ChildResult run_fmsim(const std::vector<std::string>& arguments);

/// The arguments of `fmsim [--catalog DIR] COMMAND SCENARIO --json - --set ...` for a plan's or sweep's
/// job, with `extra_sets` after the job's own (a sweep point's values).
std::vector<std::string> json_result_arguments(const std::string& catalog_dir, const report::ScenarioJob& job,
                                               const std::vector<std::string>& extra_sets = {});

/// A failed child's one-line error message: the last line of its stderr, without the "fmsim: error: " prefix.
std::string error_message(const ChildResult& child);

}  // namespace fmsim::cli
