// Serving search: reading the spec, the candidate layouts, ranking and reporting (serve_search.hpp). The
// replica search itself runs `fmsim serve` in child processes (src/cli/serve_search_command.cpp).
#include "fmsim/search/serve_search.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/search/search_spec.hpp"
#include "fmsim/topology/cluster_spec.hpp"

namespace fmsim::search {
namespace {

using nlohmann::json;

double p99(const json& result, const char* key) {
  if (!result.is_object() || !result.contains(key) || !result[key].is_object()) return NAN;
  return result[key].value("p99", NAN);
}

/// `serving.disaggregation` for `units` ratio units of a disaggregated candidate (the decode pool's TP
/// when it differs from the layout's).
json disaggregation_pools(const ServeCandidate& c, int units) {
  json pools = {{"prefill", {{"replicas", c.prefill * units}}}, {"decode", {{"replicas", c.decode * units}}}};
  if (c.decode_tp_size() != c.tp) pools["decode"]["tensor_parallel_size"] = c.decode_tp_size();
  return pools;
}

}  // namespace

std::string ServeCandidate::layout() const {
  std::string text = "TP" + std::to_string(tp) + " PP" + std::to_string(pp);
  if (expert_parallel >= 0) text += expert_parallel ? " EP" : " no-EP";
  if (disaggregated()) {
    const std::string decode_layout = decode_tp_size() != tp ? "TP" + std::to_string(decode_tp_size()) + " " : "";
    text += replicas > 0 ? " prefill " + std::to_string(prefill * replicas) + " + decode " + decode_layout + std::to_string(decode * replicas)
                         : " disaggregated " + std::to_string(prefill) + ":" + decode_layout + std::to_string(decode);
  } else if (replicas > 0) {
    text += " x " + std::to_string(replicas) + (replicas == 1 ? " replica" : " replicas");
  }
  if (max_num_seqs > 0) text += " (max_num_seqs " + std::to_string(max_num_seqs) + ")";
  return text;
}

bool is_serve_search(const json& doc) { return doc.is_object() && doc.value("schema", std::string()) == "fmsim.serve-search/1"; }

ServeSearchSpec load_serve_search(const std::filesystem::path& path, const hardware::Catalog& catalog) {
  const auto file = config::load_json_file(path);
  config::ObjectReader root(file.root, path.string());
  ServeSearchSpec spec;
  spec.file = path.string();
  root.required_string("schema");
  spec.name = root.string_or("name", path.stem().string());
  spec.description = root.string_or("description", "");
  const auto dir = std::filesystem::absolute(path).parent_path();
  spec.scenario = (dir / root.required_string("scenario")).lexically_normal();
  config::require_regular_file(spec.scenario, "the base serving scenario (/scenario)");
  const auto& clusters = root.required_value("clusters");
  if (!clusters.is_array() || clusters.empty()) root.fail("clusters", "a non-empty list of {\"topology\": FILE, \"max_nodes\": N}");
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    config::ObjectReader c(clusters[i], spec.file + ": /clusters/" + std::to_string(i));
    ServeCluster cluster;
    cluster.topology = (dir / c.required_string("topology")).lexically_normal();
    cluster.max_nodes = static_cast<int>(c.int_or("max_nodes", 1, 1, 4096));
    c.reject_unknown_keys();
    const auto spec_of = topology::load_cluster(cluster.topology, catalog);
    cluster.label = cluster.topology.stem().string();
    cluster.gpus_per_node = spec_of.gpus_per_node;
    cluster.domain_gpus = spec_of.gpus_per_node * spec_of.nvlink_domain_nodes;
    cluster.instance_type = spec_of.instance.name;
    spec.clusters.push_back(cluster);
  }
  if (root.has("space")) {
    config::ObjectReader space = root.required_object("space");
    spec.tp = read_int_list(space, "tensor_parallel_size", 1, 4096);
    spec.pp = read_int_list(space, "pipeline_parallel_size", 1, 4096);
    spec.max_num_seqs = read_int_list(space, "max_num_seqs", 1, 1 << 20);
    if (space.has("enable_expert_parallel")) {
      const auto& list = space.required_value("enable_expert_parallel");
      const std::string expected = "a non-empty list of booleans, e.g. [false, true] (experts sliced by TP, or split over the replica's GPUs)";
      if (!list.is_array() || list.empty()) space.fail("enable_expert_parallel", expected);
      for (const auto& v : list) {
        if (!v.is_boolean()) space.fail("enable_expert_parallel", expected + " (found " + config::render_value(v) + ")");
        spec.expert_parallel.push_back(v.get<bool>());
      }
    }
    if (space.has("prefill_decode")) {
      const auto& list = space.required_value("prefill_decode");
      const std::string expected = "a list of [prefill, decode] replica ratios, each a pair of integers in [1, 64], e.g. [[1, 1], [1, 2]]";
      if (!list.is_array() || list.empty()) space.fail("prefill_decode", expected);
      for (const auto& pair : list) {
        if (!pair.is_array() || pair.size() != 2 || !pair[0].is_number_integer() || !pair[1].is_number_integer() ||
            pair[0].get<long long>() < 1 || pair[0].get<long long>() > 64 || pair[1].get<long long>() < 1 || pair[1].get<long long>() > 64) {
          space.fail("prefill_decode", expected + " (found " + config::render_value(pair) + ")");
        }
        spec.prefill_decode.emplace_back(pair[0].get<int>(), pair[1].get<int>());
      }
    }
    spec.decode_tp = read_int_list(space, "decode_tensor_parallel_size", 1, 4096);
    if (!spec.decode_tp.empty() && spec.prefill_decode.empty()) {
      space.fail("decode_tensor_parallel_size", "`prefill_decode` ratios beside it: the decode pool's TP applies to disaggregated layouts only");
    }
    space.reject_unknown_keys();
  }
  if (spec.tp.empty()) spec.tp = {1, 2, 4, 8};
  if (spec.pp.empty()) spec.pp = {1};
  spec.objective = root.choice_or("objective", {"usd_per_hour", "gpus"}, "usd_per_hour") == "gpus" ? ServeObjective::gpus
                                                                                                  : ServeObjective::usd_per_hour;
  spec.top = static_cast<int>(root.int_or("top", 20, 1, 100000));
  root.reject_unknown_keys();
  return spec;
}

