// Checkpoint plans and contents (see checkpoint_plan.hpp).
#include "fmsim/storage/checkpoint_plan.hpp"

#include <algorithm>

#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::storage {

std::string to_string(Strategy strategy) {
  switch (strategy) {
    case Strategy::fsx: return "fsx";
    case Strategy::s3: return "s3";
    case Strategy::nvme_fsx: return "nvme+fsx";
    case Strategy::nvme_s3: return "nvme+s3";
    case Strategy::peer: return "peer";
  }
  return "unknown";
}

std::string to_string(SaveMode mode) { return mode == SaveMode::sync ? "sync" : "async"; }
std::string to_string(Layout layout) { return layout == Layout::sharded ? "sharded" : "gathered"; }

const std::vector<Strategy>& all_strategies() {
  static const std::vector<Strategy> strategies{Strategy::fsx, Strategy::s3, Strategy::nvme_fsx, Strategy::nvme_s3,
                                                Strategy::peer};
  return strategies;
}

std::optional<Strategy> parse_strategy(const std::string& text) {
  for (Strategy strategy : all_strategies()) {
    if (to_string(strategy) == text) return strategy;
  }
  return std::nullopt;
}

std::string strategy_names() {
  std::string names;
  for (Strategy strategy : all_strategies()) names += (names.empty() ? "" : ", ") + to_string(strategy);
  return names;
}

CheckpointPlan read_checkpoint_plan(const workload::Scenario& s) {
  CheckpointPlan plan;
  if (!s.resolved.contains("checkpoint")) return plan;
  config::ObjectReader r(s.resolved.at("checkpoint"), s.file, "/checkpoint");
  if (auto strategy = r.optional_string("strategy")) {
    auto parsed = parse_strategy(*strategy);
    if (!parsed) r.fail("strategy", "one of: " + strategy_names());
    plan.strategy = *parsed;
  }
  plan.mode = r.choice_or("mode", {"async", "sync"}, "async") == "sync" ? SaveMode::sync : SaveMode::async;
  plan.layout = r.choice_or("layout", {"sharded", "gathered"}, "sharded") == "gathered" ? Layout::gathered : Layout::sharded;
  plan.include_optimizer = r.bool_or("include_optimizer", true);
  plan.interval_steps = r.int_or("interval_steps", 0, 1);
  plan.interval_s = r.quantity_or("interval", units::Dimension::time, 0.0);
  if (r.has("interval") && plan.interval_s <= 0) r.fail("interval", "a time above zero, like '30min'");
  if (plan.interval_steps > 0 && plan.interval_s > 0) r.fail("interval", "either interval_steps or interval, not both");
  plan.files_per_rank = static_cast<int>(r.int_or("files_per_rank", 1, 1, 65536));
  plan.keep = static_cast<int>(r.int_or("keep", 2, 1, 65536));
  plan.peer_replicas = static_cast<int>(r.int_or("peer_replicas", 1, 1));
  if (plan.peer_replicas >= s.cluster.nodes && s.cluster.nodes > 1) {
    r.fail("peer_replicas", "fewer replicas than the cluster's " + std::to_string(s.cluster.nodes) + " nodes");
  }
  r.reject_unknown_keys();
  return plan;
}

CheckpointContents checkpoint_contents(const workload::Scenario& s, const workload::MemoryReport& memory,
                                       const CheckpointPlan& plan, const std::vector<int>& rank_gpu) {
  const auto& p = s.parallelism;
  const double bytes_per_parameter = kCheckpointWeightBytes + (plan.include_optimizer ? kCheckpointOptimizerBytes : 0.0);
  CheckpointContents c;
  c.rank_bytes.assign(p.world(), 0.0);
  c.node_bytes.assign(s.cluster.nodes, 0.0);
  c.rank_node.assign(p.world(), 0);
  for (int rank = 0; rank < p.world(); ++rank) {
    const int stage = workload::coords_of(p, rank).pp;
    const double parameters = memory.by_pipeline_rank.at(stage).parameters_unique;
    c.rank_bytes[rank] = parameters * bytes_per_parameter;
    c.weights_bytes += parameters * kCheckpointWeightBytes;
    c.rank_node[rank] = rank_gpu.at(rank) / s.cluster.gpus_per_node;
    c.node_bytes.at(c.rank_node[rank]) += c.rank_bytes[rank];
    c.max_rank_bytes = std::max(c.max_rank_bytes, c.rank_bytes[rank]);
  }
  c.optimizer_bytes = plan.include_optimizer ? c.weights_bytes / kCheckpointWeightBytes * kCheckpointOptimizerBytes : 0.0;
  c.total_bytes = c.weights_bytes + c.optimizer_bytes;
  c.files = plan.layout == Layout::gathered ? 1 : p.world() * plan.files_per_rank;
  return c;
}

}  // namespace fmsim::storage
