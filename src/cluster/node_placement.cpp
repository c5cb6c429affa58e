// Placement of a job's nodes (node_placement.hpp).
#include "node_placement.hpp"

#include <algorithm>
#include <numeric>

namespace fmsim::cluster::detail {

std::vector<int> place_nodes(int count, Placement placement, const std::vector<std::vector<int>>& members,
                             const std::vector<int>& group_free, const std::function<bool(int)>& is_free) {
  const int groups = static_cast<int>(members.size());
  std::vector<int> chosen;
  chosen.reserve(count);
  auto take_from = [&](int g, int want) {
    for (int n : members[g]) {
      if (want <= 0) break;
      if (is_free(n)) {
        chosen.push_back(n);
        --want;
      }
    }
  };
  std::vector<int> order(groups);
  std::iota(order.begin(), order.end(), 0);
  if (placement == Placement::topology) {
    // Best fit into one group; otherwise the emptiest groups first (the fewest switches or domains).
    int best = -1;
    for (int g : order) {
      if (group_free[g] >= count && (best < 0 || group_free[g] < group_free[best])) best = g;
    }
    if (best >= 0) {
      take_from(best, count);
      return chosen;
    }
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return group_free[a] > group_free[b]; });
    for (int g : order) {
      const int want = count - static_cast<int>(chosen.size());
      if (want <= 0) break;
      take_from(g, std::min(want, group_free[g]));
    }
    return chosen;
  }
  // Least-allocated scoring: each pod goes to a node of the emptiest group, so a gang spreads.
  std::vector<int> left = group_free;
  std::vector<int> per_group(groups, 0);
  for (int k = 0; k < count; ++k) {
    int best = 0;
    for (int g = 1; g < groups; ++g) {
      if (left[g] > left[best]) best = g;
    }
    --left[best];
    ++per_group[best];
  }
  for (int g = 0; g < groups; ++g) {
    if (per_group[g] > 0) take_from(g, per_group[g]);
  }
  return chosen;
}

}  // namespace fmsim::cluster::detail
