#pragma once
// Where a token's experts live under balanced routing: the probability that an NVLink domain holds at
// least one of its top-k experts, with DeepSeek-style group-limited routing, and from it the share of
// an expert all-to-all that a domain-aware dispatcher sends (DeepEP and HybridEP send a token once to
// each other domain holding one of its experts and fan it out there over NVLink). Used by training's
// flex dispatcher (moe_ops.cpp) and serving's expert parallelism across nodes (replica_model.cpp).
#include "fmsim/workload/model.hpp"

namespace fmsim::workload {

/// Probability that none of k experts drawn uniformly from `pool` experts falls among `held` of them.
double all_missed(double pool, double held, int k);

/// Probability that a token has at least one of its k experts in a given one of `domains` domains,
/// each holding E / domains experts. Without group-limited routing: 1 - C(E - E/g, k) / C(E, k). With it
/// (n groups, top T): where whole groups sit in a domain (n a multiple of g), hypergeometric over the j
/// chosen groups the domain holds; where whole domains sit in a group, the group's chance T / n times
/// the ungrouped hit within the chosen experts; other layouts fall back to ungrouped routing.
double domain_hit_probability(const MoeShape& moe, double domains);

/// Bytes a domain-aware dispatcher sends per byte of a one-copy-per-expert all-to-all over `domains`
/// domains: g P(hit) / k, at most 1; 1 within one domain.
double domain_send_share(const MoeShape& moe, int domains);

/// Expected maximum of `count` independent standard normal variables (by numerical integration of
/// x count phi(x) Phi(x)^(count - 1)); 0 for count <= 1. 2: 0.564 (1/sqrt(pi)), 8: 1.424, 64: 2.344, 72: 2.388.
double expected_max_standard_normal(int count);

/// Expected load of the busiest of `ranks` expert-parallel ranks over the mean, when routing is uniform
/// at random (Megatron's forced balance draws random router scores; a well-balanced router is no
/// better): a rank receives a binomial share of the group's routed rows, mean `mean_rows`, relative
/// deviation sqrt((1 - 1/R) / mean_rows), and every rank waits for the busiest at the combine. 1 for one
/// rank or no rows.
double random_routing_imbalance(int ranks, double mean_rows);

}  // namespace fmsim::workload
