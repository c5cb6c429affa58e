// Replica placement and per-pool replica models.
#include "fmsim/inference/serving_plan.hpp"

#include <set>

#include "fmsim/common/error.hpp"

namespace fmsim::inference {

ServingPlan::ServingPlan(const ServeScenario& scenario) : scenario_(scenario), cluster_(topology::build_cluster_graph(scenario.cluster)) {
  const int total = scenario.cluster.total_gpus();
  const int domain_gpus = scenario.cluster.gpus_per_node * scenario.cluster.nvlink_domain_nodes;
  int next = 0;
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(p)];
    for (int r = 0; r < pool.replicas; ++r) {
      ReplicaPlacement replica;
      replica.pool = p;
      for (int stage = 0; stage < pool.pp; ++stage) {
        // A group never straddles an NVLink domain; one larger than a domain starts at a domain's start.
        const bool straddles = pool.tp <= domain_gpus ? next / domain_gpus != (next + pool.tp - 1) / domain_gpus : next % domain_gpus != 0;
        if (straddles) next = (next / domain_gpus + 1) * domain_gpus;
        if (next + pool.tp > total) {
          throw InputError(scenario.file + ": the " + to_string(pool.role) + " replicas do not fit on " +
                           std::to_string(scenario.cluster.nodes) + " x " + scenario.cluster.instance.name +
                           " once TP groups are kept inside NVLink domains (or span whole ones); add nodes or remove replicas");
        }
        for (int rank = 0; rank < pool.tp; ++rank) replica.gpus.push_back(next + rank);
        next += pool.tp;
      }
      replicas_.push_back(std::move(replica));
    }
  }
  std::set<int> nodes;
  for (const auto& replica : replicas_) {
    for (int gpu : replica.gpus) nodes.insert(cluster_.node_of_gpu(gpu));
  }
  nodes_used_ = static_cast<int>(nodes.size());
  for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
    const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(p)];
    const ReplicaPlacement* first = nullptr;
    for (const auto& replica : replicas_) {
      if (replica.pool == p) {
        first = &replica;
        break;
      }
    }
    std::vector<int> tp_gpus(first->gpus.begin(), first->gpus.begin() + pool.tp);
    const int hop = pool.pp > 1 ? first->gpus[static_cast<std::size_t>(pool.tp)] : -1;
    const std::string where = scenario.file + ": " + (scenario.disaggregated() ? "/serving/disaggregation/" + to_string(pool.role) : "/serving");
    models_.push_back(std::make_unique<ReplicaModel>(scenario, pool, cluster_, tp_gpus, hop, where));
  }
}

}  // namespace fmsim::inference
