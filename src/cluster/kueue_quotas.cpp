// Kueue quota bookkeeping (kueue_quotas.hpp).
#include "kueue_quotas.hpp"

#include <algorithm>

namespace fmsim::cluster::detail {

KueueQuotas::KueueQuotas(const KueueConfig& config)
    : config_(config),
      usage_(config.cluster_queues.size(), 0.0),
      borrowed_gpu_s_(config.cluster_queues.size(), 0.0),
      peak_gpus_(config.cluster_queues.size(), 0.0) {}

double KueueQuotas::admissible_gpus(int q) const {
  const auto& cqs = config_.cluster_queues;
  double lendable = 0;
  if (!cqs[q].cohort.empty()) {
    for (std::size_t o = 0; o < cqs.size(); ++o) {
      if (static_cast<int>(o) != q && cqs[o].cohort == cqs[q].cohort) lendable += cqs[o].nominal_gpus;
    }
  }
  if (cqs[q].borrowing_limit_gpus >= 0) lendable = std::min(lendable, cqs[q].borrowing_limit_gpus);
  return cqs[q].nominal_gpus + lendable;
}

bool KueueQuotas::allows(int q, double gpus, const std::vector<double>& usage) const {
  const auto& cqs = config_.cluster_queues;
  if (usage[q] + gpus <= cqs[q].nominal_gpus + 1e-9) return true;
  if (cqs[q].cohort.empty()) return false;
  if (cqs[q].borrowing_limit_gpus >= 0 && usage[q] + gpus - cqs[q].nominal_gpus > cqs[q].borrowing_limit_gpus + 1e-9) return false;
  double cohort_nominal = 0, cohort_usage = 0;
  for (std::size_t o = 0; o < cqs.size(); ++o) {
    if (cqs[o].cohort == cqs[q].cohort) {
      cohort_nominal += cqs[o].nominal_gpus;
      cohort_usage += usage[o];
    }
  }
  return cohort_usage + gpus <= cohort_nominal + 1e-9;
}

void KueueQuotas::take(int q, double gpus, double now) {
  account(now);
  usage_[q] += gpus;
  peak_gpus_[q] = std::max(peak_gpus_[q], usage_[q]);
}

void KueueQuotas::release(int q, double gpus, double now) {
  account(now);
  usage_[q] -= gpus;
}

void KueueQuotas::account(double now) {
  const auto& cqs = config_.cluster_queues;
  for (std::size_t q = 0; q < cqs.size(); ++q) borrowed_gpu_s_[q] += std::max(0.0, usage_[q] - cqs[q].nominal_gpus) * (now - accounted_to_s_);
  accounted_to_s_ = now;
}

}  // namespace fmsim::cluster::detail
