// fmsim contention CLUSTER.json --job SCENARIO@NODES [--job ...] [--json FILE|-]
// Several training jobs placed on one cluster at once: each job's step alone and while the others run, on
// the engine, and the links more than one of them crossed (training/shared_fabric.hpp).
#include <cstdio>
#include <cstdlib>
#include <set>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/cluster/scenario_timing.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/training/shared_fabric.hpp"

namespace fmsim::cli {
namespace {

using nlohmann::json;

struct ContentionOptions {
  std::string cluster_file, json_file;
  std::vector<std::string> jobs;
  int max_steps = 32;
};

/// "0-3,8-11" or "5": node indices below `nodes`, each once.
std::vector<int> parse_nodes(const std::string& text, int nodes, const std::string& flag) {
  const std::string expected = flag + ": expected SCENARIO@NODES with NODES like 0-3,8-11 (node indices from 0 to " + std::to_string(nodes - 1) + ")";
  std::vector<int> out;
  std::set<int> seen;
  std::size_t start = 0;
  while (start <= text.size()) {
    std::size_t comma = text.find(',', start);
    if (comma == std::string::npos) comma = text.size();
    const std::string part = text.substr(start, comma - start);
    const std::size_t dash = part.find('-');
    auto number = [&](const std::string& s) {  // digits only: no sign, no blank
      const bool digits = !s.empty() && s.size() <= 9 && s.find_first_not_of("0123456789") == std::string::npos;
      const long v = digits ? std::strtol(s.c_str(), nullptr, 10) : -1;
      if (v < 0 || v >= nodes) throw InputError(expected + "; '" + part + "' is not one");
      return static_cast<int>(v);
    };
    const int first = number(dash == std::string::npos ? part : part.substr(0, dash));
    const int last = dash == std::string::npos ? first : number(part.substr(dash + 1));
    if (last < first) throw InputError(expected + "; '" + part + "' runs backwards");
    for (int n = first; n <= last; ++n) {
      if (!seen.insert(n).second) throw InputError(flag + ": node " + std::to_string(n) + " is listed twice");
      out.push_back(n);
    }
    start = comma + 1;
  }
  return out;
}

std::string node_list(const std::vector<int>& nodes) {
  std::string out;
  for (std::size_t i = 0; i < nodes.size();) {
    std::size_t k = i;
    while (k + 1 < nodes.size() && nodes[k + 1] == nodes[k] + 1) ++k;
    if (!out.empty()) out += ",";
    out += std::to_string(nodes[i]) + (k > i ? "-" + std::to_string(nodes[k]) : "");
    i = k + 1;
  }
  return out;
}

int run_contention(const GlobalOptions& globals, const ContentionOptions& o) {
  auto catalog = load_catalog(globals);
  const auto spec = topology::load_cluster(o.cluster_file, catalog);
  if (o.jobs.empty()) throw InputError("--job: give at least one SCENARIO@NODES (two or more to see them share the fabric)");
  if (o.max_steps < 1 || o.max_steps > 1000) throw InputError("--max-steps " + std::to_string(o.max_steps) + ": expected 1 to 1000");
  std::vector<training::FabricJob> jobs;
  std::vector<std::vector<int>> placements;
  std::map<int, int> node_job;
  for (std::size_t j = 0; j < o.jobs.size(); ++j) {
    const std::string& text = o.jobs[j];
    const std::string flag = "--job '" + text + "'";
    const auto at = text.rfind('@');
    if (at == std::string::npos || at == 0) throw InputError(flag + ": expected SCENARIO@NODES, like configs/training/llama3-70b-p5.json@0-7");
    const std::string scenario = text.substr(0, at);
    std::vector<int> nodes = parse_nodes(text.substr(at + 1), spec.nodes, flag);
    for (int n : nodes) {
      auto [it, fresh] = node_job.emplace(n, static_cast<int>(j));
      if (!fresh) throw InputError(flag + ": node " + std::to_string(n) + " is already job " + std::to_string(it->second + 1) + "'s (jobs sharing a fabric get whole nodes of their own)");
    }
    const std::string name = std::filesystem::path(scenario).stem().string() + "@" + node_list(nodes);
    spdlog::info("job {}: {} on {} nodes, every rank traced", j + 1, name, nodes.size());
    jobs.push_back({name, cluster::trace_on_nodes(o.cluster_file, spec, scenario, nodes, catalog, "job " + std::to_string(j + 1) + " (" + scenario + ")", true)});
    placements.push_back(std::move(nodes));
  }
  const auto graph = topology::build_cluster_graph(spec);
  const auto r = training::simulate_shared_fabric(std::move(jobs), graph, o.max_steps);

  json doc = {{"schema", "fmsim.contention/1"},
              {"cluster", {{"name", spec.name}, {"nodes", spec.nodes}, {"gpus_per_node", spec.gpus_per_node},
                           {"nodes_per_leaf", spec.fabric.nodes_per_leaf}, {"oversubscription", spec.fabric.oversubscription}}},
              {"shared_run_s", r.shared_run_s},
              {"flows", r.flows}};
  json job_docs = json::array();
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const auto& x = r.jobs[j];
    job_docs.push_back({{"name", x.name}, {"scenario", o.jobs[j].substr(0, o.jobs[j].rfind('@'))}, {"nodes", placements[j]},
                        {"alone_step_s", x.alone_s}, {"shared_step_s", x.shared_s}, {"slowdown", x.slowdown()}, {"steps_replayed", x.steps}});
  }
  doc["jobs"] = job_docs;
  json links = json::array();
  for (const auto& l : r.shared_links) {
    json members = json::array();
    for (int j : l.jobs) members.push_back(j + 1);
    links.push_back({{"name", l.name}, {"jobs", members}, {"bytes", l.bytes}, {"utilization", l.utilization}});
  }
  doc["shared_links"] = links;

