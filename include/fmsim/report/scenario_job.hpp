#pragma once
// What plans and sweeps share: a named scenario, the command that evaluates it (run, serve or
// checkpoint) and the --set overrides applied first, read from the same keys of both file kinds.
#include <filesystem>
#include <string>
#include <vector>

#include "fmsim/config/object_reader.hpp"

namespace fmsim::report {

struct ScenarioJob {
  std::string name;
  std::string command;                ///< run, serve or checkpoint
  std::filesystem::path scenario;     ///< resolved against the file's directory
  std::vector<std::string> sets;
};

/// Reads "schema", "description", "name", "command", "scenario" and "set" from a plan or sweep file's
/// root object at `path`. Throws InputError naming the key.
ScenarioJob read_scenario_job(config::ObjectReader& root, const std::filesystem::path& path);

}  // namespace fmsim::report
