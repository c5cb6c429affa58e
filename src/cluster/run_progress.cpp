// A run's progress at changing rates (run_progress.hpp).
#include "run_progress.hpp"

#include <algorithm>
#include <cmath>

namespace fmsim::cluster::detail {

void RunProgress::begin(double start_s, double overhead_s, double share, double speed, double contention) {
  start_s_ = start_s;
  overhead_s_ = overhead_s;
  segments_.assign(1, Segment{start_s, share, speed, contention});
}

void RunProgress::set_rate(double now, double share, double speed, double contention) {
  segments_.push_back(Segment{now, share, speed, contention});
}

double RunProgress::work_done(double t) const {
  const double working_from = start_s_ + overhead_s_;
  double work = 0;
  for (std::size_t i = 0; i < segments_.size(); ++i) {
    const double a = std::max(segments_[i].from_s, working_from);
    const double b = std::min(i + 1 < segments_.size() ? segments_[i + 1].from_s : t, t);
    if (b > a) work += (b - a) * segments_[i].rate();
  }
  return work;
}

double RunProgress::time_for(double work) const {
  const double working_from = start_s_ + overhead_s_;
  double done = 0;
  for (std::size_t i = 0; i + 1 < segments_.size(); ++i) {
    const double a = std::max(segments_[i].from_s, working_from);
    const double b = segments_[i + 1].from_s;
    if (b > a) done += (b - a) * segments_[i].rate();
  }
  const double a = std::max(open().from_s, working_from);
  return a + std::max(0.0, work - done) / open().rate();
}

RunProgress::Split RunProgress::split(double work, double t) const {
  const double working_from = start_s_ + overhead_s_;
  Split out;
  double left = work;
  for (std::size_t i = 0; i < segments_.size() && left > 0; ++i) {
    const Segment& s = segments_[i];
    const double a = std::max(s.from_s, working_from);
    const double b = std::min(i + 1 < segments_.size() ? segments_[i + 1].from_s : t, t);
    if (b <= a) continue;
    const double piece_work = std::min(left, (b - a) * s.rate());
    const double piece_time = piece_work / s.rate();
    const double unslowed = piece_work / s.share, without_contention = piece_work / (s.share * s.speed);
    out.time_s += piece_time;
    out.base_s += unslowed;
    out.straggler_s += without_contention - unslowed;
    out.contention_s += piece_time - without_contention;
    left -= piece_work;
  }
  return out;
}

}  // namespace fmsim::cluster::detail
