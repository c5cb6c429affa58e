// Failure injection and goodput (see goodput.hpp).
#include "fmsim/storage/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include <spdlog/fmt/fmt.h>

#include "fmsim/common/error.hpp"
#include "fmsim/config/object_reader.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::storage {

FailureModel read_failure_model(const workload::Scenario& s) {
  FailureModel m;
  if (!s.resolved.contains("failures")) return m;
  config::ObjectReader r(s.resolved.at("failures"), s.file, "/failures");
  auto rate = [&r](const std::string& key, double fallback) {
    if (!r.has(key)) return fallback;
    const auto& value = r.required_value(key);
    if (!value.is_number() || value.get<double>() < 0) r.fail(key, "a number of failures per hour >= 0");
    return value.get<double>();
  };
  m.gpu_failures_per_gpu_hour = rate("gpu_failures_per_gpu_hour", m.gpu_failures_per_gpu_hour);
  m.node_failures_per_node_hour = rate("node_failures_per_node_hour", m.node_failures_per_node_hour);
  m.detection_s = r.quantity_or("detection", units::Dimension::time, m.detection_s);
  m.relaunch_s = r.quantity_or("relaunch", units::Dimension::time, m.relaunch_s);
  m.nccl_init_s = r.quantity_or("nccl_init", units::Dimension::time, m.nccl_init_s);
  if (r.has("recovery")) {
    const std::string recovery = r.choice_or("recovery", {"restart", "in_process"}, "restart");
    m.recovery = recovery == "in_process" ? Recovery::in_process : Recovery::restart;
  }
  m.in_process_detection_s = r.quantity_or("in_process_detection", units::Dimension::time, m.in_process_detection_s);
  m.in_process_restart_s = r.quantity_or("in_process_restart", units::Dimension::time, m.in_process_restart_s);
  m.seed = static_cast<std::uint64_t>(r.int_or("seed", 1, 0, std::numeric_limits<std::int64_t>::max()));
  // Each trial replays the whole run; 100,000 already gives the mean to ~0.3 % of its spread.
  m.trials = static_cast<int>(r.int_or("trials", m.trials, 1, 100000));
  r.reject_unknown_keys();
  return m;
}

std::string to_string(Recovery recovery) { return recovery == Recovery::in_process ? "in_process" : "restart"; }

double recovery_restart_s(const FailureModel& m) {
  return m.recovery == Recovery::in_process ? m.in_process_detection_s + m.in_process_restart_s + m.nccl_init_s
                                            : m.detection_s + m.relaunch_s + m.nccl_init_s;
}

double job_failure_rate_per_s(const FailureModel& m, int gpus, int nodes) {
  return (gpus * m.gpu_failures_per_gpu_hour + nodes * m.node_failures_per_node_hour) / 3600.0;
}

double young_daly_interval_s(double delta_s, double mtbf_s) {
  if (delta_s <= 0) return 0;
  if (delta_s >= 2 * mtbf_s) return mtbf_s;
  return std::sqrt(2 * delta_s * mtbf_s) - delta_s;
}

namespace {

/// One run: from each restart, compute proceeds in segments of interval + stall; checkpoint k of an
/// epoch starts after k intervals of compute and becomes the recovery point durable_s later.
struct Trial {
  double wall = 0, failures = 0, lost = 0, stalls = 0, recovery = 0;
};

Trial run_trial(const GoodputInputs& in, std::mt19937_64& rng) {
  std::exponential_distribution<double> next_failure(in.failures_per_s > 0 ? in.failures_per_s : 1.0);
  auto draw = [&] { return in.failures_per_s > 0 ? next_failure(rng) : INFINITY; };
  const double interval = in.interval_s > 0 ? in.interval_s : in.work_s;
  const double segment = interval + in.stall_s;
  Trial t;
  double progress = 0;  // durable compute
  double failure_in = draw();
  while (true) {
    const double remaining = in.work_s - progress;
    // Checkpoints started before the run ends (none at the very end).
    const double checkpoints = std::max(0.0, std::ceil(remaining / interval - 1e-12) - 1.0);
    const double finish = remaining + checkpoints * in.stall_s;
    if (failure_in >= finish) {
      t.wall += finish;
      t.stalls += checkpoints * in.stall_s;
      return t;
    }
    // A failure after failure_in seconds of this epoch: the last durable checkpoint is the recovery point.
    const double tau = failure_in;
    double durable = std::floor((tau - in.durable_s + in.stall_s) / segment);
    durable = std::clamp(durable, 0.0, checkpoints);
    const double started = std::min(checkpoints, std::floor(tau / segment));
    double stall_time = started * in.stall_s;
    if (started < checkpoints) stall_time += std::clamp(tau - started * segment - interval, 0.0, in.stall_s);
    t.wall += tau;
    t.stalls += stall_time;
    t.lost += (tau - stall_time) - durable * interval;
    progress += durable * interval;
    t.failures += 1;
    // Recovery; a failure during it starts it over.
    const double recover = in.restart_s + in.restore_s;
    while (true) {
      failure_in = draw();
      if (failure_in >= recover) {
        t.wall += recover;
        t.recovery += recover;
        failure_in -= recover;
        break;
      }
      t.wall += failure_in;
      t.recovery += failure_in;
      t.failures += 1;
    }
  }
}

}  // namespace

