// --set PATH=VALUE and --unset PATH, shared by the commands that read a scenario (run, trace,
// checkpoint, serve). Both land in one list in command-line order; --unset PATH becomes PATH=null,
// which apply_set turns into the removal of the key.
#include <CLI/CLI.hpp>

#include "fmsim/cli/commands.hpp"

namespace fmsim::cli {

void add_override_options(CLI::App* sub, std::vector<std::string>& sets, const std::string& example) {
  sub->add_option_function<std::vector<std::string>>(
         "--set", [&sets](const std::vector<std::string>& values) { sets.insert(sets.end(), values.begin(), values.end()); },
         "override a scenario value: PATH=VALUE (repeatable), e.g. " + example + "; PATH=null removes the key")
      ->trigger_on_parse();
  sub->add_option_function<std::vector<std::string>>(
         "--unset",
         [&sets](const std::vector<std::string>& paths) {
           for (const auto& path : paths) sets.push_back(path + "=null");
         },
         "remove a scenario key: PATH (repeatable), e.g. parallelism.pipeline_model_parallel_layout")
      ->trigger_on_parse();
}

}  // namespace fmsim::cli
