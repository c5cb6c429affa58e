// Kueue admission in the shared-cluster simulation (cluster_simulation.hpp, kueue.hpp): quotas per
// ClusterQueue with cohort borrowing, and preemption.
#include "cluster_simulation.hpp"

#include "fmsim/common/error.hpp"

namespace fmsim::cluster::detail {

void Simulation::setup_kueue() {
  const KueueConfig& k = *options_.kueue;
  quotas_.emplace(k);
  result_.borrowed_gpu_s.assign(k.cluster_queues.size(), 0.0);
  result_.peak_gpus.assign(k.cluster_queues.size(), 0.0);
  result_.preempted_by.assign(k.cluster_queues.size(), 0);
  cq_of_.resize(jobs_.size());
  for (std::size_t j = 0; j < jobs_.size(); ++j) {
    auto it = k.queue_index.find(jobs_[j].queue);
    if (it == k.queue_index.end()) {
      throw InputError("job " + jobs_[j].id + ": queue '" + jobs_[j].queue + "' is not a LocalQueue or ClusterQueue of " + k.file);
    }
    cq_of_[j] = it->second;
    const double gpus = jobs_[j].nodes * static_cast<double>(shape_.gpus_per_node);
    if (gpus > quotas_->admissible_gpus(it->second)) {
      throw InputError("job " + jobs_[j].id + " (" + std::to_string(static_cast<long long>(gpus)) + " GPUs): ClusterQueue " +
                       k.cluster_queues[it->second].name + " can never admit it (nominal quota " +
                       std::to_string(static_cast<long long>(k.cluster_queues[it->second].nominal_gpus)) +
                       " GPUs plus what its cohort can lend): a quota that admits nothing for this job");
    }
  }
}

void Simulation::take_quota_part(int j, double now, double gpus) {
  if (quotas_) quotas_->take(cq_of_[j], gpus, now);
}

void Simulation::release_quota_part(int j, double now, double gpus) {
  if (quotas_) quotas_->release(cq_of_[j], gpus, now);
}

bool Simulation::try_preempt(int j, double now) {
  const auto& cqs = options_.kueue->cluster_queues;
  const int q = cq_of_[j];
  const double gpus = job_gpus(j);
  std::vector<int> candidates;
  for (int k : running_) {
    const int kq = cq_of_[k];
    const bool lower = jobs_[k].priority < jobs_[j].priority;
    if (kq == q) {
      if (cqs[q].within == PreemptWithin::lower_priority && lower) candidates.push_back(k);
    } else if (!cqs[q].cohort.empty() && cqs[kq].cohort == cqs[q].cohort && quotas_->usage()[kq] > cqs[kq].nominal_gpus + 1e-9 &&
               quotas_->usage()[q] + gpus <= cqs[q].nominal_gpus + 1e-9 &&
               (cqs[q].reclaim == Reclaim::any || (cqs[q].reclaim == Reclaim::lower_priority && lower))) {
      candidates.push_back(k);
    }
  }
  if (candidates.empty()) return false;
  std::sort(candidates.begin(), candidates.end(), [&](int a, int b) {
    if (jobs_[a].priority != jobs_[b].priority) return jobs_[a].priority < jobs_[b].priority;
    return state_[a].progress.start_s() > state_[b].progress.start_s();
  });
  // Simulate the releases on copies, then preempt the prefix that makes room.
  std::vector<double> usage = quotas_->usage();
  int free_nodes = free_;
  std::size_t taken = 0;
  auto room = [&] { return quotas_->allows(q, gpus, usage) && free_nodes >= jobs_[j].nodes; };
  while (!room() && taken < candidates.size()) {
    const int k = candidates[taken++];
    usage[cq_of_[k]] -= state_[k].nodes.size() * static_cast<double>(shape_.gpus_per_node);  // what it holds (elastic: maybe fewer)
    free_nodes += static_cast<int>(state_[k].nodes.size());
  }
  if (!room()) return false;
  for (std::size_t i = 0; i < taken; ++i) {
    ++result_.jobs[candidates[i]].preemptions;
    ++result_.preemptions;
    ++result_.preempted_by[q];
    interrupt(candidates[i], now);
  }
  return true;
}

void Simulation::schedule_kueue(double now) {
  std::vector<int> order(queue_.begin(), queue_.end());  // arrival order
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return jobs_[a].priority > jobs_[b].priority; });
  for (int j : order) {
    if (!queue_.count(j)) continue;  // preempted and requeued during this pass: waits for the next
    const bool fits = quotas_->allows(cq_of_[j], job_gpus(j)) && can_place(j);
    // A job that requires one group does not preempt: the nodes preemption frees may sit anywhere.
    if (fits || (jobs_[j].topology != TopologyRequest::required && try_preempt(j, now))) start(j, now);
  }
}

}  // namespace fmsim::cluster::detail
