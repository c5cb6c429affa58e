#pragma once
// Each subcommand registers its options on the CLI11 app and returns the action to run once parsing
// succeeded. Actions return the process exit code and throw InputError for bad input.
#include <functional>
#include <string>
#include <vector>

#include "fmsim/hardware/catalog.hpp"

namespace CLI {
class App;
}

namespace fmsim::cli {

struct GlobalOptions {
  std::string catalog_dir;  ///< empty = Catalog::default_directory()
  bool verbose = false;
};

using Action = std::function<int()>;

/// The catalog named by --catalog, else the default one.
hardware::Catalog load_catalog(const GlobalOptions& globals);

/// Registers --set PATH=VALUE and --unset PATH on `sub`; both append to `sets` in command-line order
/// (--unset PATH as PATH=null, which removes the key).
void add_override_options(CLI::App* sub, std::vector<std::string>& sets, const std::string& example);

void register_topo(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_collective(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_run(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_trace(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_checkpoint(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_serve(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_check(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_sweep(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_search(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_report(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_cluster(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_contention(CLI::App& app, const GlobalOptions& globals, Action& action);
void register_validate(CLI::App& app, const GlobalOptions& globals, Action& action);

}  // namespace fmsim::cli
