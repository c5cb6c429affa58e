#include "progress.hpp"

#include <spdlog/sinks/null_sink.h>

namespace fmsim::cli {

std::shared_ptr<spdlog::logger> progress() {
  static const auto silent = std::make_shared<spdlog::logger>("progress-off", std::make_shared<spdlog::sinks::null_sink_mt>());
  auto logger = spdlog::get("progress");
  return logger ? logger : silent;
}

}  // namespace fmsim::cli
