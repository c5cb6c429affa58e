#pragma once
// `fmsim search` on a serving search file (schema fmsim.serve-search/1): the replica search per layout,
// each trial an `fmsim serve` child process (serve_search_run.cpp).
#include <string>

#include "fmsim/cli/commands.hpp"

namespace fmsim::cli {

struct ServeSearchOptions {
  std::string spec_file, json_file, best_file;
  int top = -1, jobs = 0;
};

int run_serve_search(const GlobalOptions& globals, const ServeSearchOptions& options);

}  // namespace fmsim::cli
