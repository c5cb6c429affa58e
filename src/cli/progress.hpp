#pragma once
// Progress of long commands (sweeps, plan checks) on stderr: shown by default, silenced by -q/--quiet.
// Diagnostics stay on the default logger, which shows warnings unless -v.
#include <memory>

#include <spdlog/spdlog.h>

namespace fmsim::cli {

/// The "progress" logger, which main() registers before any command runs.
std::shared_ptr<spdlog::logger> progress();

}  // namespace fmsim::cli
