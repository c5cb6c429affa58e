// Token placement over NVLink domains under balanced routing (moe_routing.hpp, docs/model.md "MoE").
#include "fmsim/workload/moe_routing.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <mutex>

namespace fmsim::workload {
namespace {

double binomial(int n, int r) {
  if (r < 0 || r > n) return 0.0;
  double c = 1.0;
  for (int i = 1; i <= r; ++i) c = c * (n - r + i) / i;
  return c;
}

}  // namespace

double all_missed(double pool, double held, int k) {
  double missed = 1.0;
  for (int i = 0; i < k; ++i) missed *= std::max(0.0, pool - held - i) / (pool - i);
  return missed;
}

double domain_hit_probability(const MoeShape& moe, double g) {
  const double e = moe.experts, n = moe.router_groups, t = moe.router_group_topk;
  const int k = moe.experts_per_token, groups = moe.router_groups, domains = static_cast<int>(g);
  const double chosen = t * e / n;  // experts a token chooses from
  if (groups > 1 && moe.router_group_topk < groups) {
    if (groups % domains == 0) {
      const int per_domain = groups / domains;
      double hit = 0.0;  // sum over j chosen groups in this domain
      for (int j = 1; j <= std::min(per_domain, moe.router_group_topk); ++j) {
        const double p_j = binomial(per_domain, j) * binomial(groups - per_domain, moe.router_group_topk - j) /
                           binomial(groups, moe.router_group_topk);
        hit += p_j * (1.0 - all_missed(chosen, j * e / n, k));
      }
      return hit;
    }
    if (domains % groups == 0) return t / n * (1.0 - all_missed(chosen, e / g, k));
  }
  return 1.0 - all_missed(e, e / g, k);  // ungrouped routing, or a group layout across domains
}

double domain_send_share(const MoeShape& moe, int domains) {
  if (domains < 2 || moe.experts_per_token < 1) return 1.0;
  return std::min(1.0, domains * domain_hit_probability(moe, domains) / moe.experts_per_token);
}

double expected_max_standard_normal(int count) {
  if (count <= 1) return 0.0;
  static std::mutex lock;
  static std::map<int, double> known;
  const std::lock_guard<std::mutex> guard(lock);
  const auto found = known.find(count);
  if (found != known.end()) return found->second;
  // E[max] = integral of x n phi(x) Phi(x)^(n-1) over x, trapezoids on [-8, 10].
  const double step = 1e-3;
  double sum = 0;
  for (double x = -8.0; x <= 10.0; x += step) {
    const double phi = std::exp(-0.5 * x * x) / std::sqrt(2.0 * M_PI);
    const double cdf = 0.5 * std::erfc(-x / std::sqrt(2.0));
    sum += x * count * phi * std::pow(cdf, count - 1) * step;
  }
  known[count] = sum;
  return sum;
}

double random_routing_imbalance(int ranks, double mean_rows) {
  if (ranks <= 1 || mean_rows <= 0) return 1.0;
  const double relative_deviation = std::sqrt((1.0 - 1.0 / ranks) / mean_rows);
  return 1.0 + expected_max_standard_normal(ranks) * relative_deviation;
}

}  // namespace fmsim::workload
