// Serving: percentiles, request generation, the replica's iteration model, the batching scheduler's
// block accounting, and the engine's online flow driver.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "fmsim/compute/compute_model.hpp"
#include "fmsim/engine/flow_driver.hpp"
#include "fmsim/inference/serve_report.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "inference/replica_scheduler.hpp"
#include "serve_test_support.hpp"

using namespace fmsim;
using namespace fmsim::inference;

namespace {

ServeScenario load(const std::string& serving, const std::string& model = "llama3.1-8b") {
  return test::serve_scenario("p5-2node.json", 1, model, serving);
}

}  // namespace

TEST_CASE("percentiles interpolate between closest ranks like numpy") {
  CHECK(percentile_of({4, 1, 3, 2}, 50) == Approx(2.5));
  CHECK(percentile_of({1, 2, 3, 4}, 90) == Approx(3.7));
  CHECK(percentile_of({1, 2, 3, 4}, 0) == 1);
  CHECK(percentile_of({1, 2, 3, 4}, 100) == 4);
  const auto p = percentiles_of({5, 1, 3});
  CHECK(p.mean == Approx(3));
  CHECK(p.max == 5);
}

TEST_CASE("generated requests: seeded, Poisson gaps at the rate, lognormal mean as configured") {
  WorkloadSpec w;
  w.requests = 20000;
  w.rate_per_s = 8;
  w.input.kind = LengthSpec::Kind::lognormal;
  w.input.mean = 1000;
  w.input.sigma = 0.8;
  w.output.mean = 50;
  const auto a = make_requests(w);
  CHECK(a.back().arrival_s / a.size() == Approx(1.0 / 8).epsilon(0.02));
  double input = 0;
  for (const auto& r : a) input += r.input_tokens;
  CHECK(input / a.size() == Approx(1000).epsilon(0.02));
  // Another rate keeps every request's lengths; another seed changes them.
  w.rate_per_s = 16;
  const auto b = make_requests(w);
  REQUIRE(b.size() == a.size());
  for (std::size_t i = 0; i < a.size(); i += 997) CHECK(b[i].input_tokens == a[i].input_tokens);
  CHECK(b.back().arrival_s == Approx(a.back().arrival_s / 2));
  w.seed = 2;
  CHECK(make_requests(w)[0].input_tokens != a[0].input_tokens);
}

TEST_CASE("iteration time grows with work and respects the HBM and compute bounds") {
  const ServeScenario s = load(R"({"precision": "bf16"})");
  const ServingPlan plan(s);
  const ReplicaModel& model = plan.model(0);
  const double hbm_Bps = s.cluster.gpu.hbm_bandwidth_Bps;
  BatchShape decode{1, 1000, 0, 0, 1};
  CHECK(model.iteration_s(decode) >= model.memory().weight_bytes_per_gpu / hbm_Bps);
  double previous = 0;
  for (int batch : {1, 8, 64, 256, 1024}) {
    BatchShape shape{batch, 1000.0 * batch, 0, 0, batch};
    const double t = model.iteration_s(shape);
    CHECK(t >= previous);
    previous = t;
  }
  // More context to read never makes a decode step faster.
  CHECK(model.iteration_s({64, 64 * 8000.0, 0, 0, 64}) > model.iteration_s({64, 64 * 1000.0, 0, 0, 64}));
  // A long prefill is compute-bound: at least 2 x parameters x tokens at the dense peak.
  const double tokens = 8000;
  BatchShape prefill{0, 0, 8000, tokens * tokens / 2, 1};
  CHECK(model.iteration_s(prefill) >= 2 * 8.0e9 * tokens / s.cluster.gpu.bf16_dense_flops);
}

TEST_CASE("the scheduler conserves KV blocks and finishes every request") {
  const ServeScenario s = load(R"({"precision": "bf16", "gpu_memory_utilization": 0.3, "max_num_seqs": 64, "max_num_batched_tokens": 2048})");
  const ServingPlan plan(s);
  ReplicaScheduler scheduler(plan.model(0));
  std::mt19937 rng(3);
  std::vector<SeqState> seqs(300);
  for (int i = 0; i < 300; ++i) {
    SeqState& q = seqs[static_cast<std::size_t>(i)];
    q.request = i;
    q.target = 200 + rng() % 3000;
    q.output = 1 + static_cast<int>(rng() % 800);
    q.samples = 1 + static_cast<int>(rng() % 3);
    scheduler.waiting().push_back(i);
  }
  std::vector<ScheduledSeq> batch;
  std::vector<int> first, finished, handed;
  BatchShape shape;
  long long preemptions = 0;
  int iterations = 0;
  while (scheduler.has_work() && iterations < 200000) {
    preemptions += static_cast<long long>(scheduler.schedule(seqs, batch, shape).size());
    REQUIRE(!batch.empty());
    REQUIRE(shape.tokens() <= 2048);
    REQUIRE(scheduler.running_sequences() <= 64);
    scheduler.complete(seqs, batch, false, first, finished, handed);
    long long held = 0;
    for (const auto& q : seqs) held += q.blocks;
    REQUIRE(held == scheduler.used_blocks());
    REQUIRE(scheduler.used_blocks() <= scheduler.total_blocks());
    ++iterations;
  }
  CHECK(finished.size() == 300);
  CHECK(first.size() == 300);
  CHECK(scheduler.used_blocks() == 0);
  for (const auto& q : seqs) CHECK(q.generated == q.output);
  CHECK(preemptions > 0);  // 30 % of HBM cannot hold this load: some sequences were recomputed
}

