// fmsim topo CLUSTER.json [--dot FILE] [--json FILE|-] [--graph-json FILE]
#include <sstream>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/hardware/catalog.hpp"
#include "fmsim/topology/export.hpp"
#include "fmsim/topology/summary.hpp"

namespace fmsim::cli {
namespace {

struct TopoOptions {
  std::string cluster_file;
  std::string dot_file;
  std::string json_file;
  std::string graph_json_file;
};

int run_topo(const GlobalOptions& globals, const TopoOptions& options) {
  auto catalog = load_catalog(globals);
  auto spec = topology::load_cluster(options.cluster_file, catalog);
  spdlog::info("building the graph of {} ({} GPUs)", spec.name, spec.total_gpus());
  auto cluster = topology::build_cluster_graph(spec);
  auto summary = topology::summarize(cluster);

  // Render everything before writing anything, so a failure leaves no partial set of outputs.
  std::string dot, json, graph_json;
  if (!options.dot_file.empty()) {
    std::ostringstream out;
    topology::write_dot(cluster, out);
    dot = out.str();
  }
  if (!options.json_file.empty()) json = topology::to_json(summary).dump(2) + "\n";
  if (!options.graph_json_file.empty()) graph_json = topology::graph_to_json(cluster).dump() + "\n";

  if (options.json_file != "-") write_output("-", topology::to_text(summary));
  if (!dot.empty()) write_output(options.dot_file, dot);
  if (!json.empty()) write_output(options.json_file, json);
  if (!graph_json.empty()) write_output(options.graph_json_file, graph_json);
  return 0;
}

}  // namespace

void register_topo(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto options = std::make_shared<TopoOptions>();
  CLI::App* sub = app.add_subcommand("topo", "summarize a cluster: GPUs, NVLink domains, bandwidths, storage, price");
  sub->add_option("cluster", options->cluster_file, "cluster description (topologies/*.json)")->required();
  sub->add_option("--dot", options->dot_file, "write the cluster graph as Graphviz DOT");
  sub->add_option("--json", options->json_file, "write the summary as JSON ('-' = stdout, replaces the table)");
  sub->add_option("--graph-json", options->graph_json_file, "write every vertex and edge as JSON");
  sub->callback([&globals, options, &action] { action = [&globals, options] { return run_topo(globals, *options); }; });
}

}  // namespace fmsim::cli
