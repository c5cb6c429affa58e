// fmsim entry point: parses the command line, runs one subcommand, maps errors to exit codes
// (0 ok, 1 a threshold or regression failed, 2 bad input, 3 internal error).
#include <iostream>

#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include "cleanup.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"

int main(int argc, char** argv) {
  auto logger = spdlog::stderr_color_mt("fmsim");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("[%H:%M:%S.%e] [%^%l%$] %v");
  spdlog::set_level(spdlog::level::warn);
  auto progress = spdlog::stderr_color_mt("progress");
  progress->set_pattern("[%H:%M:%S] %v");

  CLI::App app{"fmsim: discrete-event simulator of GPU clusters for foundation-model training and inference"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "fmsim 0.1.0");
  fmsim::cli::GlobalOptions globals;
  app.add_option("--catalog", globals.catalog_dir, "hardware catalog directory (default: the shipped one)");
  app.add_flag("-v,--verbose", globals.verbose, "log what each step does to stderr");
  bool quiet = false;
  app.add_flag("-q,--quiet", quiet, "no progress lines on stderr (long sweeps and plan checks show them by default)");

  fmsim::cli::Action action;
  fmsim::cli::register_topo(app, globals, action);
  fmsim::cli::register_collective(app, globals, action);
  fmsim::cli::register_run(app, globals, action);
  fmsim::cli::register_trace(app, globals, action);
  fmsim::cli::register_checkpoint(app, globals, action);
  fmsim::cli::register_serve(app, globals, action);
  fmsim::cli::register_check(app, globals, action);
  fmsim::cli::register_sweep(app, globals, action);
  fmsim::cli::register_search(app, globals, action);
  fmsim::cli::register_report(app, globals, action);
  fmsim::cli::register_cluster(app, globals, action);
  fmsim::cli::register_contention(app, globals, action);
  fmsim::cli::register_validate(app, globals, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForAllHelp& help) {
    return app.exit(help);
  } catch (const CLI::CallForVersion& version) {
    return app.exit(version);
  } catch (const CLI::ParseError& error) {
    std::cerr << "fmsim: error: " << error.what() << " (see fmsim --help)\n";
    return 2;
  }
  if (globals.verbose) spdlog::set_level(spdlog::level::info);
  progress->set_level(quiet ? spdlog::level::off : spdlog::level::info);
  fmsim::cli::install_cleanup_handlers();
  try {
    // Output files are staged by the command and renamed into place only once it has succeeded (0, or
    // 1: a failed expectation still writes its JUnit report) and all it printed reached stdout.
    const int code = action ? action() : 2;
    fmsim::cli::flush_stdout();
    if (code == 0 || code == 1) fmsim::cli::commit_outputs();
    fmsim::cli::discard_outputs();
    return code;
  } catch (const fmsim::InputError& error) {
    fmsim::cli::discard_outputs();
    std::cerr << "fmsim: error: " << error.what() << "\n";
    return 2;
  } catch (const std::exception& error) {
    fmsim::cli::discard_outputs();
    std::cerr << "fmsim: internal error: " << error.what() << "\n";
    return 3;
  }
}
