#pragma once
// Kueue's quota bookkeeping for `fmsim cluster --kueue` (cluster_sim.cpp, kueue.hpp): the GPUs each
// ClusterQueue holds, whether it may take more (its nominal quota, or the unused quota of its cohort up to
// its borrowing limit), and per queue the GPU-seconds held beyond the nominal quota and the peak held.
#include <vector>

#include "fmsim/cluster/kueue.hpp"

namespace fmsim::cluster::detail {

class KueueQuotas {
 public:
  explicit KueueQuotas(const KueueConfig& config);

  /// The most GPUs ClusterQueue q could ever hold: its nominal quota plus what its cohort can lend.
  double admissible_gpus(int q) const;
  /// Whether ClusterQueue q may take `gpus` more with the queues holding `usage` (the current holdings by
  /// default: a preemption plan asks with the holdings it would leave).
  bool allows(int q, double gpus) const { return allows(q, gpus, usage_); }
  bool allows(int q, double gpus, const std::vector<double>& usage) const;
  void take(int q, double gpus, double now);
  void release(int q, double gpus, double now);
  /// Adds the GPU-seconds each queue held beyond its nominal quota since the last call.
  void account(double now);

  const KueueConfig& config() const { return config_; }
  const std::vector<double>& usage() const { return usage_; }
  const std::vector<double>& borrowed_gpu_s() const { return borrowed_gpu_s_; }
  const std::vector<double>& peak_gpus() const { return peak_gpus_; }

 private:
  const KueueConfig& config_;
  std::vector<double> usage_, borrowed_gpu_s_, peak_gpus_;
  double accounted_to_s_ = 0;
};

}  // namespace fmsim::cluster::detail
