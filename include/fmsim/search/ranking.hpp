#pragma once
// Ranking the candidates of a search by its objective, the Pareto front of time to train vs cost, why
// each candidate loses to the one above it, and the search's results as text and JSON (schema
// docs/schema/search.schema.json).
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/search/candidates.hpp"

namespace fmsim::search {

struct SearchTiming {
  double rank_s = 0;        ///< enumeration, pruning and the analytic tier
  double resimulate_s = 0;  ///< the re-simulations
  int resimulated = 0;
};

/// Sorts best first: re-simulated candidates (by their simulated figures) ahead of the others (by the
/// analytic tier's), each by the objective (time to train, or seconds per token without a run length;
/// cost to train; tokens/s/GPU; pareto ranks by time).
/// Whether a candidate misses /limits/min_goodput (unknown goodput misses it).
bool below_goodput(const SearchSpec& spec, const Candidate& c);
void rank(const SearchSpec& spec, std::vector<Candidate>& candidates);

/// The objective's figure of a candidate (lower is better).
double objective_value(const SearchSpec& spec, const Candidate& c);

/// Indices of the candidates on the Pareto front of time to train (or seconds per token) vs cost, fastest first.
std::vector<std::size_t> pareto_front(const std::vector<Candidate>& candidates);

/// Why `below` ranks under `above`: the step term that grows most (per token, on the scale of the one
/// above's step), e.g. "dp_comm +0.41 s (per step of #3)"; with the cost objective, the price per hour.
std::string why_below(const SearchSpec& spec, const Candidate& above, const Candidate& below);

/// Takes a `fmsim run --json` document as the candidate's figures (step time, breakdown, totals).
void take_simulation(const nlohmann::json& run, Candidate& c);

std::string summary_text(const SearchSpec& spec, const std::vector<Candidate>& ranked, const Pruning& pruning,
                         const SearchTiming& timing, const std::string& best_file);
nlohmann::json result_json(const SearchSpec& spec, const std::vector<Candidate>& ranked, const Pruning& pruning,
                           const SearchTiming& timing, const std::string& best_file);
/// One row of the result's tables: candidate `i` of `ranked` (its rank is i + 1).
nlohmann::json candidate_json(const SearchSpec& spec, const std::vector<Candidate>& ranked, std::size_t i);
/// What identifies a candidate across runs of the same spec (a shard and its merge): cluster, layout and
/// switches, e.g. "p5.48xlarge|16|TP4 PP2 VP5 CP2 DP8 mb1 gb128 rc-none|optim|1|1".
std::string candidate_key(const Candidate& c);
/// The same key from a row of candidate_json.
std::string candidate_key(const nlohmann::json& row);

}  // namespace fmsim::search
