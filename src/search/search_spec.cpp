// Reading a search file (search_spec.hpp).
#include "fmsim/search/search_spec.hpp"

#include <algorithm>
#include <cmath>

#include "fmsim/common/error.hpp"
#include "fmsim/config/json_file.hpp"
#include "fmsim/config/object_reader.hpp"

namespace fmsim::search {
namespace {

using config::ObjectReader;

std::vector<int> int_list(ObjectReader& r, const std::string& key, int minimum, int maximum) { return read_int_list(r, key, minimum, maximum); }

}  // namespace

std::vector<int> read_int_list(config::ObjectReader& r, const std::string& key, int minimum, int maximum) {
  std::vector<int> out;
  if (!r.has(key)) return out;
  const auto& value = r.required_value(key);
  if (!value.is_array() || value.empty()) r.fail(key, "a non-empty list of integers");
  for (const auto& v : value) {
    if (!v.is_number_integer() || v.get<long long>() < minimum || v.get<long long>() > maximum) {
      r.fail(key, "a non-empty list of integers in " + config::integer_range(minimum, maximum) + " (found " + config::render_value(v) + ")");
    }
    out.push_back(v.get<int>());
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

namespace {

std::vector<std::string> choice_list(ObjectReader& r, const std::string& key, const std::vector<std::string>& allowed) {
  std::vector<std::string> out;
  if (!r.has(key)) return out;
  const auto& value = r.required_value(key);
  std::string names;
  for (const auto& a : allowed) names += (names.empty() ? "" : ", ") + a;
  if (!value.is_array() || value.empty()) r.fail(key, "a non-empty list of " + names);
  for (const auto& v : value) {
    if (!v.is_string() || std::find(allowed.begin(), allowed.end(), v.get<std::string>()) == allowed.end()) {
      r.fail(key, "a list of " + names + " (found " + config::render_value(v) + ")");
    }
    out.push_back(v.get<std::string>());
  }
  return out;
}

std::vector<bool> bool_list(ObjectReader& r, const std::string& key) {
  std::vector<bool> out;
  if (!r.has(key)) return out;
  const auto& value = r.required_value(key);
  if (!value.is_array() || value.empty()) r.fail(key, "a non-empty list of true/false");
  for (const auto& v : value) {
    if (!v.is_boolean()) r.fail(key, "a list of true/false (found " + config::render_value(v) + ")");
    out.push_back(v.get<bool>());
  }
  return out;
}

/// Powers of two from `low` to `high` GPUs, as node counts.
std::vector<int> nodes_in_range(ObjectReader& r, const std::string& key, int gpus_per_node) {
  const auto& value = r.required_value(key);
  if (!value.is_array() || value.size() != 2 || !value[0].is_number_integer() || !value[1].is_number_integer() ||
      value[0].get<long long>() < 1 || value[1].get<long long>() < value[0].get<long long>() || value[1].get<long long>() > (1 << 20)) {
    r.fail(key, "[MIN, MAX] GPUs, 1 <= MIN <= MAX <= 1048576");
  }
  std::vector<int> out;
  for (long long gpus = 1; gpus <= value[1].get<long long>(); gpus *= 2) {
    if (gpus >= value[0].get<long long>() && gpus % gpus_per_node == 0) out.push_back(static_cast<int>(gpus / gpus_per_node));
  }
  if (out.empty()) r.fail(key, "a range holding at least one power of two that is a whole number of " + std::to_string(gpus_per_node) + "-GPU nodes");
  return out;
}

}  // namespace

std::string to_string(Objective objective) {
  switch (objective) {
    case Objective::time: return "time";
    case Objective::cost: return "cost";
    case Objective::tokens_per_gpu: return "tokens_per_s_per_gpu";
    case Objective::pareto: return "pareto";
  }
  return "time";
}

SearchSpec load_search(const std::filesystem::path& path) {
  const config::JsonFile file = config::load_json_file(path);
  SearchSpec spec;
  spec.file = file.path;
  if (!file.root.is_object()) throw InputError(file.path + ": expected a search file (a JSON object with \"schema\": \"fmsim.search/1\")");
  ObjectReader root(file.root, file.path);
  const std::string schema = root.required_string("schema");
  if (schema != "fmsim.search/1") root.fail("schema", "\"fmsim.search/1\"");
  spec.name = root.string_or("name", path.stem().string());
  spec.description = root.string_or("description", "");
  const auto dir = std::filesystem::absolute(path).parent_path();
  spec.scenario = (dir / root.required_string("scenario")).lexically_normal();

  const auto& clusters = root.required_value("clusters");
  if (!clusters.is_array() || clusters.empty()) root.fail("clusters", "a non-empty list of {\"topology\": FILE, \"nodes\": [...]} objects");
  for (std::size_t i = 0; i < clusters.size(); ++i) {
    if (!clusters[i].is_object()) root.fail("clusters", "objects {\"topology\": FILE, \"nodes\": [...]} (item " + std::to_string(i) + ")");
    ObjectReader c(clusters[i], file.path, "/clusters/" + std::to_string(i));
    ClusterChoice choice;
    const auto topology = (dir / c.required_string("topology")).lexically_normal();
    choice.label = topology.stem().string();
    choice.cluster = nlohmann::json{{"base", topology.string()}};
    if (auto type = c.optional_string("instance_type")) {
      choice.cluster["instance_type"] = *type;
      choice.label += ":" + *type;
    }
    const int gpus_per_node = static_cast<int>(c.int_or("gpus_per_node", 8, 1, 72));
    if (c.has("nodes") == c.has("gpus")) c.fail("nodes", "either \"nodes\" (a list of node counts) or \"gpus\" ([MIN, MAX], powers of two), not both");
    choice.nodes = c.has("nodes") ? int_list(c, "nodes", 1, 1 << 17) : nodes_in_range(c, "gpus", gpus_per_node);
    c.reject_unknown_keys();
    spec.clusters.push_back(std::move(choice));
  }

  auto run = root.required_object("run");
  spec.total_tokens = run.number_or("total_tokens", 0, -1);
  spec.train_iters = run.int_or("train_iters", 0, 0, ObjectReader::kIntMax);
  if (spec.total_tokens < 0) run.fail("total_tokens", "a positive number of tokens");
  if (spec.total_tokens > 0 && spec.train_iters > 0) run.fail("train_iters", "either total_tokens or train_iters, not both");
  spec.global_batch = int_list(run, "global_batch_size", 1, 1 << 24);
  run.reject_unknown_keys();

  if (auto space = root.optional_object("space")) {
    auto& s = *space;
    spec.space.tp = int_list(s, "tensor_model_parallel_size", 1, 1024);
    spec.space.pp = int_list(s, "pipeline_model_parallel_size", 1, 1024);
    spec.space.vp = int_list(s, "virtual_pipeline_model_parallel_size", 1, 128);
    spec.space.cp = int_list(s, "context_parallel_size", 1, 1024);
    spec.space.ep = int_list(s, "expert_model_parallel_size", 1, 4096);
    spec.space.etp = int_list(s, "expert_tensor_parallel_size", 1, 1024);
    spec.space.micro_batch = int_list(s, "micro_batch_size", 1, 4096);
    spec.space.recompute = choice_list(s, "recompute_granularity", {"none", "selective", "full"});
    spec.space.sharding = choice_list(s, "data_parallel_sharding_strategy", {"no_shard", "optim", "optim_grads", "optim_grads_params"});
    spec.space.dispatcher = choice_list(s, "moe_token_dispatcher_type", {"alltoall", "flex"});
    spec.space.tp_comm_overlap = bool_list(s, "tp_comm_overlap");
    spec.space.overlap_grad_reduce = bool_list(s, "overlap_grad_reduce");
    s.reject_unknown_keys();
  }

  if (auto limits = root.optional_object("limits")) {
    auto& l = *limits;
    spec.limits.hbm_fraction = l.number_or("hbm_fraction", 1.0, 0);
    if (spec.limits.hbm_fraction > 1) l.fail("hbm_fraction", "a fraction of the GPU's memory in (0, 1]");
    if (l.has("max_usd")) spec.limits.max_usd = l.required_number("max_usd", 0);
    if (l.has("max_usd_per_hour")) spec.limits.max_usd_per_hour = l.required_number("max_usd_per_hour", 0);
    if (l.has("deadline")) spec.limits.deadline_s = l.required_quantity("deadline", units::Dimension::time);
    if (l.has("max_gpus")) spec.limits.max_gpus = l.required_number("max_gpus", 0);
    if (l.has("min_gpus")) spec.limits.min_gpus = l.required_number("min_gpus", 0);
    if (l.has("min_tokens_per_s_per_gpu")) spec.limits.min_tokens_per_s_per_gpu = l.required_number("min_tokens_per_s_per_gpu", 0);
    if (l.has("min_goodput")) {
      spec.limits.min_goodput = l.required_number("min_goodput", 0);
      if (*spec.limits.min_goodput > 1) l.fail("min_goodput", "a fraction in (0, 1]: useful training time over wall time");
      const auto base = config::load_json_file(spec.scenario).root;
      if (!base.is_object() || !base.contains("checkpoint")) {
        l.fail("min_goodput", "a base scenario with a \"checkpoint\" section (goodput comes from its checkpoint plan and failure model; " +
                                  spec.scenario.string() + " has none)");
      }
    }
    if (spec.limits.deadline_s && *spec.limits.deadline_s <= 0) l.fail("deadline", "a positive time, e.g. \"720h\"");
    if (spec.limits.min_gpus && spec.limits.max_gpus && *spec.limits.min_gpus > *spec.limits.max_gpus) {
      l.fail("min_gpus", "at most max_gpus = " + config::render_value(*spec.limits.max_gpus) + " (the limits contradict each other)");
    }
    const bool run_length = spec.total_tokens > 0 || spec.train_iters > 0;
    if (!run_length && (spec.limits.max_usd || spec.limits.deadline_s)) {
      l.fail(spec.limits.max_usd ? "max_usd" : "deadline", "a run length to apply to: give /run/total_tokens or /run/train_iters");
    }
    l.reject_unknown_keys();
  }

  const std::string objective = root.choice_or("objective", {"time", "cost", "tokens_per_s_per_gpu", "pareto"}, "time");
  spec.objective = objective == "cost" ? Objective::cost : objective == "tokens_per_s_per_gpu" ? Objective::tokens_per_gpu
                   : objective == "pareto" ? Objective::pareto : Objective::time;
  if ((spec.objective == Objective::cost || spec.objective == Objective::pareto) && spec.total_tokens <= 0 && spec.train_iters <= 0) {
    root.fail("objective", "\"time\" or \"tokens_per_s_per_gpu\" without a run length (cost to train needs /run/total_tokens or /run/train_iters)");
  }
  spec.top = static_cast<int>(root.int_or("top", 20, 1, 100000));
  spec.resimulate = static_cast<int>(root.int_or("resimulate", 20, 0, 10000));
  root.reject_unknown_keys();
  return spec;
}

}  // namespace fmsim::search
