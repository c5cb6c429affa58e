#pragma once
// The progress of one run of a job in `fmsim cluster` (cluster_sim.cpp): it starts, pays its restart or
// rescale overhead, then works at a rate that may change while it runs (its share of the nodes it asked
// for, a straggler among its nodes, its neighbours' traffic on shared links); each change closes a segment.
// The segments say how much work is done by any time and how the time of the first W units of work splits
// into the work itself and what stragglers and contention added, so that run time stays conserved.
#include <vector>

namespace fmsim::cluster::detail {

class RunProgress {
 public:
  struct Split {
    double time_s = 0;        ///< the time the work took
    double base_s = 0;        ///< work / share: what it takes on its nodes without stragglers or contention
    double straggler_s = 0;   ///< added by a straggler among its nodes
    double contention_s = 0;  ///< added by other jobs' traffic on links it shares
  };

  /// A run from `start_s`, working after `overhead_s`, at share x speed x contention.
  void begin(double start_s, double overhead_s, double share, double speed, double contention);
  /// From `now` on it works at share x speed x contention (closes the open segment).
  void set_rate(double now, double share, double speed, double contention);

  double start_s() const { return start_s_; }
  double overhead_s() const { return overhead_s_; }
  double share() const { return open().share; }
  double speed() const { return open().speed; }
  double contention() const { return open().contention; }
  double rate() const { return open().rate(); }

  /// Work done by time `t` (nothing during the overhead).
  double work_done(double t) const;
  /// When the run will have done `work` at the rates so far and the current one from now on.
  double time_for(double work) const;
  /// How the first `work` units of the run's work (done by `t`) took their time.
  Split split(double work, double t) const;

 private:
  struct Segment {
    double from_s = 0;
    double share = 1, speed = 1, contention = 1;
    double rate() const { return share * speed * contention; }
  };
  const Segment& open() const { return segments_.back(); }
  double start_s_ = 0, overhead_s_ = 0;
  std::vector<Segment> segments_{Segment{}};
};

}  // namespace fmsim::cluster::detail
