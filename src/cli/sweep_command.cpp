// fmsim sweep SWEEP.json [--shard-index I --shard-count N] [--out FILE.jsonl] [--jobs N]
// fmsim merge SHARD.jsonl... [--out FILE.jsonl]
// A sweep evaluates every point of its grid/list (this shard's share) in child processes, --jobs at a
// time, appending one JSON line per point; a rerun with the same --out resumes where it stopped.
#include <algorithm>
#include <atomic>
#include <exception>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "child_process.hpp"
#include "cleanup.hpp"
#include "progress.hpp"
#include "shard.hpp"
#include "sweep_best.hpp"
#include "sweep_output.hpp"
#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/report/sweep_spec.hpp"

namespace fmsim::cli {
namespace {

struct SweepOptions {
  std::string sweep_file, out_file = "-";
  int shard_index = -1, shard_count = -1, jobs = 0;
};

struct MergeOptions {
  std::vector<std::string> inputs;
  std::string out_file = "-", best;
};

/// The JSON lines of a sweep output file (unparsable lines skipped: SweepOutput has vetted the file).
std::vector<nlohmann::json> read_lines(const std::string& path) {
  std::vector<nlohmann::json> lines;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    nlohmann::json doc = nlohmann::json::parse(line, nullptr, false);
    if (!doc.is_discarded()) lines.push_back(std::move(doc));
  }
  return lines;
}

std::string duration_text(double seconds) {
  char text[32];
  if (seconds < 120) std::snprintf(text, sizeof text, "%.0fs", seconds);
  else std::snprintf(text, sizeof text, "%.0fm%02.0fs", std::floor(seconds / 60), std::fmod(seconds, 60));
  return text;
}

int run_sweep(const GlobalOptions& globals, const SweepOptions& o) {
  const report::SweepSpec spec = report::load_sweep(o.sweep_file);
  const auto [shard_index, shard_count] = shard_of(o.shard_index, o.shard_count);
  SweepOutput out(o.out_file, spec);  // locked and read back before any point runs
  const std::set<std::size_t>& done = out.done();
  std::vector<std::size_t> todo;
  std::size_t mine = 0;
  for (std::size_t i = 0; i < spec.points.size(); ++i) {
    if (!report::in_shard(i, shard_index, shard_count)) continue;
    ++mine;
    if (!done.count(i)) todo.push_back(i);
  }
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  progress()->info("sweep {}: shard {}/{}: {} of {} points, {} already done, {} jobs", spec.job.name, shard_index, shard_count,
                   mine, spec.points.size(), mine - todo.size(), jobs);
  std::mutex lock;
  std::atomic<std::size_t> next{0};
  std::atomic<bool> stop{false};
  std::size_t finished = 0, invalid = 0;
  std::string failure;
  std::exception_ptr fatal;  // the first error that ends the sweep (a write failed): rethrown after the join
  std::vector<nlohmann::json> evaluated;  // this run's lines, for the best point when the output is stdout
  const auto start = std::chrono::steady_clock::now();
  auto last_report = start;
  auto worker = [&] {
    try {
      while (!stop) {
        const std::size_t k = next++;
        if (k >= todo.size()) return;
        const std::size_t index = todo[k];
        const nlohmann::json& point = spec.points[index];
        const ChildResult child = run_fmsim(json_result_arguments(globals.catalog_dir, spec.job, report::point_assignments(point)));
        nlohmann::json line{{"index", index}, {"point", point}};
        if (child.exit_code == 0) {
          line["status"] = "ok";
          line["result"] = nlohmann::json::parse(child.out, nullptr, false);
          // A sweep line is a table row: the per-pass time line (hundreds of kB) stays in `fmsim run` output.
          if (line["result"].is_object()) line["result"].erase("pipeline_timeline");
        } else {
          line["status"] = child.exit_code == 2 ? "invalid" : "error";
          line["reason"] = error_message(child);
        }
        std::lock_guard<std::mutex> guard(lock);
        if (stop) return;  // a child killed because the sweep is stopping: not a result
        if (child.exit_code != 0 && child.exit_code != 2 && failure.empty()) failure = line["reason"].get<std::string>();
        out.append(line.dump());
        if (o.out_file == "-") evaluated.push_back(line);
        ++finished;
        invalid += child.exit_code == 0 ? 0 : 1;
        const auto now = std::chrono::steady_clock::now();
        if (now - last_report > std::chrono::seconds(2) || finished == todo.size()) {
          last_report = now;
          const double elapsed = std::chrono::duration<double>(now - start).count();
          const double rate = finished / std::max(elapsed, 1e-9);
          progress()->info("sweep: {}/{} points ({} invalid), {:.1f} points/s, ETA {}", finished + (mine - todo.size()), mine,
                           invalid, rate, duration_text((todo.size() - finished) / rate));
        }
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(lock);
      if (!fatal) fatal = std::current_exception();
      stop = true;
      terminate_children();  // no point in finishing simulations whose lines cannot be written
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min<int>(jobs, static_cast<int>(todo.size())); ++j) threads.emplace_back(worker);
  for (auto& thread : threads) thread.join();
  if (fatal) std::rethrow_exception(fatal);
  if (!failure.empty()) throw InternalError("a sweep point failed inside fmsim: " + failure);
  // The best point of what the output holds (resumed lines included; this shard's only when sharded).
  const std::vector<nlohmann::json> all = o.out_file == "-" ? evaluated : read_lines(o.out_file);
  progress()->info("sweep{}: {}", shard_count > 1 ? " (shard " + std::to_string(shard_index) + "/" + std::to_string(shard_count) + ")" : "",
                   describe_best(best_point(all, spec.best), spec.best, all.size()));
  return 0;
}

int run_merge(const MergeOptions& o) {
  // A bad --best is refused before anything is written.
  const std::optional<report::SweepBest> best_option = o.best.empty() ? std::nullopt : std::optional(parse_best_option(o.best));
  std::map<std::size_t, std::string> lines;
  for (const auto& input : o.inputs) {
    config::require_regular_file(input, "a sweep shard");
    std::ifstream in(input);
    if (!in) throw InputError(input + ": cannot open file for reading");
    std::string line;
    int number = 0;
    while (std::getline(in, line)) {
      ++number;
      if (line.empty()) continue;
      // Sweep lines are shallow; a deeply nested one would overflow the stack when written back out.
      const auto opened = std::count_if(line.begin(), line.end(), [](char c) { return c == '[' || c == '{'; });
      nlohmann::json doc = opened > 4096 ? nlohmann::json() : nlohmann::json::parse(line, nullptr, false);
      if (doc.is_discarded() || !doc.is_object() || !doc.contains("index") || !doc["index"].is_number_unsigned()) {
        throw InputError(input + ":" + std::to_string(number) + ": expected a sweep line (JSON with an \"index\")");
      }
      lines.emplace(doc["index"].get<std::size_t>(), doc.dump());
    }
  }
  std::string text;
  std::size_t expected = 0, gaps = 0;
  for (const auto& [index, line] : lines) {
    gaps += index - expected;
    expected = index + 1;
    text += line + "\n";
  }
  if (gaps > 0) spdlog::warn("merge: {} points missing between 0 and {} (a shard not run or not finished?)", gaps, expected - 1);
  spdlog::info("merge: {} points from {} files", lines.size(), o.inputs.size());
  write_output(o.out_file, text);
  std::vector<nlohmann::json> parsed;
  std::string schema;
  for (const auto& [index, line] : lines) {
    parsed.push_back(nlohmann::json::parse(line, nullptr, false));
    const auto& doc = parsed.back();
    if (schema.empty() && doc.is_object() && doc.contains("result") && doc["result"].is_object()) {
      schema = doc["result"].value("schema", std::string());
    }
  }
  const report::SweepBest best = best_option ? *best_option : report::sweep_best_default(schema);
  progress()->info("merge: {}", describe_best(best_point(parsed, best), best, parsed.size()));
  return 0;
}

}  // namespace

void register_sweep(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<SweepOptions>();
  CLI::App* sub = app.add_subcommand("sweep", "evaluate a grid of scenario variants (sharded, resumable, parallel), one JSON line per point");
  sub->add_option("sweep", o->sweep_file, "sweep file (docs/formats.md)")->required();
  sub->add_option("--shard-index", o->shard_index, "this shard (default: $SLURM_ARRAY_TASK_ID or $JOB_COMPLETION_INDEX, else 0)");
  sub->add_option("--shard-count", o->shard_count, "number of shards (default: $SLURM_ARRAY_TASK_COUNT, else 1)");
  sub->add_option("--out", o->out_file, "JSON Lines output ('-' = stdout); an existing file is resumed");
  sub->add_option("--jobs", o->jobs, "points evaluated at once (default: the number of cores)")->check(CLI::Range(1, 1024));
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_sweep(globals, *o); }; });

  auto m = std::make_shared<MergeOptions>();
  CLI::App* merge = app.add_subcommand("merge", "join sweep shard files into one, ordered by point index");
  merge->add_option("shards", m->inputs, "JSON Lines files from fmsim sweep")->required();
  merge->add_option("--out", m->out_file, "merged JSON Lines ('-' = stdout)");
  merge->add_option("--best", m->best, "rank by PATH[:max|:min] of the results (default: the command's, e.g. tokens_per_s_per_gpu:max)");
  merge->callback([m, &action] { action = [m] { return run_merge(*m); }; });
}

}  // namespace fmsim::cli
