// Goodput under failures against closed forms (no simulation engine involved).
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "fmsim/common/error.hpp"
#include "fmsim/storage/goodput.hpp"

using namespace fmsim::storage;

namespace {

/// Daly (2006), exact expected wall time of one segment of `segment_s` work that restarts after each
/// failure, with recovery `recovery_s` that itself restarts when a failure hits it.
double daly_segment_s(double segment_s, double recovery_s, double rate) {
  return std::exp(rate * recovery_s) * (std::exp(rate * segment_s) - 1.0) / rate;
}

}  // namespace

TEST_CASE("without failures the wall time is the work plus one stall per checkpoint", "[storage]") {
  GoodputInputs in;
  in.work_s = 1000.0;
  in.interval_s = 300.0;
  in.stall_s = 7.0;
  in.durable_s = 20.0;
  in.failures_per_s = 0.0;
  in.trials = 3;
  const auto r = simulate_goodput(in);
  // Checkpoints after 300, 600 and 900 s of work; none at the end.
  CHECK(r.wall_s == Approx(1000.0 + 3 * 7.0));
  CHECK(r.goodput == Approx(1000.0 / 1021.0));
  CHECK(r.interruptions == 0.0);
  CHECK(r.checkpoint_stall_s == Approx(21.0));
}

TEST_CASE("with failures the mean wall time matches Daly's exact expectation", "[storage]") {
  GoodputInputs in;
  in.work_s = 200 * 3600.0;
  in.interval_s = 3600.0;
  in.stall_s = 120.0;
  in.durable_s = 120.0;  // synchronous: durable when the stall ends
  in.restart_s = 600.0;
  in.restore_s = 300.0;
  in.failures_per_s = 1.0 / (10 * 3600.0);
  in.trials = 4000;
  in.seed = 5;
  const auto r = simulate_goodput(in);
  const double segments = in.work_s / in.interval_s;
  const double recovery = in.restart_s + in.restore_s;
  const double expected = (segments - 1) * daly_segment_s(in.interval_s + in.stall_s, recovery, in.failures_per_s) +
                          daly_segment_s(in.interval_s, recovery, in.failures_per_s);
  CHECK(r.wall_s == Approx(expected).epsilon(0.01));
  // Interruptions: the rate times the mean wall time (failures arrive during recovery too).
  CHECK(r.interruptions == Approx(in.failures_per_s * r.wall_s).epsilon(0.02));
}

TEST_CASE("an asynchronous checkpoint protects work only once it is durable", "[storage]") {
  GoodputInputs in;
  in.work_s = 100 * 3600.0;
  in.interval_s = 1800.0;
  in.stall_s = 1.0;
  in.restart_s = 300.0;
  in.restore_s = 60.0;
  in.failures_per_s = 1.0 / (5 * 3600.0);
  in.trials = 500;
  in.durable_s = 1.0;
  const auto quick = simulate_goodput(in);
  in.durable_s = 1500.0;  // a slow upload: a failure soon after a checkpoint falls back to the one before
  const auto slow = simulate_goodput(in);
  CHECK(slow.lost_work_s > quick.lost_work_s);
  CHECK(slow.goodput < quick.goodput);
}

TEST_CASE("Young/Daly interval", "[storage]") {
  CHECK(young_daly_interval_s(100.0, 36000.0) == Approx(std::sqrt(2 * 100.0 * 36000.0) - 100.0));
  CHECK(young_daly_interval_s(0.0, 36000.0) == 0.0);
  CHECK(young_daly_interval_s(1e6, 100.0) == 100.0);  // cost beyond twice the MTBF: checkpoint once per MTBF
}

TEST_CASE("default failure rates reproduce the Llama 3 interruption count", "[storage]") {
  // 419 unexpected interruptions in 54 days on 16,384 GPUs in 2,048 nodes.
  FailureModel model;
  const double per_s = job_failure_rate_per_s(model, 16384, 2048);
  CHECK(per_s * 54 * 24 * 3600 == Approx(419.0));
}

