#include "progress.hpp"

namespace fmsim::cli {

std::shared_ptr<spdlog::logger> progress() { return spdlog::get("progress"); }

}  // namespace fmsim::cli
