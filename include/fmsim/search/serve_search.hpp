#pragma once
// Serving search files (schema fmsim.serve-search/1, docs/formats.md): a base serving scenario (model,
// precision, workload at its offered rate, SLOs), the candidate clusters (topology files with at most
// `max_nodes` nodes), the layout space (TP, PP, max_num_seqs) and what to minimise ($/h or GPUs). Each
// candidate layout gets the fewest replicas whose simulated run meets the SLOs at the offered rate.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "fmsim/hardware/catalog.hpp"

namespace fmsim::search {

enum class ServeObjective { usd_per_hour, gpus };

struct ServeCluster {
  std::string label;               ///< the topology file's stem
  std::filesystem::path topology;  ///< absolute
  int max_nodes = 1;
  int gpus_per_node = 0, domain_gpus = 0;  ///< GPUs per node and per NVLink domain
  std::string instance_type;
};

struct ServeSearchSpec {
  std::string file, name, description;
  std::filesystem::path scenario;  ///< the base serving scenario, absolute
  std::vector<ServeCluster> clusters;
  std::vector<int> tp, pp, max_num_seqs;  ///< max_num_seqs empty = the scenario's
  /// MoE layouts: experts split over the replica's GPUs (EP) or sliced by TP; empty = the scenario's.
  std::vector<bool> expert_parallel;
  /// Disaggregated layouts to try beside the aggregated one: prefill:decode replica ratios ({1, 2} = one
  /// prefill replica per two decode replicas), each pool at the layout's TP and PP.
  std::vector<std::pair<int, int>> prefill_decode;
  /// The decode pool's TP sizes for disaggregated layouts; empty = the prefill pool's (the layout's TP).
  std::vector<int> decode_tp;
  ServeObjective objective = ServeObjective::usd_per_hour;
  int top = 20;
};

/// A layout on a cluster and what the replica search found for it.
struct ServeCandidate {
  int cluster = 0, tp = 1, pp = 1, max_num_seqs = 0;  ///< max_num_seqs 0 = the scenario's
  int expert_parallel = -1;     ///< 1: serving.enable_expert_parallel, 0: off, -1: the scenario's
  int prefill = 0, decode = 0;  ///< a disaggregated layout's prefill:decode ratio; 0:0 = aggregated
  int decode_tp = 0;            ///< a disaggregated layout's decode-pool TP; 0 = `tp` (the prefill pool's)
  /// Aggregated: replicas. Disaggregated: ratio units (prefill x units prefill replicas, decode x units decode).
  int replicas = 0, nodes = 0, gpus = 0, trials = 0;
  bool feasible = false;
  std::string reason;      ///< why not feasible
  nlohmann::json result;   ///< the fmsim serve result of the chosen replica count
  double usd_per_hour = 0;
  std::string layout() const;  ///< "TP4 PP1 x 3 replicas (max_num_seqs 256)", "TP4 PP1 prefill 2 + decode 4", "TP2 PP1 prefill 2 + decode TP8 1"
  bool disaggregated() const { return prefill > 0; }
  int decode_tp_size() const { return decode_tp > 0 ? decode_tp : tp; }
  int gpus_per_unit() const { return (disaggregated() ? prefill * tp + decode * decode_tp_size() : tp) * pp; }
};

/// Whether a parsed JSON document is a serving search (its schema).
bool is_serve_search(const nlohmann::json& doc);
ServeSearchSpec load_serve_search(const std::filesystem::path& path, const hardware::Catalog& catalog);

/// Every layout of the space that fits one NVLink domain per replica (TP x PP GPUs) on each cluster.
std::vector<ServeCandidate> serve_candidates(const ServeSearchSpec& spec);
/// The most replicas (disaggregated: ratio units) of `c`'s layout the cluster's max_nodes hold.
int max_replicas(const ServeSearchSpec& spec, const ServeCandidate& c);
/// The --set assignments that turn the base scenario into `c` with `replicas` replicas (or ratio units).
std::vector<std::string> serve_sets(const ServeSearchSpec& spec, const ServeCandidate& c, int replicas);
/// Feasible candidates first, by the objective (ties: fewer GPUs, then lower p99 TTFT); then the rest.
void rank_serve(const ServeSearchSpec& spec, std::vector<ServeCandidate>& candidates);
std::string serve_summary_text(const ServeSearchSpec& spec, const std::vector<ServeCandidate>& ranked, double wall_s,
                               const std::string& best_file);
nlohmann::json serve_result_json(const ServeSearchSpec& spec, const std::vector<ServeCandidate>& ranked, double wall_s,
                                 const std::string& best_file);
/// The winning candidate as a serving scenario document ready for `fmsim serve`.
nlohmann::json serve_scenario_document(const ServeSearchSpec& spec, const ServeCandidate& c);

}  // namespace fmsim::search
