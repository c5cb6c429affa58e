// Ranking, Pareto front and output of a search (ranking.hpp).
#include "fmsim/search/ranking.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace fmsim::search {
namespace {

double tokens_per_step(const Candidate& c) { return c.tokens_per_s_per_gpu * c.gpus * c.step_s; }
double seconds_per_token(const Candidate& c) { return 1.0 / (c.tokens_per_s_per_gpu * c.gpus); }
double usd_per_token(const Candidate& c) { return c.usd_per_hour / 3600.0 * seconds_per_token(c); }
bool has_run(const Candidate& c) { return c.steps > 0; }
double time_of(const Candidate& c) { return has_run(c) ? c.time_to_train_s : seconds_per_token(c); }
double cost_of(const Candidate& c) { return has_run(c) ? c.usd_total : usd_per_token(c); }

std::string format(const char* pattern, double value) {
  char text[64];
  std::snprintf(text, sizeof text, pattern, value);
  return text;
}

}  // namespace

double objective_value(const SearchSpec& spec, const Candidate& c) {
  switch (spec.objective) {
    case Objective::cost: return cost_of(c);
    case Objective::tokens_per_gpu: return -c.tokens_per_s_per_gpu;
    case Objective::time:
    case Objective::pareto: return time_of(c);
  }
  return time_of(c);
}

void rank(const SearchSpec& spec, std::vector<Candidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a, const Candidate& b) {
    if (a.simulated != b.simulated) return a.simulated;
    // Goodput is known after re-simulation: those below /limits/min_goodput rank after those above.
    if (a.simulated && below_goodput(spec, a) != below_goodput(spec, b)) return !below_goodput(spec, a);
    return objective_value(spec, a) < objective_value(spec, b);
  });
}

std::vector<std::size_t> pareto_front(const std::vector<Candidate>& candidates) {
  std::vector<std::size_t> order(candidates.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return time_of(candidates[a]) != time_of(candidates[b]) ? time_of(candidates[a]) < time_of(candidates[b])
                                                            : cost_of(candidates[a]) < cost_of(candidates[b]);
  });
  std::vector<std::size_t> front;
  double cheapest = INFINITY;
  for (std::size_t i : order) {
    if (cost_of(candidates[i]) < cheapest) {
      cheapest = cost_of(candidates[i]);
      front.push_back(i);
    }
  }
  return front;
}

std::string why_below(const SearchSpec& spec, const Candidate& above, const Candidate& below) {
  if (below.simulated && below_goodput(spec, below) && !below_goodput(spec, above)) {
    return (below.goodput ? format("goodput %.4f", *below.goodput) : std::string("goodput unknown")) +
           format(" below /limits/min_goodput %.4f", *spec.limits.min_goodput);
  }
  if (spec.objective == Objective::cost && below.usd_per_hour > above.usd_per_hour * 1.001 &&
      seconds_per_token(below) <= seconds_per_token(above)) {
    return "pricier: " + format("$%.0f/h", below.usd_per_hour) + format(" vs $%.0f/h", above.usd_per_hour);
  }
  // Each term per token, on the scale of the one above's step.
  const double scale = tokens_per_step(above) / tokens_per_step(below) * (below.gpus > 0 ? static_cast<double>(below.gpus) / above.gpus : 1.0);
  std::string worst = "compute";
  double most = -INFINITY;
  for (std::size_t k = 0; k < below.terms.size(); ++k) {
    double up = 0;
    for (const auto& [name, value] : above.terms) if (name == below.terms[k].first) up = value;
    const double delta = below.terms[k].second * scale - up;
    if (delta > most) most = delta, worst = below.terms[k].first;
  }
  std::string text = worst + format(" %+.3f s", most);
  if (below.gpus != above.gpus) text += " (" + std::to_string(below.gpus) + " vs " + std::to_string(above.gpus) + " GPUs)";
  if (below.simulated != above.simulated) text += " (not re-simulated)";
  return text;
}