TEST_CASE("the closed-form goodput is the expectation the replay converges to", "[storage]") {
  GoodputInputs in;
  in.work_s = 200 * 3600.0;
  in.interval_s = 3600.0;
  in.stall_s = 120.0;
  in.durable_s = 120.0;
  in.restart_s = 600.0;
  in.restore_s = 300.0;
  in.failures_per_s = 1.0 / (10 * 3600.0);
  const auto closed = expected_goodput(in);
  const double recovery = in.restart_s + in.restore_s;
  CHECK(closed.wall_s == Approx(199 * daly_segment_s(in.interval_s + in.stall_s, recovery, in.failures_per_s) +
                                daly_segment_s(in.interval_s, recovery, in.failures_per_s)));
  // Conservation: wall time is work + stalls + lost work + recovery.
  CHECK(closed.wall_s == Approx(in.work_s + closed.checkpoint_stall_s + closed.lost_work_s + closed.recovery_s));
  CHECK(closed.interruptions == Approx(in.failures_per_s * closed.wall_s));
  in.trials = 4000;
  in.seed = 9;
  const auto replay = simulate_goodput(in);
  CHECK(std::string(replay.method) == "monte_carlo");
  CHECK(replay.wall_s == Approx(closed.wall_s).epsilon(0.01));
  CHECK(replay.lost_work_s == Approx(closed.lost_work_s).epsilon(0.05));
  CHECK(replay.recovery_s == Approx(closed.recovery_s).epsilon(0.05));
}

TEST_CASE("a run with millions of failures per checkpoint interval is answered, not replayed", "[storage]") {
  // The case: checkpoints 100,000 steps apart on 16,384 GPUs (job MTBF ~2.6 h): a replay would
  // draw e^(interval/MTBF) failures and never finish.
  GoodputInputs in;
  in.work_s = 30 * 24 * 3600.0;
  in.interval_s = 40 * 3600.0;
  in.stall_s = 30.0;
  in.durable_s = 60.0;
  in.restart_s = 510.0;
  in.restore_s = 60.0;
  in.failures_per_s = 1.0 / (2.6 * 3600.0);
  const auto r = simulate_goodput(in);
  CHECK(std::string(r.method) == "closed_form");
  CHECK(r.interruptions * in.trials > kMaxReplayFailures);
  CHECK(r.goodput > 0.0);
  CHECK(r.goodput < 1e-3);
  // More frequent checkpoints can only help here.
  GoodputInputs frequent = in;
  frequent.interval_s = 3600.0;
  CHECK(simulate_goodput(frequent).goodput > r.goodput);
}

TEST_CASE("a run that would never end is refused with the reason", "[storage]") {
  GoodputInputs in;
  in.work_s = 30 * 24 * 3600.0;
  in.interval_s = 3600.0;
  in.stall_s = 30.0;
  in.durable_s = 30.0;
  in.restart_s = 1000 * 3600.0;  // failures.relaunch = 1000h
  in.restore_s = 60.0;
  in.failures_per_s = 1.0 / 3600.0;
  CHECK_THROWS_AS(simulate_goodput(in), fmsim::InputError);
  in.restart_s = 600.0;
  in.failures_per_s = 0.01 * 16384 / 3600.0;  // gpu_failures_per_gpu_hour = 0.01 on 16,384 GPUs
  CHECK_THROWS_AS(simulate_goodput(in), fmsim::InputError);
}

TEST_CASE("in-process recovery skips the relaunch; goodput rises as recovery shortens", "[storage]") {
  fmsim::storage::FailureModel m;
  CHECK(fmsim::storage::recovery_restart_s(m) == Approx(300 + 180 + 30));
  m.recovery = fmsim::storage::Recovery::in_process;
  CHECK(fmsim::storage::recovery_restart_s(m) == Approx(30 + 45 + 30));
  CHECK(fmsim::storage::recovery_restart_s(m) < 120);  // HyperPod: "under 2 minutes"
  GoodputInputs in;
  in.work_s = 30 * 86400.0;
  in.interval_s = 1800;
  in.stall_s = 1;
  in.durable_s = 10;
  in.restore_s = 5;
  in.failures_per_s = 1 / (3 * 3600.0);
  in.restart_s = 510;
  const auto restart = expected_goodput(in);
  in.restart_s = 105;
  const auto in_process = expected_goodput(in);
  CHECK(in_process.goodput > restart.goodput);
  // The lost work and stalls do not depend on the recovery time; only the recovery does, in proportion.
  CHECK(in_process.lost_work_s == Approx(restart.lost_work_s));
  CHECK(in_process.recovery_s / restart.recovery_s == Approx(std::expm1(in.failures_per_s * 110) / std::expm1(in.failures_per_s * 515)));
}
