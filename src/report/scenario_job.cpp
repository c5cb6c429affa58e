#include "fmsim/report/scenario_job.hpp"

namespace fmsim::report {

ScenarioJob read_scenario_job(config::ObjectReader& root, const std::filesystem::path& path) {
  ScenarioJob job;
  root.optional_string("schema");
  root.optional_string("description");
  job.name = root.string_or("name", path.stem().string());
  job.command = root.choice_or("command", {"run", "serve", "checkpoint"}, "run");
  const std::filesystem::path scenario = root.required_string("scenario");
  job.scenario = scenario.is_absolute() ? scenario : path.parent_path() / scenario;
  if (root.has("set")) {
    const auto& sets = root.required_value("set");
    if (!sets.is_array()) root.fail("set", "a list of \"path=value\" strings");
    for (const auto& item : sets) {
      if (!item.is_string()) root.fail("set", "a list of \"path=value\" strings");
      job.sets.push_back(item.get<std::string>());
    }
  }
  return job;
}

}  // namespace fmsim::report
