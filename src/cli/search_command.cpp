// fmsim search SEARCH.json [--json FILE|-] [--best FILE] [--top N] [--resimulate K] [--jobs N]
// Finds the best training layout, instance type and cluster size under the spec's limits: enumerates and
// prunes the candidates, ranks the survivors with the analytic tier, re-simulates the best K with
// contention (`fmsim run` in child processes) and prints the ranked table and the Pareto front.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "child_process.hpp"
#include "progress.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/search/ranking.hpp"

namespace fmsim::cli {
namespace {

struct SearchOptions {
  std::string spec_file, json_file, best_file;
  int top = -1, resimulate = -1, jobs = 0;
};

/// Re-simulates the candidates [0, k) with `fmsim run` (contention, the step's full schedule), --jobs at a time.
void resimulate(const GlobalOptions& globals, const search::SearchSpec& spec, std::vector<search::Candidate>& ranked, int k, int jobs) {
  if (k <= 0) return;
  const auto dir = std::filesystem::temp_directory_path() / ("fmsim-search-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::atomic<int> next{0};
  std::mutex lock;
  int finished = 0;
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (int i = next++; i < k; i = next++) {
      auto& c = ranked[i];
      const auto file = dir / ("candidate-" + std::to_string(i) + ".json");
      {
        std::ofstream out(file);
        out << search::scenario_document(spec, c).dump(2) << "\n";
      }
      std::vector<std::string> args;
      if (!globals.catalog_dir.empty()) args = {"--catalog", globals.catalog_dir};
      for (const char* a : {"run", "--json", "-"}) args.emplace_back(a);
      args.push_back(file.string());
      const ChildResult child = run_fmsim(args);
      std::lock_guard<std::mutex> guard(lock);
      ++finished;
      if (child.exit_code != 0) {
        if (failure.empty()) failure = c.layout() + " on " + c.where() + ": " + error_message(child);
        continue;
      }
      const auto doc = nlohmann::json::parse(child.out, nullptr, false);
      if (doc.is_discarded() || !doc.contains("step_time_s")) {
        if (failure.empty()) failure = c.layout() + ": unreadable fmsim run output";
        continue;
      }
      search::take_simulation(doc, c);
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      progress()->info("search: re-simulated {}/{} ({} on {}: {:.3f} s simulated vs {:.3f} s analytic), {:.0f} s", finished, k, c.layout(),
                       c.where(), c.step_s, c.analytic.step_s, elapsed);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min(jobs, k); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!failure.empty()) throw InternalError("a re-simulation failed: " + failure);
}

int run_search(const GlobalOptions& globals, const SearchOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  search::SearchSpec spec = search::load_search(o.spec_file);
  if (o.top > 0) spec.top = o.top;
  if (o.resimulate >= 0) spec.resimulate = o.resimulate;
  const auto catalog = load_catalog(globals);
  search::Pruning pruning;
  auto candidates = search::evaluate_candidates(spec, catalog, pruning, [](const std::string& stage, long long done, long long total) {
    progress()->info("search: cluster {}/{}: {}", done, total, stage);
  });
  const double rank_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  search::rank(spec, candidates);
  progress()->info("search: {} candidates enumerated, {} ranked by the analytic tier in {:.2f} s", pruning.enumerated, pruning.ranked, rank_s);
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  const int k = std::min<int>(spec.resimulate, static_cast<int>(candidates.size()));
  const auto sim_start = std::chrono::steady_clock::now();
  resimulate(globals, spec, candidates, k, jobs);
  const double resim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sim_start).count();
  search::rank(spec, candidates);  // the simulated candidates by their simulated figures
  search::SearchTiming timing{rank_s, resim_s, k};

  const std::string best_file = o.best_file.empty() ? spec.name + "-best.json" : o.best_file;
  const std::string table = search::summary_text(spec, candidates, pruning, timing, best_file);
  if (o.json_file != "-") write_output("-", table);
  if (!o.json_file.empty()) write_output(o.json_file, search::result_json(spec, candidates, pruning, timing, best_file).dump(2) + "\n");
  write_output(best_file, search::scenario_document(spec, candidates.front()).dump(2) + "\n");
  return 0;
}

}  // namespace

void register_search(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<SearchOptions>();
  CLI::App* sub = app.add_subcommand("search", "find the best training layout, instance type and cluster size under memory, cost and deadline limits");
  sub->add_option("spec", o->spec_file, "search file (configs/search/*.json, docs/formats.md)")->required();
  sub->add_option("--json", o->json_file, "write the result document ('-' = stdout, replaces the table)");
  sub->add_option("--best", o->best_file, "where to write the winning scenario (default: NAME-best.json in the working directory)");
  sub->add_option("--top", o->top, "rows of the ranked table (default: the spec's top, else 20)")->check(CLI::Range(1, 100000));
  sub->add_option("--resimulate", o->resimulate, "best candidates re-simulated with contention (default: the spec's, else 20)")
      ->check(CLI::Range(0, 10000));
  sub->add_option("--jobs", o->jobs, "re-simulations at once (default: the number of cores)")->check(CLI::Range(1, 1024));
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_search(globals, *o); }; });
}

}  // namespace fmsim::cli
