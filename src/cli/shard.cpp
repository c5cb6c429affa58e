#include "shard.hpp"

#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

#include "fmsim/common/error.hpp"

namespace fmsim::cli {
namespace {

std::optional<int> env_int(const char* name) {
  const char* text = std::getenv(name);
  if (!text || !*text) return std::nullopt;
  try {
    return std::stoi(text);
  } catch (const std::exception&) {
    throw InputError(std::string("$") + name + " = '" + text + "': expected an integer");
  }
}

}  // namespace

std::pair<int, int> shard_of(int index, int count) {
  if (index < 0) {
    if (auto slurm = env_int("SLURM_ARRAY_TASK_ID")) {
      index = *slurm - env_int("SLURM_ARRAY_TASK_MIN").value_or(0);
      if (count < 0) count = env_int("SLURM_ARRAY_TASK_COUNT").value_or(-1);
    } else if (auto k8s = env_int("JOB_COMPLETION_INDEX")) {
      index = *k8s;
      if (count < 0) throw InputError("$JOB_COMPLETION_INDEX is set: give the number of shards with --shard-count (the Job's completions)");
    }
  }
  if (index < 0 && count < 0) return {0, 1};
  if (count < 1) throw InputError("--shard-index " + std::to_string(index) + " needs --shard-count N >= 1");
  if (index < 0 || index >= count) {
    throw InputError("--shard-index " + std::to_string(index) + ": expected 0 <= index < --shard-count " + std::to_string(count));
  }
  return {index, count};
}

}  // namespace fmsim::cli