namespace {

/// Starts two flows at t = 0 that share one link, and a third one later alone.
class TwoFlows final : public engine::FlowDriver {
 public:
  double done[3] = {-1, -1, -1};
  bool started = false, third = false;
  double next_event_s() const override {
    if (!started) return 0.0;
    if (!third) return 10.0;
    return std::numeric_limits<double>::infinity();
  }
  void on_time(double now_s, engine::FlowStarter& network) override {
    if (!started) {
      started = true;
      network.start_flow(0, 0, 2, 1e9);
      network.start_flow(1, 1, 2, 1e9);
    } else if (!third && now_s >= 10.0) {
      third = true;
      network.start_flow(2, 0, 2, 1e9);
    }
  }
  void on_flow_done(long long tag, double now_s, engine::FlowStarter&) override { done[tag] = now_s; }
};

}  // namespace

TEST_CASE("online flow driver: flows sharing a link split its bandwidth") {
  const std::string result = engine::run_isolated([] {
    engine::SimPlatform platform;
    platform.hosts = {"a", "b", "c"};
    platform.links = {{"a-up", 100e9, 0}, {"b-up", 100e9, 0}, {"c-down", 10e9, 0}};
    platform.routes = {{0, 2, {0, 2}}, {1, 2, {1, 2}}};
    TwoFlows driver;
    engine::run_flow_driver(platform, driver);
    return std::string(reinterpret_cast<const char*>(driver.done), sizeof driver.done);
  });
  double done[3];
  std::memcpy(done, result.data(), sizeof done);
  CHECK(done[0] == Approx(2 * 1e9 / 10e9));  // both at 5 GB/s
  CHECK(done[1] == Approx(2 * 1e9 / 10e9));
  CHECK(done[2] == Approx(10.0 + 1e9 / 10e9));  // alone at 10 GB/s
}

TEST_CASE("serving prices FP4 GEMMs at the in-model FP4 rate, as training does") {
  // A long prefill on one B200 is GEMM-bound: its FP4/FP8 GEMM-time ratio is the ratio of the two
  // effective rates, the FP4 one at kFp4ModelGemmRate of the single-GEMM microbenchmark rate.
  auto load_b200 = [](const std::string& precision) {
    const std::string json = R"({"cluster": {"base": ")" + (test::source_dir() / "topologies" / "p6-b200-64node.json").string() +
                             R"(", "nodes": 1}, "model": "llama3.1-8b", "serving": {"precision": ")" + precision +
                             R"("}, "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}})";
    return load_serve_scenario(test::write_temp(json, "serve-" + precision + ".json"), {}, test::catalog());
  };
  const ServeScenario fp4 = load_b200("fp4"), fp8 = load_b200("fp8");
  const ServingPlan plan4(fp4), plan8(fp8);
  const int tokens = 8192;
  const BatchShape prefill{0, 0, tokens, tokens * (tokens / 2.0), 1};
  const double gemm4 = plan4.model(0).breakdown(prefill).gemm_s, gemm8 = plan8.model(0).breakdown(prefill).gemm_s;
  const auto& gpu = fp4.cluster.gpu;
  const double fp4_rate = gpu.fp4_dense_flops * gpu.gemm_fp4_peak_efficiency * compute::kFp4ModelGemmRate;
  const double fp8_rate = gpu.fp8_dense_flops * gpu.gemm_peak_efficiency;
  // The LM head stays BF16 in both; the layers' GEMMs carry almost all of the time at this size.
  CHECK(gemm4 / gemm8 == Approx(fp8_rate / fp4_rate).epsilon(0.06));
  CHECK(compute::model_gemm_rate(compute::MathPrecision::fp8) == 1.0);
}
