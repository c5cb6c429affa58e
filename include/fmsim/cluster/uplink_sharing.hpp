#pragma once
// The fast model of jobs sharing leaf uplinks (`fmsim cluster --contention-model fast`): instead of
// replaying the jobs together on the engine, each job's own step is replayed with its cross-leaf traffic
// at the uplink share the others leave it. A leaf switch's uplink on one rail carries the traffic of its
// nodes' GPUs on that rail to the spine, at (nodes under the leaf / oversubscription) rails' worth; the
// GPUs sending on it share it max-min fairly, and none exceeds its own rail. The other jobs' cross-leaf
// transfers are on, independently, for the share of their step their duty says (random phases: jobs that
// started at different times drift against each other), so a job's expected time per cross-leaf byte is
// an expectation over how many other GPUs send beside it.
#include <vector>

namespace fmsim::cluster {

/// Another job's demand on a leaf switch's uplink while its cross-leaf transfers are in flight, in rails
/// (its nodes under the leaf x the share of its rail bytes that crosses: a ring sends across only on the
/// hops that leave the leaf), and the share of its step those transfers are in flight (in [0, 1]).
struct LeafTenant {
  double demand_rails = 0;
  double duty = 0;
};

/// Expected time per cross-leaf byte of a job whose demand on a leaf's uplink is `own_rails` (as above),
/// the uplink carrying `uplink_rails` rails' worth per rail, beside `others`, relative to the job alone:
///   E[max(1, (own + A) / uplink_rails)] / max(1, own / uplink_rails),
/// A the others' demand (each tenant's with probability its duty, independently; summed on a grid of
/// 1/16 rail). >= 1; 1 when the uplink never binds.
double uplink_stretch(double own_rails, const std::vector<LeafTenant>& others, double uplink_rails);

/// A job's rail bandwidth relative to alone when `cross_share` of its network transfer time crosses leaves
/// and that part takes `stretch` times as long: 1 / (cross_share x stretch + 1 - cross_share).
double rail_share(double cross_share, double stretch);

}  // namespace fmsim::cluster
