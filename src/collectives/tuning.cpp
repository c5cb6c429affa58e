#include "fmsim/collectives/tuning.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::collectives::tuning {
namespace {

constexpr double kUs = 1e-6;

int protocol_index(Protocol protocol) {
  switch (protocol) {
    case Protocol::ll: return 0;
    case Protocol::ll128: return 1;
    case Protocol::simple: return 2;
  }
  return 2;
}

bool tree_like(Algorithm algorithm) { return algorithm == Algorithm::tree; }

}  // namespace

double ll_max_busbw_Bps(int sm_version, bool amd_host, int islands) {
  if (islands <= 1) return (sm_version >= 100 ? 282.0 : sm_version >= 90 ? 141.0 : 87.7) * 1e9;
  if (islands == 2) return (amd_host ? 22.5 : 39.0) * 1e9;
  return (amd_host ? 19.0 : 20.4) * 1e9;
}

int nvls_channels(int sm_version, bool multi_domain) {
  if (sm_version < 100) return 16;
  return multi_domain ? 32 : 24;
}

double base_latency_s(Algorithm algorithm, Protocol protocol) {
  static const double ring[] = {6.6, 14.0, 8.4};
  static const double tree[] = {6.8, 14.0, 8.4};
  switch (algorithm) {
    case Algorithm::ring: case Algorithm::hierarchical: case Algorithm::pairwise:
      return ring[protocol_index(protocol)] * kUs;
    case Algorithm::tree: return tree[protocol_index(protocol)] * kUs;
    case Algorithm::nvls: case Algorithm::nvls_tree: return 0.0;
  }
  return 0.0;
}

double nvlink_step_latency_s(Algorithm algorithm, Protocol protocol) {
  static const double ring[] = {0.6, 1.9, 3.4};
  static const double tree[] = {0.6, 1.25, 4.0};
  if (algorithm == Algorithm::nvls || algorithm == Algorithm::nvls_tree) return 25.0 * kUs;
  return (tree_like(algorithm) ? tree : ring)[protocol_index(protocol)] * kUs;
}

double network_step_latency_s(Algorithm algorithm, Protocol protocol, double message_latency_s) {
  static const double ring[] = {2.7, 4.0, 14.0};
  static const double tree[] = {5.0, 8.5, 14.0};
  double hardware = 0.0;
  switch (algorithm) {
    case Algorithm::nvls: hardware = 18.0; break;
    case Algorithm::nvls_tree: hardware = 20.9; break;
    case Algorithm::tree: hardware = tree[protocol_index(protocol)]; break;
    default: hardware = ring[protocol_index(protocol)]; break;
  }
  double software = message_latency_s * (protocol == Protocol::simple ? 2.0 : 1.0);
  return hardware * kUs + software;
}

double ring_net_overhead_s(bool amd_host, Protocol protocol) {
  return (amd_host ? 2.0 : 1.0) * (protocol == Protocol::simple ? 3.0 : 1.0) * kUs;
}

double rail_use(const CommLayout& layout, double message_bytes, int channels) {
  const int nics = layout.nics_per_gpu;
  if (!layout.striped_rails || nics <= 1) return 1.0;
  int stripes = static_cast<int>(std::clamp(std::ceil(message_bytes / kMinStripeBytes), 1.0, static_cast<double>(nics)));
  while (stripes > 1 && nics % stripes != 0) --stripes;
  const double channels_per_gpu = std::max(1.0, static_cast<double>(channels) / std::max(1, layout.ranks_per_island));
  return std::min(1.0, channels_per_gpu * stripes / nics);
}

}  // namespace fmsim::collectives::tuning
