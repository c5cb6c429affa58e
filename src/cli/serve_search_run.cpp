// The serving search's replica search: for each layout of the spec, the fewest replicas whose simulated
// run at the offered rate meets the SLOs (slo_met), found by doubling from one replica and then bisecting;
// a layout that does not fit (OOM, exit 2) or misses the SLOs with every replica its cluster holds is kept
// with the reason. Layouts run --jobs at a time, each trial an `fmsim serve` child process.
#include "serve_search_run.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "child_process.hpp"
#include "progress.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/search/serve_search.hpp"

namespace fmsim::cli {
namespace {

struct Trial {
  bool meets = false, invalid = false;
  std::string reason;
  nlohmann::json result;
};

Trial try_replicas(const GlobalOptions& globals, const search::ServeSearchSpec& spec, const search::ServeCandidate& c, int replicas) {
  std::vector<std::string> args;
  if (!globals.catalog_dir.empty()) args = {"--catalog", globals.catalog_dir};
  for (const char* a : {"serve", "--json", "-"}) args.emplace_back(a);
  args.push_back(spec.scenario.string());
  for (const auto& set : search::serve_sets(spec, c, replicas)) {
    args.emplace_back("--set");
    args.push_back(set);
  }
  const ChildResult child = run_fmsim(args);
  Trial t;
  if (child.exit_code == 2) {
    t.invalid = true;
    t.reason = error_message(child);
    return t;
  }
  if (child.exit_code != 0) throw InternalError("fmsim serve failed inside the serving search (" + c.layout() + "): " + error_message(child));
  t.result = nlohmann::json::parse(child.out, nullptr, false);
  if (t.result.is_discarded() || !t.result.is_object()) throw InternalError("unreadable fmsim serve output in the serving search");
  if (t.result.value("oom", false)) {
    t.invalid = true;
    t.reason = "does not fit in HBM";
    return t;
  }
  t.meets = t.result.value("slo_met", false);
  if (!t.meets) {
    t.reason = "misses the SLOs";
    return t;
  }
  // Steady-state capacity: under a Poisson or trace load the layout must also sustain the offered rate
  // once warm-up and drain are left out (steady_state.hpp), not only meet the SLOs over a finite run.
  const auto& steady = t.result.value("steady_state", nlohmann::json());
  if (steady.is_object() && !steady.value("sustained", true)) {
    t.meets = false;
    t.reason = "does not sustain the offered rate in steady state (" + steady.value("reason", std::string("queue grows")) + ")";
  }
  return t;
}

void search_replicas(const GlobalOptions& globals, const search::ServeSearchSpec& spec, search::ServeCandidate& c) {
  const int most = search::max_replicas(spec, c);
  if (most < 1) {
    c.reason = (c.disaggregated() ? "one prefill:decode unit needs " : "one replica needs ") + std::to_string(c.gpus_per_unit()) +
               " GPUs, more than the cluster's max_nodes hold";
    return;
  }
  int low = 0, high = 0;  // low: the most replicas known to miss; high: the fewest known to meet (0 = none yet)
  Trial best;
  for (int r = 1;; r = std::min(most, r * 2)) {
    Trial t = try_replicas(globals, spec, c, r);
    ++c.trials;
    if (t.invalid) {
      c.reason = t.reason;
      return;
    }
    if (t.meets) {
      high = r;
      best = std::move(t);
      break;
    }
    low = r;
    if (r == most) {
      c.reason = "misses the SLOs with " + std::to_string(most) + " replicas (all the cluster's max_nodes hold): p99 TTFT " +
                 std::to_string(t.result["ttft_s"].value("p99", 0.0)) + " s";
      return;
    }
  }
  while (high - low > 1) {
    const int mid = (low + high) / 2;
    Trial t = try_replicas(globals, spec, c, mid);
    ++c.trials;
    if (t.meets) {
      high = mid;
      best = std::move(t);
    } else {
      low = mid;
    }
  }
  const auto& cluster = spec.clusters[c.cluster];
  c.feasible = true;
  c.replicas = high;
  c.gpus = high * c.gpus_per_unit();
  c.nodes = (c.gpus + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  c.result = std::move(best.result);
  c.usd_per_hour = c.result.value("usd_per_hour", 0.0);
}

}  // namespace

int run_serve_search(const GlobalOptions& globals, const ServeSearchOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const auto catalog = load_catalog(globals);
  search::ServeSearchSpec spec = search::load_serve_search(o.spec_file, catalog);
  if (o.top > 0) spec.top = o.top;
  auto candidates = search::serve_candidates(spec);
  if (candidates.empty()) {
    throw InputError(spec.file + ": at /space: no layout fits one NVLink domain of any cluster (TP x PP above its GPUs per domain)");
  }
  const int jobs = o.jobs > 0 ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
  std::atomic<std::size_t> next{0};
  std::mutex lock;
  std::size_t done = 0;
  std::exception_ptr fatal;
  auto worker = [&] {
    try {
      for (std::size_t i = next++; i < candidates.size(); i = next++) {
        search_replicas(globals, spec, candidates[i]);
        std::lock_guard<std::mutex> guard(lock);
        ++done;
        const auto& c = candidates[i];
        progress()->info("search: {}/{} {} on {}: {}", done, candidates.size(), c.layout(), spec.clusters[c.cluster].instance_type,
                         c.feasible ? fmt::format("{} GPUs, {:.2f} $/h", c.gpus, c.usd_per_hour) : c.reason);
      }
    } catch (...) {
      std::lock_guard<std::mutex> guard(lock);
      if (!fatal) fatal = std::current_exception();
      next = candidates.size();
    }
  };
  std::vector<std::thread> threads;
  for (int j = 0; j < std::min<int>(jobs, static_cast<int>(candidates.size())); ++j) threads.emplace_back(worker);
  for (auto& t : threads) t.join();
  if (fatal) std::rethrow_exception(fatal);
  search::rank_serve(spec, candidates);
  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!candidates.front().feasible) {
    throw InputError(spec.file + ": no layout meets the SLOs at the offered rate on these clusters; the closest: " + candidates.front().layout() +
                     " on " + spec.clusters[candidates.front().cluster].instance_type + " (" + candidates.front().reason + ")");
  }
  const std::string best_file = o.best_file.empty() ? spec.name + "-best.json" : o.best_file;
  if (o.json_file != "-") write_output("-", search::serve_summary_text(spec, candidates, wall_s, best_file));
  if (!o.json_file.empty()) write_output(o.json_file, search::serve_result_json(spec, candidates, wall_s, best_file).dump(2) + "\n");
  write_output(best_file, search::serve_scenario_document(spec, candidates.front()).dump(2) + "\n");
  return 0;
}

}  // namespace fmsim::cli
