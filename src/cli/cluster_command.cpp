// fmsim cluster CLUSTER.json JOBS.jsonl [--policy fifo|backfill|priority] [--placement topology|spread]
//               [--node-failures-per-node-hour X] [--repair TIME] [--restart TIME] [--seed N]
//               [--json FILE|-] [--timeline FILE]
// A shared cluster over days: a job queue, a scheduler policy, placement on leaf switches or NVLink
// domains, node failures and restarts from checkpoints (cluster/cluster_sim.hpp).
#include <chrono>
#include <cmath>

#include <cstdlib>
#include <optional>

#include <CLI/CLI.hpp>
#include <spdlog/spdlog.h>

#include "fmsim/cli/commands.hpp"
#include "fmsim/cli/output_file.hpp"
#include "fmsim/cluster/cluster_report.hpp"
#include "fmsim/cluster/scenario_timing.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/topology/cluster_spec.hpp"
#include "fmsim/units/quantity.hpp"

#include "fmsim/cluster/kueue.hpp"
#include "fmsim/cluster/topology_conf.hpp"
#include "metrics_options.hpp"

namespace fmsim::cli {
namespace {

struct ClusterOptions {
  std::string cluster_file, jobs_file, policy = "backfill", placement = "topology", json_file, timeline_file;
  std::string repair = "4h", restart = "10min", rescale = "60s", watchdog = "10min", topology_conf, kueue;
  std::string group_repair = "4h", recovery = "restart", checkpointless_recovery = "105s", straggler_detect = "0s";
  std::vector<std::string> fail_nodes, fail_groups, straggler_nodes;
  double failures_per_node_hour = 0, group_failures_per_group_hour = 0, straggler_fraction = 0, straggler_slowdown = 0.10;
  int spares = 0, block_groups = 0;
  bool contention = false;
  std::string contention_model = "fast";
  std::uint64_t seed = 1;
  MetricsCli metrics;
};

double time_option(const std::string& flag, const std::string& text) {
  double s = 0;
  try {
    s = units::parse(text, units::Dimension::time);
  } catch (const std::exception& error) {  // units::parse throws std::invalid_argument for malformed text
    throw InputError(flag + " '" + text + "': expected " + units::describe(units::Dimension::time) + " (" + error.what() + ")");
  }
  if (!std::isfinite(s) || s < 0 || s > 3.2e9) throw InputError(flag + " '" + text + "': expected a time from 0 to 100 years, like 4h or 10min");
  return s;
}

/// `text` as an index from 0 to count - 1 (a node or a placement group); -1 when it is not one.
long index_below(const std::string& text, long count) {
  char* end = nullptr;
  const long value = std::strtol(text.c_str(), &end, 10);
  return text.empty() || *end != '\0' || value < 0 || value >= count ? -1 : value;
}

int run_cluster(const GlobalOptions& globals, const ClusterOptions& o) {
  const auto started = std::chrono::steady_clock::now();
  const report::MetricsOptions metrics_opts = metrics_options(o.metrics);
  auto catalog = load_catalog(globals);
  const auto spec = topology::load_cluster(o.cluster_file, catalog);
  cluster::ClusterRun run;
  run.cluster_name = spec.name;
  run.trace_file = o.jobs_file;
  run.gpu = spec.gpu.name;
  run.instance_type = spec.instance.name;
  run.usd_per_node_hour = spec.instance.usd_per_hour.value_or(0.0);
  run.shape.nodes = spec.nodes;
  run.shape.gpus_per_node = spec.gpus_per_node;
  run.shape.nodes_per_leaf = spec.fabric.nodes_per_leaf;
  run.shape.nodes_per_domain = spec.nvlink_domain_nodes;
  if (!o.topology_conf.empty()) {
    // Slurm's own view of the switches (or blocks) places the jobs; steps are still simulated on the
    // cluster file's fabric.
    const auto topology = cluster::read_topology_conf(o.topology_conf, spec.nodes);
    run.shape.node_group = topology.node_group;
    run.shape.group_block = topology.group_block;
    spdlog::info("{}: {} {} over {} nodes", o.topology_conf, topology.group_names.size(),
                 topology.plugin == "tree" ? "leaf switches" : "blocks", topology.node_names.size());
  }
  if (o.block_groups != 0) {
    // Every N consecutive placement groups form a block (the level above them: Kueue's block, e.g. EKS's
    // network-node-layer labels), where no topology.conf gives it.
    const int groups = run.shape.groups();
    if (o.block_groups < 1 || o.block_groups > groups) {
      throw InputError("--block-groups " + std::to_string(o.block_groups) + ": expected 1 to " + std::to_string(groups) +
                       " placement groups per block (the cluster has " + std::to_string(groups) + ")");
    }
    if (!run.shape.group_block.empty()) {
      throw InputError("--block-groups with " + o.topology_conf + ", whose Switches= lines give the blocks already: give one of them");
    }
    for (int g = 0; g < groups; ++g) run.shape.group_block.push_back(g / o.block_groups);
  }
  if (o.policy != "fifo" && o.policy != "backfill" && o.policy != "priority" && o.policy != "kueue") {
    throw InputError("--policy '" + o.policy + "': expected fifo, backfill, priority or kueue");
  }
  run.options.policy = o.policy == "fifo"       ? cluster::Policy::fifo
                       : o.policy == "priority" ? cluster::Policy::priority
                       : o.policy == "kueue"    ? cluster::Policy::kueue
                                                : cluster::Policy::backfill;
  std::optional<cluster::KueueConfig> kueue;
  if (!o.kueue.empty()) {
    if (o.policy != "backfill" && o.policy != "kueue") throw InputError("--kueue sets the kueue policy: it cannot go with --policy " + o.policy);
    kueue = cluster::read_kueue(o.kueue);
    run.options.policy = cluster::Policy::kueue;
    run.options.kueue = &*kueue;
  } else if (run.options.policy == cluster::Policy::kueue) {
    throw InputError("--policy kueue needs --kueue FILE (Kueue ClusterQueue and LocalQueue YAML)");
  }
  if (o.placement != "topology" && o.placement != "spread") throw InputError("--placement '" + o.placement + "': expected topology or spread");
  run.options.placement = o.placement == "spread" ? cluster::Placement::spread : cluster::Placement::topology;
  if (!std::isfinite(o.failures_per_node_hour) || o.failures_per_node_hour < 0 || o.failures_per_node_hour > 1) {
    throw InputError("--node-failures-per-node-hour " + std::to_string(o.failures_per_node_hour) +
                     ": expected a rate from 0 to 1 per node-hour (Llama 3's 16,384-GPU run saw about 0.00016 per 8-GPU node-hour: 419 in 54 days on 2,048 nodes)");
  }
  run.options.failures.node_failures_per_node_hour = o.failures_per_node_hour;
  run.options.failures.repair_s = time_option("--repair", o.repair);
  run.options.failures.restart_s = time_option("--restart", o.restart);
  run.options.failures.rescale_s = time_option("--rescale", o.rescale);
  run.options.failures.watchdog_s = time_option("--watchdog", o.watchdog);
  for (const auto& text : o.fail_nodes) {
    // NODE@TIME[:KIND]: node index, a time of the trace and the failure's kind ("17@6h", "3@2h:hang").
    const auto at = text.find('@');
    const auto colon = text.find(':', at == std::string::npos ? 0 : at);
    const long node = at == std::string::npos ? -1 : index_below(text.substr(0, at), spec.nodes);
    if (node < 0) {
      throw InputError("--fail-node '" + text + "': expected NODE@TIME[:KIND] with NODE from 0 to " + std::to_string(spec.nodes - 1) +
                       ", like 3@6h or 3@6h:hang");
    }
    cluster::FailureModel::Injected failure;
    failure.node = static_cast<int>(node);
    failure.time_s = time_option("--fail-node", text.substr(at + 1, colon == std::string::npos ? std::string::npos : colon - at - 1));
    if (colon != std::string::npos) {
      const std::string kind = text.substr(colon + 1);
      if (kind == "hardware") failure.recovery = cluster::Recovery::repair;
      else if (kind == "software") failure.recovery = cluster::Recovery::restart;
      else if (kind == "hang") failure.recovery = cluster::Recovery::hang;
      else throw InputError("--fail-node '" + text + "': kind '" + kind + "': expected hardware, software or hang");
    }
    run.options.failures.injected.push_back(failure);
  }
  const int groups = run.shape.groups();
  const std::string group_word = run.shape.nodes_per_domain > 1 && o.topology_conf.empty() ? "NVLink domain" : "leaf switch group";
  if (!std::isfinite(o.group_failures_per_group_hour) || o.group_failures_per_group_hour < 0 || o.group_failures_per_group_hour > 1) {
    throw InputError("--group-failures-per-group-hour " + std::to_string(o.group_failures_per_group_hour) +
                     ": expected a rate from 0 to 1 per " + group_word + " and hour");
  }
  run.options.failures.group_failures_per_group_hour = o.group_failures_per_group_hour;
  run.options.failures.group_repair_s = time_option("--group-repair", o.group_repair);
  for (const auto& text : o.fail_groups) {
    // GROUP@TIME: a placement group's index and a time of the trace ("2@6h").
    const auto at = text.find('@');
    const long group = at == std::string::npos ? -1 : index_below(text.substr(0, at), groups);
    if (group < 0) {
      throw InputError("--fail-group '" + text + "': expected GROUP@TIME with GROUP a " + group_word + " from 0 to " + std::to_string(groups - 1) +
                       ", like 2@6h");
    }
    run.options.failures.injected_groups.push_back({time_option("--fail-group", text.substr(at + 1)), static_cast<int>(group)});
  }
  if (o.recovery != "restart" && o.recovery != "checkpointless") {
    throw InputError("--recovery '" + o.recovery + "': expected restart (from the last checkpoint) or checkpointless (SageMaker HyperPod's in-process recovery)");
  }
  run.options.failures.recovery = o.recovery == "checkpointless" ? cluster::JobRecovery::checkpointless : cluster::JobRecovery::restart;
  run.options.failures.checkpointless_recovery_s = time_option("--checkpointless-recovery", o.checkpointless_recovery);
  if (!std::isfinite(o.straggler_fraction) || o.straggler_fraction < 0 || o.straggler_fraction > 1) {
    throw InputError("--stragglers " + std::to_string(o.straggler_fraction) + ": expected a fraction of nodes from 0 to 1 (MegaScale saw about 0.005)");
  }
  if (!std::isfinite(o.straggler_slowdown) || o.straggler_slowdown < 0 || o.straggler_slowdown > 10) {
    throw InputError("--straggler-slowdown " + std::to_string(o.straggler_slowdown) + ": expected 0 to 10 (0.10: 10 % slower, MegaScale's)");
  }
  if (o.spares < 0 || o.spares >= spec.nodes) {
    throw InputError("--spares " + std::to_string(o.spares) + ": expected 0 to " + std::to_string(spec.nodes - 1) +
                     " hot spare nodes (the rest of the " + std::to_string(spec.nodes) + " nodes are scheduled)");
  }
  run.options.failures.straggler_fraction = o.straggler_fraction;
  run.options.failures.straggler_slowdown = o.straggler_slowdown;
  for (const auto& text : o.straggler_nodes) {
    const long node = index_below(text, spec.nodes);
    if (node < 0) {
      throw InputError("--straggler-node '" + text + "': expected a node index from 0 to " + std::to_string(spec.nodes - 1));
    }
    run.options.failures.straggler_nodes.push_back(static_cast<int>(node));
  }
  run.options.failures.straggler_detect_s = time_option("--straggler-detect", o.straggler_detect);
  run.options.failures.spare_nodes = o.spares;
  run.options.failures.seed = o.seed;
  run.jobs = cluster::read_job_trace(o.jobs_file, spec.gpus_per_node, spec.nodes);
  for (const auto& job : run.jobs) {
    if (kueue && job.topology != cluster::TopologyRequest::none && !kueue->topology_aware()) {
      throw InputError(o.jobs_file + ": job " + job.id + " asks for a topology, but no ResourceFlavor of " + o.kueue +
                       " names a Topology (spec.topologyName): Kueue's topology-aware scheduling is off there");
    }
    if (kueue && job.topology_level == cluster::TopologyLevel::block) {
      // A block request needs a Topology with a level above the rack's: block, rack, host at least.
      // (Checked over the file's topology-aware flavors together: fmsim does not map a queue to its flavors.)
      std::size_t levels = 0;
      std::string names;
      for (const auto& name : kueue->flavor_topology) {
        const auto t = kueue->topologies.find(name);
        if (t != kueue->topologies.end()) levels = std::max(levels, t->second.size());
        names += (names.empty() ? "" : ", ") + name;
      }
      if (levels < 3) {
        throw InputError(o.jobs_file + ": job " + job.id + " asks for a block, but the Topology of " + o.kueue + " (" + names + ") has " +
                         std::to_string(levels) + " levels: a block needs three (block, rack, hostname)");
      }
    }
    if (job.nodes > spec.nodes - o.spares) {
      throw InputError(o.jobs_file + ": job " + job.id + " needs " + std::to_string(job.nodes) + " nodes but --spares " + std::to_string(o.spares) +
                       " leaves " + std::to_string(spec.nodes - o.spares) + " of the " + std::to_string(spec.nodes) + " to schedule: it could never start");
    }
  }
  spdlog::info("{}: {} jobs on {} nodes, {} scheduling", o.jobs_file, run.jobs.size(), spec.nodes, cluster::to_string(run.options.policy));
  cluster::ScenarioTiming timing(o.cluster_file, spec, catalog);
  run.options.duration_at = [&timing, &run](int job, const std::vector<int>& nodes) { return timing.duration(run.jobs[job], nodes); };
  if (o.contention && spec.fabric.oversubscription <= 1.0) {
    spdlog::info("--contention: {}'s leaf uplinks are not oversubscribed, so its jobs do not slow each other", spec.name);
  } else if (o.contention) {
    timing.set_contention_model(o.contention_model == "full"      ? cluster::ContentionModel::full
                                : o.contention_model == "aligned" ? cluster::ContentionModel::aligned
                                                                  : cluster::ContentionModel::fast);
    run.options.contention_model = o.contention_model;
    run.options.contention_at = [&timing, &run](const std::vector<int>& jobs, const std::vector<std::vector<int>>& nodes) {
      std::vector<const cluster::JobSpec*> specs;
      for (int j : jobs) specs.push_back(&run.jobs[j]);
      return timing.contention_factors(specs, nodes);
    };
  }
  try {
    run.result = cluster::simulate_cluster(run.shape, run.jobs, run.options);
  } catch (const InputError& error) {  // a job the cluster could never place: name the trace it came from
    throw InputError(o.jobs_file + ": " + error.what());
  }
  if (timing.simulations() > 0) spdlog::info("{} training-step simulations for the scenario jobs' placements", timing.simulations());
  run.contention_neighbourhoods = timing.contention_simulations();
  run.contention_replays = timing.fast_replays();
  if (timing.contention_simulations() > 0) {
    if (timing.contention_model() == cluster::ContentionModel::full) {
      spdlog::info("{} shared-fabric simulations for the neighbourhoods of scenario jobs", timing.contention_simulations());
    } else {
      spdlog::info("{} neighbourhoods of scenario jobs priced by the fast contention model ({} step replays)", timing.contention_simulations(),
                   timing.fast_replays());
    }
  }
  run.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  // Rendered before anything is written, so a failure leaves no partial set of outputs.
  const std::string json = o.json_file.empty() ? "" : cluster::to_json(run).dump(2) + "\n";
  const std::string timeline = o.timeline_file.empty() ? "" : cluster::timeline_json(run).dump() + "\n";
  const std::string series = o.metrics.file.empty() ? "" : cluster::cluster_metrics(run, metrics_opts);
  if (o.json_file != "-" && o.metrics.file != "-") write_output("-", cluster::to_text(run));
  if (!json.empty()) write_output(o.json_file, json);
  if (!timeline.empty()) write_output(o.timeline_file, timeline);
  if (!series.empty()) write_output(o.metrics.file, series);
  return 0;
}

}  // namespace

void register_cluster(CLI::App& app, const GlobalOptions& globals, Action& action) {
  auto o = std::make_shared<ClusterOptions>();
  CLI::App* sub = app.add_subcommand("cluster", "simulate a shared cluster over days: job queue, scheduler, placement, failures");
  sub->add_option("cluster", o->cluster_file, "cluster description (topologies/*.json)")->required();
  sub->add_option("jobs", o->jobs_file, "job trace, JSON Lines (configs/cluster/*.jsonl)")->required();
  sub->add_option("--policy", o->policy, "fifo, backfill (default: Slurm's EASY backfill), priority, or kueue (with --kueue)");
  sub->add_option("--placement", o->placement, "topology (default: fewest leaf switches / NVLink domains) or spread (Kubernetes default)");
  sub->add_option("--node-failures-per-node-hour", o->failures_per_node_hour, "node failure rate (default 0: none)");
  sub->add_option("--repair", o->repair, "time a failed node is out (default 4h)");
  sub->add_option("--restart", o->restart, "an interrupted job's restart cost (default 10min)");
  sub->add_option("--seed", o->seed, "seed of the failure draws")->check(CLI::NonNegativeNumber);
  sub->add_option("--fail-node", o->fail_nodes,
                  "fail a given node at a given time: NODE@TIME[:KIND], KIND hardware (default), software or hang, its cause drawn from the Llama 3 table, e.g. 3@6h:hang (repeatable)");
  sub->add_option("--group-failures-per-group-hour", o->group_failures_per_group_hour,
                  "correlated failures: a whole leaf switch group (or NVLink domain on UltraServer clusters) goes out at once (default 0: none)");
  sub->add_option("--group-repair", o->group_repair, "time a failed group is out (default 4h)");
  sub->add_option("--fail-group", o->fail_groups, "fail a given placement group at a given time: GROUP@TIME, e.g. 2@6h (repeatable)");
  sub->add_option("--recovery", o->recovery,
                  "restart (default: from the last checkpoint) or checkpointless (in-process recovery on a replacement node, the step in flight lost)");
  sub->add_option("--checkpointless-recovery", o->checkpointless_recovery, "the checkpointless pause (default 105s: detection 30 s, re-forming 45 s, NCCL init 30 s)");
  sub->add_option("--watchdog", o->watchdog, "a hung collective is detected after this (default 10min, PyTorch's NCCL timeout)");
  sub->add_option("--stragglers", o->straggler_fraction, "fraction of nodes that run slow (default 0; MegaScale saw ~0.005)");
  sub->add_option("--straggler-slowdown", o->straggler_slowdown, "how much slower a straggler runs (default 0.10, MegaScale's)");
  sub->add_option("--straggler-node", o->straggler_nodes, "a given node runs slow (a straggler besides the drawn ones; repeatable)");
  sub->add_option("--straggler-detect", o->straggler_detect,
                  "evict a straggler once a job has trained this long beside it (default 0: never; MegaScale finds and diagnoses within 10min)");
  sub->add_flag("--contention", o->contention,
               "scenario jobs that share leaf switches slow each other (memoized per neighbourhood; --contention-model)");
  sub->add_option("--contention-model", o->contention_model,
                  "fast (default): each job's step replayed at the uplink share the others' traffic leaves it on average (random phases); "
                  "aligned: the same with every job's transfers coinciding (an upper bound); "
                  "full: the jobs replayed together at full fidelity from a common start (slower)")
      ->check(CLI::IsMember({"fast", "aligned", "full"}))
      ->needs("--contention");
  sub->add_option("--spares", o->spares, "hot spare nodes held out of scheduling to replace failed nodes of running jobs (default 0)");
  sub->add_option("--rescale", o->rescale, "an elastic job's pause when it shrinks or grows (default 60s)");
  sub->add_option("--kueue", o->kueue, "Kubernetes + Kueue admission: ClusterQueue/LocalQueue YAML (quotas, cohorts, preemption); jobs' queue names their queue");
  sub->add_option("--topology-conf", o->topology_conf,
                  "Slurm topology.conf: leaf switches (topology/tree; Switches= lines above them give blocks) or blocks (topology/block) for placement");
  sub->add_option("--block-groups", o->block_groups,
                  "every N consecutive leaf switch groups (or NVLink domains) form a block, the level above them that jobs' topology_level block asks for");
  sub->add_option("--json", o->json_file, "write the result (fmsim.cluster/1; '-' = stdout, replaces the summary)");
  sub->add_option("--timeline", o->timeline_file, "write a Chrome trace with a track per node (Perfetto)");
  add_metrics_options(sub, o->metrics);
  sub->callback([&globals, o, &action] { action = [&globals, o] { return run_cluster(globals, *o); }; });
}

}  // namespace fmsim::cli
