// fmsim collective CLUSTER.json --op all_reduce -b 8 -e 16G -f 2 [--gpus N] [--algo A] [--proto P]
//                  [--fidelity fast|full] [--placement P] [--seed N] [--json FILE|-]
// Prints the nccl-tests table for a simulated run.
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <set>
#include <sstream>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/collectives/benchmark.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/report/error_band.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/units/quantity.hpp"

namespace fmsim::cli {
namespace {

// The validation judges messages from 1 MiB on bus bandwidth and smaller ones on time (error_band.hpp).
constexpr double kOneMiB = 1024.0 * 1024.0;

struct CollectiveOptions {
  std::string cluster_file, op = "all_reduce", min_size = "8", max_size = "128M", factor = "2";
  int gpus = 0;
  std::string algorithm, protocol, fidelity = "fast", placement = "packed", json_file;
  std::uint64_t seed = 0;
};

double size_option(const std::string& flag, const std::string& text) {
  try {
    return units::parse_size_argument(text);
  } catch (const std::invalid_argument& error) {
    throw InputError(flag + " '" + text + "': " + error.what());
  }
}

collectives::Protocol parse_protocol(const std::string& name) {
  if (name == "LL" || name == "ll") return collectives::Protocol::ll;
  if (name == "LL128" || name == "ll128") return collectives::Protocol::ll128;
  if (name == "Simple" || name == "simple") return collectives::Protocol::simple;
  throw InputError("--proto '" + name + "': expected LL, LL128 or Simple");
}

std::string table(const collectives::BenchmarkResult& result, const std::string& op, bool full) {
  std::ostringstream out;
  char line[256];
  std::snprintf(line, sizeof line, "#%12s %12s %8s %6s %12s %10s %10s  %s\n", "size", "count", "type", "redop",
                "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm");
  out << line;
  for (const auto& row : result.rows) {
    std::snprintf(line, sizeof line, " %12.0f %12.0f %8s %6s %12.2f %10.2f %10.2f  %s/%s%s\n", row.size_bytes,
                  row.count, "float", collectives::redop_of(collectives::parse_op(op)).c_str(), row.time_s * 1e6,
                  row.algbw_GBps, row.busbw_GBps, collectives::to_string(row.algorithm).c_str(),
                  collectives::to_string(row.protocol).c_str(), full && !row.simulated ? " (fast)" : "");
    out << line;
  }
  return out.str();
}

int run_collective(const GlobalOptions& globals, const CollectiveOptions& o) {
  auto started = std::chrono::steady_clock::now();
  collectives::BenchmarkRequest request;
  request.op = collectives::parse_op(o.op);
  if (!o.algorithm.empty()) request.algorithm = collectives::parse_algorithm(o.algorithm);
  if (!o.protocol.empty()) request.protocol = parse_protocol(o.protocol);
  if (o.fidelity != "fast" && o.fidelity != "full") throw InputError("--fidelity '" + o.fidelity + "': expected fast or full");
  request.fidelity = o.fidelity == "full" ? collectives::Fidelity::full : collectives::Fidelity::fast;
  double factor = 0;
  const char* const factor_end = o.factor.data() + o.factor.size();
  const auto [factor_stop, factor_error] = std::from_chars(o.factor.data(), factor_end, factor, std::chars_format::fixed);
  if (o.factor.empty() || factor_error != std::errc() || factor_stop != factor_end || !std::isfinite(factor)) {
    throw InputError("-f '" + o.factor + "': expected a number >= 2, like 2 or 4");
  }
  request.sizes_bytes = collectives::size_sweep(size_option("-b", o.min_size), size_option("-e", o.max_size), factor);
  auto policy = topology::parse_placement_policy(o.placement);

  auto catalog = load_catalog(globals);
  auto spec = topology::load_cluster(o.cluster_file, catalog);
  const int gpus = o.gpus != 0 ? o.gpus : spec.total_gpus();
  if (gpus > spec.total_gpus()) {
    throw InputError("--gpus " + std::to_string(gpus) + ": the cluster " + spec.name + " has only " +
                     std::to_string(spec.total_gpus()) + " GPUs");
  }
  if (gpus < 2) throw InputError("--gpus " + std::to_string(gpus) + ": a collective needs at least 2 GPUs");
  auto cluster = topology::build_cluster_graph(spec);
  const auto rank_gpu = topology::place_ranks(cluster, gpus, policy, o.seed);
  auto layout = collectives::make_layout(cluster, rank_gpu);
  // The validation group of this fabric: the instances and NVLink domains the communicator spans.
  std::set<int> nodes_spanned;
  for (int g : rank_gpu) nodes_spanned.insert(g / spec.gpus_per_node);
  const std::string fabric = report::collective_fabric(spec.instance, spec.gpu, static_cast<int>(nodes_spanned.size()), layout.islands);
  bool small = false, large = false;
  for (double size : request.sizes_bytes) (size >= kOneMiB ? large : small) = true;
  auto result = collectives::run_benchmark(layout, request);
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();

  std::string json;
  if (!o.json_file.empty()) {
    nlohmann::json doc;
    doc["schema"] = "fmsim.collective/1";
    doc["cluster"] = spec.name;
    doc["op"] = o.op;
    doc["gpus"] = gpus;
    doc["nvlink_domains"] = layout.islands;
    doc["placement"] = o.placement;
    doc["fidelity"] = o.fidelity;
    doc["rows"] = nlohmann::json::array();
    for (const auto& row : result.rows) {
      doc["rows"].push_back({{"size_bytes", row.size_bytes}, {"count", row.count}, {"type", "float"},
                             {"redop", collectives::redop_of(request.op)}, {"time_s", row.time_s},
                             {"latency_s", row.latency_s}, {"algbw_GBps", row.algbw_GBps},
                             {"busbw_GBps", row.busbw_GBps}, {"algorithm", collectives::to_string(row.algorithm)},
                             {"protocol", collectives::to_string(row.protocol)},
                             {"simulated", row.simulated}});
    }
    doc["error_band"] = {{"fabric", fabric}};
    if (large) doc["error_band"]["from_1MiB"] = report::to_json(report::collective_error_band(fabric, true));
    if (small) doc["error_band"]["below_1MiB"] = report::to_json(report::collective_error_band(fabric, false));
    doc["engine"] = {{"simulated_messages", result.simulated_messages},
                     {"bytes_sent", result.simulated_bytes_sent},
                     {"bytes_received", result.simulated_bytes_received},
                     {"wall_s", wall_s}};
    json = doc.dump(2) + "\n";
  }
  if (o.json_file != "-") {
    std::ostringstream header;
    header << "# fmsim collective: " << o.op << " on " << gpus << " GPUs of " << spec.name << " (" << layout.islands
           << " NVLink domain" << (layout.islands > 1 ? "s" : "") << " of " << layout.ranks_per_island << "), fidelity "
           << o.fidelity << "\n";
    std::string bands;
    if (large) bands += "# error band, bus bandwidth from 1 MiB: " + report::describe(report::collective_error_band(fabric, true)) + "\n";
    if (small) bands += "# error band, time below 1 MiB: " + report::describe(report::collective_error_band(fabric, false)) + "\n";
    write_output("-", header.str() + table(result, o.op, o.fidelity == "full") + bands);
  }
  if (!json.empty()) write_output(o.json_file, json);
  return 0;
}

}  // namespace

void register_collective(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<CollectiveOptions>();
  CLI::App* sub = app.add_subcommand("collective", "simulate an nccl-tests sweep of one collective on a cluster");
  sub->add_option("cluster", o->cluster_file, "cluster description (topologies/*.json)")->required();
  sub->add_option("--op", o->op, "all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv");
  sub->add_option("-b,--minbytes", o->min_size, "smallest size, nccl-tests style (8, 128K, 1M, 16G)");
  sub->add_option("-e,--maxbytes", o->max_size, "largest size");
  sub->add_option("-f,--stepfactor", o->factor, "multiply the size by this factor each row");
  sub->add_option("--gpus", o->gpus, "GPUs in the communicator (default: the whole cluster)")
      ->check(CLI::Range(2, std::numeric_limits<int>::max()));
  sub->add_option("--algo", o->algorithm, "force an algorithm: ring, tree, nvls, nvls_tree, hierarchical, pairwise");
  sub->add_option("--proto", o->protocol, "force a protocol: LL, LL128, Simple");
  sub->add_option("--fidelity", o->fidelity, "fast (default) or full (every message; the referee)");
  sub->add_option("--placement", o->placement, "packed, topology-aware or scattered");
  sub->add_option("--seed", o->seed, "seed of the scattered placement")->check(CLI::NonNegativeNumber);
  sub->add_option("--json", o->json_file, "write the rows as JSON ('-' = stdout, replaces the table)");
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_collective(globals, *o); }; });
}

}  // namespace fmsim::cli
