#pragma once
// The search's fast tier: one training step's time from the same models the simulation replays, without
// building the step's trace or running the engine. The kernels and TP/CP/EP collectives of one layer are
// emitted by the trace builder's own layer code (layer_ops.cpp) and timed along their critical path with
// the compute model (training::compute_node_s) and the collective cost model (collectives::collective_cost,
// alone on an idle fabric); the pipeline schedule, pipeline sends, data-parallel buckets and the optimizer
// step are added in closed form. Contention between concurrent flows is left to the re-simulation.
// Agreement with `fmsim run`: docs/model.md ("Search: the analytic tier").
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/workload/scenario.hpp"

namespace fmsim::search {

/// Seconds of one step, split as `fmsim run` splits the critical rank's time line.
struct AnalyticStep {
  double step_s = 0;
  double compute_s = 0, tp_comm_s = 0, cp_comm_s = 0, ep_comm_s = 0, pp_comm_s = 0, dp_comm_s = 0, optimizer_s = 0, bubble_s = 0;
  /// name -> seconds, in the order of `fmsim run`'s breakdown.
  std::vector<std::pair<std::string, double>> terms() const;
};

/// Times steps of scenarios on one cluster (one instance type and node count). Layer timings are cached
/// by everything they depend on, so that thousands of layouts cost little more than their distinct layers.
class AnalyticModel {
 public:
  explicit AnalyticModel(const topology::ClusterSpec& cluster);
  /// `s` must have passed workload::validate (its pipeline stages exist). Its cluster must be this one.
  AnalyticStep step(const workload::Scenario& s);

 private:
  struct LayerTime {
    double forward_s = 0, backward_s = 0;
    double by_category_s[7] = {};  ///< exposed seconds per workload::Category on the layer's forward + backward path
  };
  const LayerTime& layer_time(const workload::Scenario& s, int layer);
  double collective_s(const std::vector<int>& gpus, int op, double bytes);
  double p2p_s(int src_gpu, int dst_gpu, double bytes) const;

  topology::ClusterGraph cluster_;
  std::map<std::string, LayerTime> layers_;
  std::vector<int> layer_class_;  ///< decoder layer -> class of layers with equal timings (same search: same model and precision)
  std::map<std::tuple<std::vector<int>, int, double>, double> collectives_;
};

}  // namespace fmsim::search