void take_simulation(const nlohmann::json& run, Candidate& c) {
  c.simulated = true;
  c.step_s = run.at("step_time_s").get<double>();
  c.tokens_per_s_per_gpu = run.at("tokens_per_s_per_gpu").get<double>();
  c.terms.clear();
  if (run.contains("breakdown_s") && run["breakdown_s"].is_object()) {
    for (const auto& [name, value] : c.analytic.terms()) c.terms.emplace_back(name, run["breakdown_s"].value(name, 0.0));
  }
  c.time_to_train_s = c.steps * c.step_s;
  // With a checkpoint plan, the run's time to train counts checkpoint stalls, failures and restarts.
  if (run.contains("checkpoint") && run["checkpoint"].is_object() && run["checkpoint"].contains("goodput") &&
      run["checkpoint"]["goodput"].is_number()) {
    c.goodput = run["checkpoint"]["goodput"].get<double>();
    const auto& t = run["checkpoint"].value("time_to_train_s", nlohmann::json());
    if (c.steps > 0 && t.is_number() && t.get<double>() > 0) c.time_to_train_s = t.get<double>();
  }
  c.usd_total = c.usd_per_hour * c.time_to_train_s / 3600.0;
}

bool below_goodput(const SearchSpec& spec, const Candidate& c) {
  return spec.limits.min_goodput && (!c.goodput || *c.goodput < *spec.limits.min_goodput);
}

std::string summary_text(const SearchSpec& spec, const std::vector<Candidate>& ranked, const Pruning& pruning,
                         const SearchTiming& timing, const std::string& best_file) {
  std::string out;
  char line[512];
  std::snprintf(line, sizeof line, "search %s: %lld candidates enumerated, %lld ranked by the analytic tier in %.2f s; best %d re-simulated with contention in %.1f s\n",
                spec.name.c_str(), pruning.enumerated, pruning.ranked, timing.rank_s, timing.resimulated, timing.resimulate_s);
  out += line;
  std::string dropped;
  for (const auto& [name, count] : pruning.dropped) {
    if (count > 0) dropped += (dropped.empty() ? "" : ", ") + std::to_string(count) + " by " + name;
  }
  if (!dropped.empty()) out += "  pruned: " + dropped + "\n";
  const bool run = !ranked.empty() && has_run(ranked.front());
  out += "  objective: " + to_string(spec.objective) + (run ? "" : " (per token: no run length given)") + "\n";
  std::snprintf(line, sizeof line, "  %4s  %-24s %-44s %9s %9s %9s %11s %7s  %s\n", "rank", "cluster", "layout", "step s", "tok/s/GPU",
                run ? "days" : "ms/Mtok", run ? "$ total" : "$/Mtok", "mem GB", "why below the one above");
  out += line;
  const int rows = std::min<int>(spec.top, static_cast<int>(ranked.size()));
  for (int i = 0; i < rows; ++i) {
    const auto& c = ranked[i];
    std::snprintf(line, sizeof line, "  %4d  %-24s %-44s %8.3f%s %9.0f %9.2f %11.4g %7.1f  %s\n", i + 1, c.where().c_str(), c.layout().c_str(),
                  c.step_s, c.simulated ? "*" : " ", c.tokens_per_s_per_gpu, run ? c.time_to_train_s / 86400 : seconds_per_token(c) * 1e9,
                  run ? c.usd_total : usd_per_token(c) * 1e6, c.memory_bytes / 1e9, i == 0 ? "" : why_below(spec, ranked[i - 1], c).c_str());
    out += line;
  }
  out += "  (* simulated with contention by fmsim run; the others are the analytic tier's figures)\n";
  const auto front = pareto_front(ranked);
  out += "  Pareto front (" + std::string(run ? "time to train vs $" : "time per token vs $ per token") + "), fastest first:\n";
  for (std::size_t k = 0; k < std::min<std::size_t>(front.size(), 10); ++k) {
    const auto& c = ranked[front[k]];
    std::snprintf(line, sizeof line, "    #%-5zu %-24s %-44s %9.2f %s %11.4g %s\n", front[k] + 1, c.where().c_str(), c.layout().c_str(),
                  run ? c.time_to_train_s / 86400 : seconds_per_token(c) * 1e9, run ? "days" : "ms/Mtok", run ? c.usd_total : usd_per_token(c) * 1e6,
                  run ? "$" : "$/Mtok");
    out += line;
  }
  if (front.size() > 10) out += "    ... " + std::to_string(front.size() - 10) + " more in the JSON\n";
  out += "  best: " + ranked.front().layout() + " on " + ranked.front().where() + ", written to " + best_file + " (fmsim run " + best_file + ")\n";
  return out;
}

