// One engine iteration at a named batch (iteration_probe.hpp): the batch shape, the replica model's
// breakdown, and its rate per replica and per GPU.
#include "fmsim/inference/iteration_probe.hpp"

#include <cmath>
#include <cstdio>

#include "fmsim/common/error.hpp"
#include "fmsim/units/format.hpp"

namespace fmsim::inference {
namespace {

constexpr long long kMaxProbeCount = 1 << 24;

long long positive_integer(const std::string& text) {
  if (text.empty() || text.size() > 9) return -1;
  long long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    value = value * 10 + (c - '0');
  }
  return value;
}

const char* kind_name(IterationProbe::Kind kind) { return kind == IterationProbe::Kind::decode ? "decode" : "prefill"; }

}  // namespace

IterationProbe parse_iteration_probe(const std::string& text, const std::string& option) {
  const std::string expected = " (expected decode:SEQUENCES@CONTEXT_TOKENS or prefill:TOKENS@PROMPT_TOKENS, per replica, like "
                               "decode:256@2000 or prefill:16384@4096)";
  IterationProbe probe;
  probe.text = text;
  const auto colon = text.find(':'), at = text.find('@');
  if (colon == std::string::npos || at == std::string::npos || at < colon) throw InputError(option + " " + text + expected);
  const std::string kind = text.substr(0, colon);
  if (kind == "decode") {
    probe.kind = IterationProbe::Kind::decode;
  } else if (kind == "prefill") {
    probe.kind = IterationProbe::Kind::prefill;
  } else {
    throw InputError(option + " " + text + ": unknown kind \"" + kind + "\"" + expected);
  }
  const long long count = positive_integer(text.substr(colon + 1, at - colon - 1));
  const long long length = positive_integer(text.substr(at + 1));
  if (count < 1 || length < 1 || count > kMaxProbeCount || length > kMaxProbeCount) {
    throw InputError(option + " " + text + ": counts are whole numbers from 1 to " + std::to_string(kMaxProbeCount) + expected);
  }
  probe.count = static_cast<int>(count);
  probe.length = static_cast<int>(length);
  return probe;
}

std::vector<ProbeResult> run_iteration_probes(const ServingPlan& plan, const std::vector<IterationProbe>& probes) {
  const auto& scenario = plan.scenario();
  if (scenario.speculative.enabled()) {
    throw InputError("--iteration: " + scenario.file + " decodes speculatively (serving.speculative); one-batch iterations price "
                     "plain decoding and prefill only (remove serving.speculative with --unset to price the target alone)");
  }
  std::vector<ProbeResult> results;
  for (const auto& probe : probes) {
    for (int p = 0; p < static_cast<int>(scenario.pools.size()); ++p) {
      const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(p)];
      const bool decode = probe.kind == IterationProbe::Kind::decode;
      if ((decode && pool.role == PoolRole::prefill) || (!decode && pool.role == PoolRole::decode)) continue;
      const ReplicaModel& model = plan.model(p);
      const EngineOptions& engine = pool.engine;
      const std::string where = "--iteration " + probe.text + " on the " + to_string(pool.role) + " pool";
      ProbeResult r;
      r.probe = probe;
      r.pool = p;
      BatchShape& b = r.batch;
      if (decode) {
        if (probe.count > engine.max_num_seqs) {
          throw InputError(where + ": " + std::to_string(probe.count) + " sequences exceed its max_num_seqs = " + std::to_string(engine.max_num_seqs) +
                           " (expected at most that, or a larger max_num_seqs for the pool)");
        }
        b.decode_tokens = probe.count;
        b.decode_context_tokens = static_cast<double>(probe.count) * probe.length;
        b.sampled_rows = probe.count;
      } else {
        if (probe.count > engine.max_num_batched_tokens) {
          throw InputError(where + ": " + std::to_string(probe.count) + " tokens exceed its max_num_batched_tokens = " +
                           std::to_string(engine.max_num_batched_tokens) + " (expected at most that, or a larger max_num_batched_tokens for the pool)");
        }
        const long long prompts = (static_cast<long long>(probe.count) + probe.length - 1) / probe.length;
        if (prompts > engine.max_num_seqs) {
          throw InputError(where + ": " + std::to_string(prompts) + " prompts of " + std::to_string(probe.length) + " tokens exceed its max_num_seqs = " +
                           std::to_string(engine.max_num_seqs) + " (expected longer prompts or fewer tokens)");
        }
        // Whole prompts of `length` tokens (the last one possibly shorter), each causal over itself.
        b.prefill_tokens = probe.count;
        b.prefill_sequences = static_cast<int>(prompts);
        b.prefill_attention_pairs = static_cast<double>(probe.count) * (std::min(probe.count, probe.length) + 1) / 2.0;
        b.sampled_rows = b.prefill_sequences;
      }
      const double kv_tokens = decode ? b.decode_context_tokens : probe.count;
      if (kv_tokens > static_cast<double>(model.memory().kv_capacity_tokens)) {
        throw InputError(where + ": the batch holds " + std::to_string(static_cast<long long>(kv_tokens)) + " tokens of KV cache and a replica holds " +
                         std::to_string(model.memory().kv_capacity_tokens) + " (fewer sequences, shorter contexts, or more memory per replica)");
      }
      r.parts = model.breakdown(b);
      r.iteration_s = r.parts.total_s();
      r.tokens_per_s = probe.count / r.iteration_s;
      r.tokens_per_s_per_gpu = r.tokens_per_s / model.gpus();
      results.push_back(r);
    }
  }
  return results;
}