std::vector<ServeCandidate> serve_candidates(const ServeSearchSpec& spec) {
  std::vector<ServeCandidate> out;
  const std::vector<int> seqs = spec.max_num_seqs.empty() ? std::vector<int>{0} : spec.max_num_seqs;
  // -1: the scenario's own enable_expert_parallel.
  std::vector<int> eps;
  for (bool b : spec.expert_parallel) eps.push_back(b ? 1 : 0);
  if (eps.empty()) eps.push_back(-1);
  for (std::size_t c = 0; c < spec.clusters.size(); ++c) {
    for (int tp : spec.tp) {
      for (int pp : spec.pp) {
        // fmsim's replicas keep TP and PP inside one NVLink domain (docs/model.md, serving).
        if (tp * pp > spec.clusters[c].domain_gpus) continue;
        const std::vector<int> decode_tps = spec.decode_tp.empty() ? std::vector<int>{tp} : spec.decode_tp;
        for (int ep : eps) {
          for (int s : seqs) {
            ServeCandidate aggregated;
            aggregated.cluster = static_cast<int>(c);
            aggregated.tp = tp;
            aggregated.pp = pp;
            aggregated.max_num_seqs = s;
            aggregated.expert_parallel = ep;
            out.push_back(aggregated);
            for (const auto& [prefill, decode] : spec.prefill_decode) {
              for (int decode_tp : decode_tps) {
                if (decode_tp * pp > spec.clusters[c].domain_gpus) continue;
                ServeCandidate split = aggregated;
                split.prefill = prefill;
                split.decode = decode;
                split.decode_tp = decode_tp == tp ? 0 : decode_tp;
                out.push_back(split);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

int max_replicas(const ServeSearchSpec& spec, const ServeCandidate& c) {
  const auto& cluster = spec.clusters[c.cluster];
  return cluster.max_nodes * cluster.gpus_per_node / c.gpus_per_unit();
}

std::vector<std::string> serve_sets(const ServeSearchSpec& spec, const ServeCandidate& c, int replicas) {
  const auto& cluster = spec.clusters[c.cluster];
  const int gpus = replicas * c.gpus_per_unit();
  const int nodes = (gpus + cluster.gpus_per_node - 1) / cluster.gpus_per_node;
  std::vector<std::string> sets = {"cluster.base=" + cluster.topology.string(), "cluster.nodes=" + std::to_string(nodes),
                                   "serving.tensor_parallel_size=" + std::to_string(c.tp),
                                   "serving.pipeline_parallel_size=" + std::to_string(c.pp)};
  if (c.disaggregated()) {
    sets.push_back("serving.disaggregation=" + disaggregation_pools(c, replicas).dump());
  } else {
    sets.push_back("serving.replicas=" + std::to_string(replicas));
  }
  if (c.max_num_seqs > 0) sets.push_back("serving.max_num_seqs=" + std::to_string(c.max_num_seqs));
  if (c.expert_parallel >= 0) sets.push_back(std::string("serving.enable_expert_parallel=") + (c.expert_parallel ? "true" : "false"));
  return sets;
}

void rank_serve(const ServeSearchSpec& spec, std::vector<ServeCandidate>& candidates) {
  std::stable_sort(candidates.begin(), candidates.end(), [&](const ServeCandidate& a, const ServeCandidate& b) {
    if (a.feasible != b.feasible) return a.feasible;
    if (!a.feasible) return false;
    const double ka = spec.objective == ServeObjective::gpus ? a.gpus : a.usd_per_hour;
    const double kb = spec.objective == ServeObjective::gpus ? b.gpus : b.usd_per_hour;
    if (ka != kb) return ka < kb;
    if (a.gpus != b.gpus) return a.gpus < b.gpus;
    return p99(a.result, "ttft_s") < p99(b.result, "ttft_s");
  });
}

std::string serve_summary_text(const ServeSearchSpec& spec, const std::vector<ServeCandidate>& ranked, double wall_s,
                               const std::string& best_file) {
  std::string out;
  char line[512];
  const auto feasible = std::count_if(ranked.begin(), ranked.end(), [](const ServeCandidate& c) { return c.feasible; });
  int trials = 0;
  for (const auto& c : ranked) trials += c.trials;
  std::snprintf(line, sizeof line, "serving search %s: %zu layouts on %zu clusters, %ld meet the SLOs; %d serving simulations in %.1f s\n",
                spec.name.c_str(), ranked.size(), spec.clusters.size(), static_cast<long>(feasible), trials, wall_s);
  out += line;
  out += std::string("  objective: ") + (spec.objective == ServeObjective::gpus ? "fewest GPUs" : "lowest $/h") +
         " with the fewest replicas that meet the SLOs at the offered rate\n";
  std::snprintf(line, sizeof line, "  %4s  %-20s %-36s %5s %9s %10s %10s %11s\n", "rank", "instance", "layout", "GPUs", "$/h", "TTFT p99",
                "TPOT p99", "req/s");
  out += line;
  int shown = 0;
  for (std::size_t i = 0; i < ranked.size() && shown < spec.top; ++i, ++shown) {
    const auto& c = ranked[i];
    const auto& cluster = spec.clusters[c.cluster];
    if (!c.feasible) {
      std::snprintf(line, sizeof line, "  %4zu  %-20s %-36s  no: %s\n", i + 1, cluster.instance_type.c_str(), c.layout().c_str(),
                    c.reason.substr(0, 90).c_str());
    } else {
      std::snprintf(line, sizeof line, "  %4zu  %-20s %-36s %5d %9.2f %9.3fs %9.1fms %11.2f\n", i + 1, cluster.instance_type.c_str(),
                    c.layout().c_str(), c.gpus, c.usd_per_hour, p99(c.result, "ttft_s"), 1e3 * p99(c.result, "tpot_s"),
                    c.result.value("requests_per_s", 0.0));
    }
    out += line;
  }
  if (!ranked.empty() && ranked.front().feasible) {
    out += "  best: " + ranked.front().layout() + " on " + std::to_string(ranked.front().nodes) + " x " +
           spec.clusters[ranked.front().cluster].instance_type + ", written to " + best_file + " (fmsim serve " + best_file + ")\n";
  }
  return out;
}

json serve_result_json(const ServeSearchSpec& spec, const std::vector<ServeCandidate>& ranked, double wall_s, const std::string& best_file) {
  json rows = json::array();
  int trials = 0;
  for (std::size_t i = 0; i < ranked.size(); ++i) {
    const auto& c = ranked[i];
    trials += c.trials;
    const auto& cluster = spec.clusters[c.cluster];
    json row = {{"rank", i + 1},
                {"instance_type", cluster.instance_type},
                {"topology", cluster.label},
                {"tensor_parallel_size", c.tp},
                {"pipeline_parallel_size", c.pp},
                {"max_num_seqs", c.max_num_seqs > 0 ? json(c.max_num_seqs) : json(nullptr)},
                {"enable_expert_parallel", c.expert_parallel >= 0 ? json(c.expert_parallel == 1) : json(nullptr)},
                {"disaggregated", c.disaggregated()},
                {"prefill_decode", c.disaggregated() ? json::array({c.prefill, c.decode}) : json(nullptr)},
                {"decode_tensor_parallel_size", c.disaggregated() ? json(c.decode_tp_size()) : json(nullptr)},
                {"feasible", c.feasible},
                {"trials", c.trials}};
    if (c.feasible) {
      row["replicas"] = c.disaggregated() ? (c.prefill + c.decode) * c.replicas : c.replicas;
      if (c.disaggregated()) {
        row["prefill_replicas"] = c.prefill * c.replicas;
        row["decode_replicas"] = c.decode * c.replicas;
      }
      row["nodes"] = c.nodes;
      row["gpus"] = c.gpus;
      row["usd_per_hour"] = c.usd_per_hour;
      row["ttft_p99_s"] = p99(c.result, "ttft_s");
      row["tpot_p99_s"] = p99(c.result, "tpot_s");
      row["requests_per_s"] = c.result.value("requests_per_s", 0.0);
      row["output_tokens_per_s"] = c.result.value("output_tokens_per_s", 0.0);
    } else {
      row["reason"] = c.reason;
    }
    rows.push_back(row);
  }
  const bool found = !ranked.empty() && ranked.front().feasible;
  return json{{"schema", "fmsim.serve-search-result/1"},
              {"name", spec.name},
              {"objective", spec.objective == ServeObjective::gpus ? "gpus" : "usd_per_hour"},
              {"layouts", ranked.size()},
              {"simulations", trials},
              {"wall_s", wall_s},
              {"best_scenario_file", found ? json(best_file) : json(nullptr)},
              {"candidates", rows}};
}

json serve_scenario_document(const ServeSearchSpec& spec, const ServeCandidate& c) {
  json doc = config::load_json_file(spec.scenario).root;
  const auto& cluster = spec.clusters[c.cluster];
  doc["name"] = spec.name + "-best";
  doc["description"] = "fmsim search " + spec.name + ": " + c.layout() + " on " + std::to_string(c.nodes) + " x " + cluster.instance_type;
  doc["cluster"] = {{"base", cluster.topology.string()}, {"nodes", c.nodes}};
  if (doc.contains("model") && doc["model"].is_string()) {
    const auto model = doc["model"].get<std::string>();
    if (model.find('/') != std::string::npos || model.ends_with(".json")) {
      doc["model"] = std::filesystem::absolute(spec.scenario.parent_path() / model).lexically_normal().string();
    }
  }
  if (c.disaggregated()) {
    doc["serving"].erase("replicas");
    doc["serving"]["disaggregation"] = disaggregation_pools(c, c.replicas);
  } else {
    doc["serving"].erase("disaggregation");
    doc["serving"]["replicas"] = c.replicas;
  }
  doc["serving"]["tensor_parallel_size"] = c.tp;
  doc["serving"]["pipeline_parallel_size"] = c.pp;
  if (c.max_num_seqs > 0) doc["serving"]["max_num_seqs"] = c.max_num_seqs;
  if (c.expert_parallel >= 0) doc["serving"]["enable_expert_parallel"] = c.expert_parallel == 1;
  return doc;
}

}  // namespace fmsim::search
