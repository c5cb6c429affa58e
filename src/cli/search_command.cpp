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
#include <map>
#include <set>
#include <memory>
#include <mutex>
#include <thread>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "child_process.hpp"
#include "progress.hpp"
#include "serve_search_run.hpp"
#include "shard.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/search/ranking.hpp"
#include "fmsim/search/serve_search.hpp"

namespace fmsim::cli {
namespace {

struct SearchOptions {
  std::string spec_file, json_file, best_file;
  int top = -1, resimulate = -1, jobs = 0;
  int shard_index = -1, shard_count = -1;
  std::vector<std::string> merge;  ///< shard result files to join
};

/// Re-simulates the candidates [0, k) whose index is this shard's (index mod count) with `fmsim run`
/// (contention, the step's full schedule), --jobs at a time.
void resimulate(const GlobalOptions& globals, const search::SearchSpec& spec, std::vector<search::Candidate>& ranked, int k, int jobs,
                int shard_index = 0, int shard_count = 1) {
  if (k <= 0) return;
  std::vector<int> mine;
  for (int i = 0; i < k; ++i) {
    if (i % shard_count == shard_index) mine.push_back(i);
  }
  const int todo = static_cast<int>(mine.size());
  const auto dir = std::filesystem::temp_directory_path() / ("fmsim-search-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  std::atomic<int> next{0};
  std::mutex lock;
  int finished = 0;
  std::string failure;
  const auto start = std::chrono::steady_clock::now();
  auto worker = [&] {
    for (int n = next++; n < todo; n = next++) {
      const int i = mine[n];
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
      progress()->info("search: re-simulated {}/{} ({} on {}: {:.3f} s simulated vs {:.3f} s analytic), {:.0f} s", finished, todo, c.layout(),
                       c.where(), c.step_s, c.analytic.step_s, elapsed);
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min(jobs, todo); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  std::error_code ignored;
  std::filesystem::remove_all(dir, ignored);
  if (!failure.empty()) throw InternalError("a re-simulation failed: " + failure);
}

/// The shard files of a sharded search: each one's re-simulated candidates (by candidate_key), after
/// checking that they come from this spec and one sharding and together cover every shard.
std::map<std::string, nlohmann::json> read_shards(const search::SearchSpec& spec, const std::vector<std::string>& files) {
  std::map<std::string, nlohmann::json> simulated;
  std::set<int> seen;
  int count = -1;
  for (const auto& file : files) {
    const nlohmann::json doc = config::load_json_file(file).root;
    const auto where = [&](const std::string& key) { return file + ": at /" + key + ": "; };
    if (!doc.is_object() || doc.value("schema", std::string()) != "fmsim.search-result/1" || !doc.contains("shard")) {
      throw InputError(file + ": expected the --json result of a sharded fmsim search (schema fmsim.search-result/1 with \"shard\")");
    }
    if (doc.value("name", std::string()) != spec.name) {
      throw InputError(where("name") + "found \"" + doc.value("name", std::string()) + "\", expected this spec's \"" + spec.name + "\"");
    }
    const auto& shard = doc["shard"];
    const int index = shard.value("index", -1), n = shard.value("count", -1);
    if (count < 0) count = n;
    if (n != count || index < 0 || index >= n) {
      throw InputError(where("shard") + "found " + shard.dump() + ", expected index < count and the same count in every file (" +
                       std::to_string(count) + ")");
    }
    if (!seen.insert(index).second) throw InputError(where("shard/index") + "shard " + std::to_string(index) + " given twice");
    if (!shard.contains("resimulated") || !shard["resimulated"].is_array()) throw InputError(where("shard/resimulated") + "expected a list");
    for (const auto& row : shard["resimulated"]) simulated[search::candidate_key(row)] = row;
  }
  if (static_cast<int>(seen.size()) != count) {
    spdlog::warn("search --merge: {} of {} shards given: the others' candidates keep their analytic figures", seen.size(), count);
  }
  return simulated;
}

int run_search(const GlobalOptions& globals, const SearchOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  // A serving search file (schema fmsim.serve-search/1) runs the serving search (serve_search_run.cpp).
  if (search::is_serve_search(config::load_json_file(o.spec_file).root)) {
    if (!o.merge.empty() || o.shard_index >= 0 || o.shard_count >= 0 || o.resimulate >= 0) {
      throw InputError(o.spec_file + ": a serving search takes no --merge, --shard-index, --shard-count or --resimulate");
    }
    return run_serve_search(globals, ServeSearchOptions{o.spec_file, o.json_file, o.best_file, o.top, o.jobs});
  }
  search::SearchSpec spec = search::load_search(o.spec_file);
  if (o.top > 0) spec.top = o.top;
  if (o.resimulate >= 0) spec.resimulate = o.resimulate;
  if (spec.limits.min_goodput && spec.resimulate <= 0) {
    throw InputError(spec.file + ": at /limits/min_goodput: goodput is known only for re-simulated candidates; expected resimulate >= 1");
  }
  if (!o.merge.empty() && (o.shard_index >= 0 || o.shard_count >= 0)) {
    throw InputError("--merge joins the shards' results: it takes no --shard-index or --shard-count");
  }
  const auto [shard_index, shard_count] = o.merge.empty() ? shard_of(o.shard_index, o.shard_count) : std::pair<int, int>{0, 1};
  const auto shard_results = o.merge.empty() ? std::map<std::string, nlohmann::json>{} : read_shards(spec, o.merge);
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
  int resimulated = k;
  if (o.merge.empty()) {
    if (shard_count > 1) progress()->info("search: shard {}/{} re-simulates candidates {} mod {} of the best {}", shard_index, shard_count, shard_index, shard_count, k);
    resimulate(globals, spec, candidates, k, jobs, shard_index, shard_count);
  } else {
    // The shards' simulated figures, by candidate (the enumeration and ranking above are deterministic).
    resimulated = 0;
    for (auto& c : candidates) {
      const auto found = shard_results.find(search::candidate_key(c));
      if (found == shard_results.end()) continue;
      search::take_simulation(found->second, c);
      ++resimulated;
    }
    progress()->info("search --merge: {} re-simulated candidates from {} shard files", resimulated, o.merge.size());
  }
  const double resim_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - sim_start).count();
  search::rank(spec, candidates);  // the simulated candidates by their simulated figures
  search::SearchTiming timing{rank_s, resim_s, resimulated};
  if (spec.limits.min_goodput && !candidates.empty() && search::below_goodput(spec, candidates.front())) {
    const search::Candidate* closest = nullptr;
    for (const auto& c : candidates) {
      if (c.simulated && c.goodput && (!closest || *c.goodput > *closest->goodput)) closest = &c;
    }
    char text[64];
    std::snprintf(text, sizeof text, "%.4f", *spec.limits.min_goodput);
    std::string message = spec.file + ": at /limits/min_goodput: none of the " + std::to_string(resimulated) +
                          " re-simulated candidates reaches a goodput of " + text;
    if (closest) {
      std::snprintf(text, sizeof text, "%.4f", *closest->goodput);
      message += "; the closest: " + closest->layout() + " on " + closest->where() + " at " + text;
    }
    throw InputError(message + " (a lower limit, a checkpoint plan that costs less, or more candidates re-simulated)");
  }

  const std::string best_file = o.best_file.empty() ? spec.name + "-best.json" : o.best_file;
  const std::string table = search::summary_text(spec, candidates, pruning, timing, best_file);
  nlohmann::json result = search::result_json(spec, candidates, pruning, timing, best_file);
  if (shard_count > 1) {
    // A shard's result: its own re-simulated candidates, for `fmsim search SPEC --merge`; no best file
    // (the best is only known once the shards are joined).
    nlohmann::json mine = nlohmann::json::array();
    for (std::size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].simulated) mine.push_back(search::candidate_json(spec, candidates, i));
    }
    result["shard"] = {{"index", shard_index}, {"count", shard_count}, {"resimulated", mine}};
    result["best_scenario_file"] = nullptr;
  }
  if (o.json_file != "-") {
    write_output("-", shard_count > 1 ? "(shard " + std::to_string(shard_index) + " of " + std::to_string(shard_count) +
                                            ": join the shards with fmsim search SPEC --merge FILES)\n" + table
                                      : table);
  }
  if (!o.json_file.empty()) write_output(o.json_file, result.dump(2) + "\n");
  if (shard_count == 1) write_output(best_file, search::scenario_document(spec, candidates.front()).dump(2) + "\n");
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
  sub->add_option("--shard-index", o->shard_index, "this shard: re-simulates the best candidates whose rank mod the count is it "
                                                   "(default: $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX, else 0)");
  sub->add_option("--shard-count", o->shard_count, "number of shards (default: $SLURM_ARRAY_TASK_COUNT, else 1)");
  sub->add_option("--merge", o->merge, "join the --json results of the shards (the table, JSON and best scenario of the whole search)");
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_search(globals, *o); }; });
}

}  // namespace fmsim::cli