nlohmann::json probes_json(const ServingPlan& plan, const std::vector<ProbeResult>& results) {
  const auto& scenario = plan.scenario();
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& r : results) {
    const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(r.pool)];
    nlohmann::json parts = nlohmann::json::object();
    for (const auto& [name, value] : named_parts(r.parts)) parts[name] = value;
    const bool decode = r.probe.kind == IterationProbe::Kind::decode;
    rows.push_back({{"iteration", r.probe.text},
                    {"kind", kind_name(r.probe.kind)},
                    {"pool", to_string(pool.role)},
                    {"gpus_per_replica", pool.gpus_per_replica()},
                    {"moe_backend", scenario.model.is_moe() ? nlohmann::json(to_string(pool.engine.moe_backend)) : nlohmann::json(nullptr)},
                    {"sequences", decode ? r.batch.decode_tokens : r.batch.prefill_sequences},
                    {"tokens", r.probe.count},
                    {decode ? "context_tokens" : "prompt_tokens", r.probe.length},
                    {"padded_tokens", r.parts.padded_tokens},
                    {"iteration_s", r.iteration_s},
                    {"tokens_per_s", r.tokens_per_s},
                    {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu},
                    {"parts_s", parts}});
  }
  return {{"schema", "fmsim.serve-iteration/1"},
          {"scenario", {{"name", scenario.name}, {"file", scenario.file}}},
          {"model", scenario.model.name},
          {"gpu", scenario.cluster.gpu.name},
          {"iterations", rows}};
}

std::string probes_text(const ServingPlan& plan, const std::vector<ProbeResult>& results) {
  const auto& scenario = plan.scenario();
  std::string out = scenario.name + ": " + scenario.model.name + " on " + scenario.cluster.instance.name + " (" + scenario.cluster.gpu.name +
                    "), one iteration per batch\n";
  char line[512];
  for (const auto& r : results) {
    const PoolSpec& pool = scenario.pools[static_cast<std::size_t>(r.pool)];
    const bool decode = r.probe.kind == IterationProbe::Kind::decode;
    std::snprintf(line, sizeof line, "%s (%s, TP%d PP%d%s): %s; %.0f %s tok/s per replica, %.0f per GPU\n", r.probe.text.c_str(),
                  to_string(pool.role).c_str(), pool.tp, pool.pp, pool.expert_parallel ? " EP" : "",
                  units::format_time(r.iteration_s).c_str(), r.tokens_per_s, decode ? "output" : "prompt", r.tokens_per_s_per_gpu);
    out += line;
    std::string parts;
    for (const auto& [name, value] : named_parts(r.parts)) {
      if (value <= 0) continue;
      std::snprintf(line, sizeof line, "%s%s %s", parts.empty() ? "  " : ", ", name.c_str(), units::format_time(value).c_str());
      parts += line;
    }
    out += parts + "\n";
  }
  return out;
}

}  // namespace fmsim::inference
