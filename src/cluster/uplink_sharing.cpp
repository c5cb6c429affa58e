// Expected uplink share beside other jobs' random-phase traffic (uplink_sharing.hpp).
#include "fmsim/cluster/uplink_sharing.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::cluster {

double uplink_stretch(double own_rails, const std::vector<LeafTenant>& others, double uplink_rails) {
  if (!(own_rails > 0) || !(uplink_rails > 0)) return 1.0;
  double most = own_rails;  // every tenant on at once: if even that fits, nothing binds
  for (const auto& t : others) most += t.duty > 0 ? std::max(t.demand_rails, 0.0) : 0.0;
  if (most <= uplink_rails) return 1.0;
  constexpr double kGrid = 16.0;  // demand bins per rail
  // Distribution of the other tenants' demand: each tenant independently on with its duty.
  std::vector<double> p{1.0};
  for (const auto& t : others) {
    const auto bins = static_cast<std::size_t>(std::lround(std::max(t.demand_rails, 0.0) * kGrid));
    if (bins == 0) continue;
    const double duty = std::clamp(t.duty, 0.0, 1.0);
    std::vector<double> next(p.size() + bins, 0.0);
    for (std::size_t a = 0; a < p.size(); ++a) {
      next[a] += p[a] * (1.0 - duty);
      next[a + bins] += p[a] * duty;
    }
    p = std::move(next);
  }
  double expected = 0;
  for (std::size_t a = 0; a < p.size(); ++a) expected += p[a] * std::max(1.0, (own_rails + static_cast<double>(a) / kGrid) / uplink_rails);
  return expected / std::max(1.0, own_rails / uplink_rails);
}

double rail_share(double cross_share, double stretch) {
  cross_share = std::clamp(cross_share, 0.0, 1.0);
  return 1.0 / (cross_share * std::max(stretch, 1.0) + 1.0 - cross_share);
}

}  // namespace fmsim::cluster