  std::string text = "shared fabric: " + spec.name + " (" + std::to_string(spec.nodes) + " nodes, " + std::to_string(spec.fabric.nodes_per_leaf) +
                     " per leaf switch, uplinks " + (spec.fabric.oversubscription > 1.0 ? "oversubscribed " : "non-blocking ");
  char line[512];
  std::snprintf(line, sizeof line, "%.2g:1)\n", spec.fabric.oversubscription);
  text += line;
  std::snprintf(line, sizeof line, "  %-3s %-44s %10s %10s %9s\n", "job", "scenario@nodes", "alone", "shared", "slowdown");
  text += line;
  for (std::size_t j = 0; j < r.jobs.size(); ++j) {
    const auto& x = r.jobs[j];
    std::snprintf(line, sizeof line, "  %-3zu %-44s %8.3f s %8.3f s %+8.1f %%\n", j + 1, x.name.c_str(), x.alone_s, x.shared_s, 100 * x.slowdown());
    text += line;
  }
  if (r.shared_links.empty()) {
    text += "  no link carried more than one job's traffic: the jobs do not slow each other on this fabric\n";
  } else {
    text += "  links more than one job crossed (busiest first):\n";
    for (std::size_t k = 0; k < r.shared_links.size() && k < 8; ++k) {
      const auto& l = r.shared_links[k];
      std::string members;
      for (int j : l.jobs) members += (members.empty() ? "" : ", ") + std::to_string(j + 1);
      std::snprintf(line, sizeof line, "    %-24s %5.1f %% busy over the shared run, jobs %s\n", l.name.c_str(), 100 * l.utilization, members.c_str());
      text += line;
    }
    if (r.shared_links.size() > 8) text += "    ... " + std::to_string(r.shared_links.size() - 8) + " more in --json\n";
  }
  const std::string rendered = o.json_file.empty() ? "" : doc.dump(2) + "\n";
  if (o.json_file != "-") write_output("-", text);
  if (!rendered.empty()) write_output(o.json_file, rendered);
  return 0;
}

}  // namespace

void register_contention(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<ContentionOptions>();
  CLI::App* sub = app.add_subcommand("contention", "several training jobs on one fabric: each job's step alone and while the others run, and the links they share");
  sub->add_option("cluster", o->cluster_file, "cluster description (topologies/*.json)")->required();
  sub->add_option("--job", o->jobs, "a training scenario on given nodes: SCENARIO@NODES, e.g. configs/training/llama3-8b-p5.json@0-3,8-11 (repeatable)")->required();
  sub->add_option("--max-steps", o->max_steps, "at most this many steps of a short job replayed beside the longest one (default 32)");
  sub->add_option("--json", o->json_file, "write the result (fmsim.contention/1; '-' = stdout, replaces the summary)");
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_contention(globals, *o); }; });
}

}  // namespace fmsim::cli