std::string candidate_key(const Candidate& c) {
  return c.instance_type + "|" + std::to_string(c.nodes) + "|" + c.layout() + "|" + workload::to_string(c.sharding) + "|" +
         std::to_string(c.tp_comm_overlap ? 1 : 0) + "|" + std::to_string(c.overlap_grad_reduce ? 1 : 0);
}

std::string candidate_key(const nlohmann::json& row) {
  return row.value("instance_type", std::string()) + "|" + std::to_string(row.value("nodes", 0)) + "|" +
         row.value("layout", std::string()) + "|" + row.value("sharding", std::string()) + "|" +
         std::to_string(row.value("tp_comm_overlap", false) ? 1 : 0) + "|" + std::to_string(row.value("overlap_grad_reduce", true) ? 1 : 0);
}

nlohmann::json candidate_json(const SearchSpec& spec, const std::vector<Candidate>& ranked, std::size_t i) {
  using json = nlohmann::json;
  {
    const auto& c = ranked[i];
    const auto& p = c.parallelism;
    json terms = json::object();
    for (const auto& [name, value] : c.terms) terms[name] = value;
    json analytic = json::object();
    for (const auto& [name, value] : c.analytic.terms()) analytic[name] = value;
    return json{{"rank", i + 1},
                {"instance_type", c.instance_type},
                {"gpu", c.gpu},
                {"nodes", c.nodes},
                {"gpus", c.gpus},
                {"layout", c.layout()},
                {"parallelism", {{"tp", p.tp}, {"pp", p.pp}, {"vp", p.vp}, {"cp", p.cp}, {"ep", p.ep}, {"etp", p.etp}, {"dp", p.dp},
                                 {"micro_batch", p.micro_batch}, {"global_batch", p.global_batch}}},
                {"recompute", workload::to_string(c.recompute)},
                {"sharding", workload::to_string(c.sharding)},
                {"tp_comm_overlap", c.tp_comm_overlap},
                {"overlap_grad_reduce", c.overlap_grad_reduce},
                {"simulated", c.simulated},
                {"step_time_s", c.step_s},
                {"analytic_step_time_s", c.analytic.step_s},
                {"breakdown_s", terms},
                {"analytic_breakdown_s", analytic},
                {"tokens_per_s_per_gpu", c.tokens_per_s_per_gpu},
                {"memory_bytes", c.memory_bytes},
                {"hbm_bytes", c.hbm_bytes},
                {"usd_per_hour", c.usd_per_hour},
                {"steps", c.steps},
                {"time_to_train_s", c.time_to_train_s},
                {"usd_total", c.usd_total},
                {"goodput", c.goodput ? json(*c.goodput) : json(nullptr)},
                {"why_below_previous", i == 0 ? json(nullptr) : json(why_below(spec, ranked[i - 1], c))}};
  }
}

nlohmann::json result_json(const SearchSpec& spec, const std::vector<Candidate>& ranked, const Pruning& pruning,
                           const SearchTiming& timing, const std::string& best_file) {
  using json = nlohmann::json;
  auto row = [&](std::size_t i) { return candidate_json(spec, ranked, i); };
  json top = json::array();
  for (std::size_t i = 0; i < std::min<std::size_t>(spec.top, ranked.size()); ++i) top.push_back(row(i));
  json front = json::array();
  for (std::size_t i : pareto_front(ranked)) front.push_back(row(i));
  json dropped = json::object();
  for (const auto& [name, count] : pruning.dropped) dropped[name] = count;
  return json{{"schema", "fmsim.search-result/1"},
              {"name", spec.name},
              {"objective", to_string(spec.objective)},
              {"enumerated", pruning.enumerated},
              {"ranked", pruning.ranked},
              {"pruned", dropped},
              {"resimulated", timing.resimulated},
              {"rank_wall_s", timing.rank_s},
              {"resimulate_wall_s", timing.resimulate_s},
              {"best_scenario_file", best_file},
              {"top", top},
              {"pareto_front", front}};
}

}  // namespace fmsim::search
