// A strategy over a whole run (see assessment.hpp).
#include "fmsim/storage/assessment.hpp"

#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "fmsim/common/error.hpp"

namespace fmsim::storage {

/// Without a run length in the scenario, goodput is reported over this much failure-free compute.
constexpr double kDefaultRunWork_s = 30 * 24 * 3600.0;

RunLength run_length(const workload::Scenario& s, double step_time_s) {
  RunLength run;
  const double tokens_per_step = static_cast<double>(s.parallelism.global_batch) * s.training.seq;
  if (s.training.train_iters > 0) {
    run.steps = s.training.train_iters;
    run.source = "training.train_iters";
  } else if (s.training.total_tokens > 0) {
    run.steps = static_cast<long long>(std::ceil(s.training.total_tokens / tokens_per_step));
    run.source = "training.total_tokens";
  } else {
    run.steps = std::max(1LL, static_cast<long long>(std::ceil(kDefaultRunWork_s / step_time_s)));
    run.source = "default: 30 days of failure-free compute (set training.total_tokens or training.train_iters)";
  }
  run.tokens = run.steps * tokens_per_step;
  run.work_s = run.steps * step_time_s;
  return run;
}

Assessment assess(const workload::Scenario& s, const CheckpointContents& contents, const CheckpointPlan& plan,
                  const FailureModel& failures, double step_time_s, const RunLength& run) {
  Assessment a;
  a.plan = plan;
  check_strategy(s.cluster, contents, plan, s.file);
  a.io = simulate_checkpoint_io(s.cluster, contents, plan);

  // Failures and cost are the job's: with data_parallel_size it may use part of the cluster.
  const int job_gpus = s.parallelism.world();
  const int job_nodes = (job_gpus + s.cluster.gpus_per_node - 1) / s.cluster.gpus_per_node;
  const double rate = job_failure_rate_per_s(failures, job_gpus, job_nodes);
  const double mtbf_s = rate > 0 ? 1.0 / rate : INFINITY;
  a.young_daly_interval_s = std::isfinite(mtbf_s) ? young_daly_interval_s(a.io.stall_s, mtbf_s) : run.work_s;
  // A checkpoint cannot start before the previous one is durable.
  const double floor_s = std::max(step_time_s, a.io.save.time_s - a.io.stall_s);
  auto to_steps = [&](double seconds) {
    return std::max(1LL, static_cast<long long>(std::ceil(std::max(seconds, floor_s) / step_time_s - 1e-9)));
  };
  a.young_daly_interval_steps = to_steps(a.young_daly_interval_s);
  if (plan.interval_steps > 0) {
    a.interval_steps = plan.interval_steps;
    a.interval_source = "checkpoint.interval_steps";
  } else if (plan.interval_s > 0) {
    a.interval_steps = to_steps(plan.interval_s);
    a.interval_source = "checkpoint.interval";
  } else {
    a.interval_steps = a.young_daly_interval_steps;
    a.interval_source = "Young/Daly";
  }
  if (a.interval_steps * step_time_s < floor_s - 1e-9) {
    spdlog::warn("{}: checkpoints every {} steps ({:.0f} s) come faster than a save completes ({:.0f} s); "
                 "saves are skipped until the previous one is durable",
                 to_string(plan.strategy), a.interval_steps, a.interval_steps * step_time_s, floor_s);
  }

  GoodputInputs in;
  in.work_s = run.work_s;
  in.interval_s = std::max(a.interval_steps * step_time_s, floor_s);
  in.stall_s = a.io.stall_s;
  in.durable_s = std::max(a.io.save.time_s, a.io.stall_s);
  in.restart_s = recovery_restart_s(failures);
  a.recovery = failures.recovery;
  a.restart_s = in.restart_s;
  in.restore_s = a.io.restore.time_s;
  in.failures_per_s = rate;
  in.seed = failures.seed;
  in.trials = failures.trials;
  a.goodput = simulate_goodput(in);
  if (std::string(a.goodput.method) == "closed_form") {
    spdlog::warn("{}: {:.3g} expected failures over the run (checkpoint interval {:.3g} h, job MTBF {:.3g} h): "
                 "goodput is the closed-form expectation instead of a replay",
                 to_string(plan.strategy), a.goodput.interruptions, in.interval_s / 3600, mtbf_s / 3600);
  }
  if (s.cluster.usd_per_hour_per_node) a.usd = a.goodput.wall_s / 3600.0 * job_nodes * *s.cluster.usd_per_hour_per_node;
  return a;
}

nlohmann::json to_json(const Assessment& a, double step_time_s) {
  nlohmann::json j;
  j["strategy"] = a.name.empty() ? to_string(a.plan.strategy) : a.name;
  j["available"] = a.available;
  if (!a.available) {
    j["reason"] = a.unavailable_reason;
    return j;
  }
  j["mode"] = to_string(a.plan.mode);
  j["layout"] = to_string(a.plan.layout);
  j["save_time_s"] = a.io.save.time_s;
  j["step_stall_s"] = a.io.stall_s;
  j["first_tier_time_s"] = a.io.first_tier_s;
  j["restore_time_s"] = a.io.restore.time_s;
  if (a.io.export_s > 0) j["export_to_s3_time_s"] = a.io.export_s;
  j["bottleneck"] = a.io.save.bottleneck;
  j["bottleneck_utilization"] = a.io.save.bottleneck_utilization;
  j["restore_bottleneck"] = a.io.restore.bottleneck;
  j["restore_bottleneck_utilization"] = a.io.restore.bottleneck_utilization;
  j["interval_steps"] = a.interval_steps;
  j["interval_s"] = a.interval_steps * step_time_s;
  j["interval_source"] = a.interval_source;
  j["young_daly_interval_s"] = a.young_daly_interval_s;
  j["young_daly_interval_steps"] = a.young_daly_interval_steps;
  j["amortized_stall_per_step_s"] = a.io.stall_s / a.interval_steps;
  j["recovery"] = to_string(a.recovery);
  j["restart_s"] = a.restart_s;
  j["goodput"] = a.goodput.goodput;
  j["goodput_method"] = a.goodput.method;
  j["expected_interruptions"] = a.goodput.interruptions;
  j["lost_work_s"] = a.goodput.lost_work_s;
  j["checkpoint_stall_total_s"] = a.goodput.checkpoint_stall_s;
  j["recovery_total_s"] = a.goodput.recovery_s;
  j["time_to_train_s"] = a.goodput.wall_s;
  if (a.usd > 0) j["cost_usd"] = a.usd;
  return j;
}

}  // namespace fmsim::storage