GoodputResult expected_goodput(const GoodputInputs& in) {
  if (in.work_s <= 0) throw InternalError("goodput: no work");
  const double interval = in.interval_s > 0 ? std::min(in.interval_s, in.work_s) : in.work_s;
  // As the replay: checkpoints after every interval of work, none at the very end.
  const double segments = std::ceil(in.work_s / interval - 1e-12);
  const double checkpoints = segments - 1;
  const double last_s = in.work_s - checkpoints * interval;
  const double recover_s = in.restart_s + in.restore_s;
  const double rate = in.failures_per_s;
  GoodputResult r;
  r.method = "closed_form";
  r.checkpoint_stall_s = checkpoints * in.stall_s;
  if (rate <= 0) {
    r.wall_s = in.work_s + r.checkpoint_stall_s;
  } else {
    // Failed attempts before a segment of `attempt_s` seconds runs through; expm1 keeps precision where
    // rate x attempt is small, and overflow gives inf (refused by the caller).
    const double full = std::expm1(rate * (interval + in.stall_s));
    const double last = std::expm1(rate * last_s);
    const double failed_attempts = checkpoints * full + last;
    r.lost_work_s = failed_attempts / rate - (in.work_s + r.checkpoint_stall_s);
    r.recovery_s = failed_attempts * std::expm1(rate * recover_s) / rate;
    r.interruptions = failed_attempts * std::exp(rate * recover_s);
    r.wall_s = in.work_s + r.checkpoint_stall_s + r.lost_work_s + r.recovery_s;
  }
  r.goodput = in.work_s / r.wall_s;
  return r;
}

GoodputResult simulate_goodput(const GoodputInputs& in) {
  if (in.work_s <= 0) throw InternalError("goodput: no work");
  if (in.durable_s < in.stall_s) throw InternalError("goodput: a checkpoint becomes durable before its stall ends");
  const GoodputResult expected = expected_goodput(in);
  if (!std::isfinite(expected.wall_s) || expected.wall_s > kMaxTimeToTrain_s) {
    throw InputError(fmt::format(
        "the run never ends: at {:.3g} failures per hour, with {} of work between checkpoints and {} to recover "
        "from each failure, the expected time to train exceeds a million years; checkpoint more often (leave "
        "checkpoint.interval_steps out for the Young/Daly interval), or lower failures.relaunch or the failure rates",
        in.failures_per_s * 3600, units::format_time(in.interval_s), units::format_time(in.restart_s + in.restore_s)));
  }
  if (expected.interruptions * in.trials > kMaxReplayFailures) return expected;
  std::mt19937_64 rng(in.seed);
  GoodputResult r;
  for (int trial = 0; trial < in.trials; ++trial) {
    const Trial t = run_trial(in, rng);
    r.wall_s += t.wall;
    r.interruptions += t.failures;
    r.lost_work_s += t.lost;
    r.checkpoint_stall_s += t.stalls;
    r.recovery_s += t.recovery;
  }
  const double n = in.trials;
  r.wall_s /= n;
  r.interruptions /= n;
  r.lost_work_s /= n;
  r.checkpoint_stall_s /= n;
  r.recovery_s /= n;
  r.goodput = in.work_s / r.wall_s;
  return r;
}

}  // namespace fmsim::storage
