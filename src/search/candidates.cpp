// Enumerating, pruning and timing the candidates of a search (candidates.hpp).
#include "fmsim/search/candidates.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "fmsim/common/error.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/pipeline_layout.hpp"

namespace fmsim::search {
namespace {

using workload::MoeDispatcher;
using workload::Recompute;
using workload::Sharding;

Recompute recompute_of(const std::string& name) {
  return name == "full" ? Recompute::full : name == "selective" ? Recompute::selective : Recompute::none;
}
Sharding sharding_of(const std::string& name) {
  return name == "no_shard" ? Sharding::no_shard : name == "optim_grads" ? Sharding::optim_grads
         : name == "optim_grads_params" ? Sharding::optim_grads_params : Sharding::optim;
}

template <typename T>
std::vector<T> or_default(const std::vector<T>& given, std::vector<T> fallback) {
  return given.empty() ? fallback : given;
}

std::string gib(double bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GB", bytes / 1e9);
  return text;
}

/// The closest miss of one limit: the candidate with the least ratio value / limit above 1.
struct Nearest {
  double ratio = std::numeric_limits<double>::infinity();
  std::string text;
  void offer(double value_over_limit, const std::string& describe) {
    if (value_over_limit < ratio) ratio = value_over_limit, text = describe;
  }
};

}  // namespace

std::string Candidate::layout() const {
  const auto& p = parallelism;
  std::string text = "TP" + std::to_string(p.tp) + " PP" + std::to_string(p.pp);
  if (p.vp > 1) text += " VP" + std::to_string(p.vp);
  if (p.cp > 1) text += " CP" + std::to_string(p.cp);
  if (p.ep > 1) text += " EP" + std::to_string(p.ep) + " ETP" + std::to_string(p.etp);
  text += " DP" + std::to_string(p.dp) + " mb" + std::to_string(p.micro_batch) + " gb" + std::to_string(p.global_batch);
  text += " rc-" + workload::to_string(recompute);
  if (sharding != Sharding::optim) text += " " + workload::to_string(sharding);
  if (p.ep > 1 && dispatcher == MoeDispatcher::flex) text += " flex";
  if (!overlap_grad_reduce) text += " no-dp-overlap";
  if (p.tp > 1 && !tp_comm_overlap) text += " no-tp-overlap";
  return text;
}

std::string Candidate::where() const { return std::to_string(nodes) + " x " + instance_type; }

workload::Scenario base_scenario(const SearchSpec& spec, int index, int nodes, const hardware::Catalog& catalog) {
  nlohmann::json doc = workload::load_scenario_document(spec.scenario, {}, "training scenario").root;
  doc["cluster"] = spec.clusters[index].cluster;
  doc["cluster"]["nodes"] = nodes;
  auto& p = doc["parallelism"];
  if (!p.is_object()) p = nlohmann::json::object();
  for (const char* key : {"data_parallel_size", "pipeline_model_parallel_layout", "num_layers_in_first_pipeline_stage",
                          "num_layers_in_last_pipeline_stage", "virtual_pipeline_model_parallel_size", "expert_tensor_parallel_size"}) {
    p.erase(key);
  }
  p["tensor_model_parallel_size"] = 1;
  p["pipeline_model_parallel_size"] = 1;
  p["context_parallel_size"] = 1;
  p["expert_model_parallel_size"] = 1;
  p["micro_batch_size"] = 1;
  // A job of one GPU reads on any cluster; the candidates set their own sizes and switches.
  p["global_batch_size"] = 1;
  p["data_parallel_size"] = 1;
  const bool sequence_parallel = p.value("sequence_parallel", true);
  p.erase("sequence_parallel");
  auto& t = doc["training"];
  if (!t.is_object()) t = nlohmann::json::object();
  const bool tp_comm_overlap = t.value("tp_comm_overlap", false);
  t.erase("tp_comm_overlap");
  workload::Scenario s = workload::scenario_from_json(doc, spec.scenario.string(), spec.scenario.parent_path(), catalog);
  s.parallelism.sequence_parallel = sequence_parallel;
  s.training.tp_comm_overlap = tp_comm_overlap;
  return s;
}

void apply(const Candidate& c, workload::Scenario& s) {
  const bool sequence_parallel = s.parallelism.sequence_parallel;
  auto& p = s.parallelism;
  const bool account_embedding = p.account_for_embedding, account_loss = p.account_for_loss;
  const auto cp_comm = p.cp_comm;
  p = c.parallelism;
  p.account_for_embedding = account_embedding;
  p.account_for_loss = account_loss;
  p.cp_comm = cp_comm;
  p.sequence_parallel = sequence_parallel && p.tp > 1;
  p.sharding = c.sharding;
  s.training.recompute = c.recompute;
  s.training.tp_comm_overlap = c.tp_comm_overlap && p.tp > 1;
  s.training.overlap_grad_reduce = c.overlap_grad_reduce;
  s.training.moe_dispatcher = c.dispatcher;
}

nlohmann::json scenario_document(const SearchSpec& spec, const Candidate& c) {
  nlohmann::json doc = workload::load_scenario_document(spec.scenario, {}, "training scenario").root;
  doc["name"] = spec.name + "-best";
  doc["description"] = "fmsim search " + spec.name + ": " + c.layout() + " on " + c.where();
  doc["cluster"] = spec.clusters[c.cluster].cluster;
  doc["cluster"]["nodes"] = c.nodes;
  if (doc.contains("model") && doc["model"].is_string()) {
    const auto model = doc["model"].get<std::string>();
    const auto path = spec.scenario.parent_path() / model;
    if (model.find('/') != std::string::npos || model.ends_with(".json")) doc["model"] = std::filesystem::absolute(path).lexically_normal().string();
  }
  auto& p = doc["parallelism"];
  for (const char* key : {"data_parallel_size", "pipeline_model_parallel_layout", "num_layers_in_first_pipeline_stage",
                          "num_layers_in_last_pipeline_stage", "use_distributed_optimizer"}) {
    p.erase(key);
  }
  const auto& q = c.parallelism;
  p["tensor_model_parallel_size"] = q.tp;
  p["pipeline_model_parallel_size"] = q.pp;
  p["virtual_pipeline_model_parallel_size"] = q.vp;
  p["context_parallel_size"] = q.cp;
  p["expert_model_parallel_size"] = q.ep;
  p["expert_tensor_parallel_size"] = q.etp;
  p["micro_batch_size"] = q.micro_batch;
  p["global_batch_size"] = q.global_batch;
  p["sequence_parallel"] = q.sequence_parallel && q.tp > 1;
  p["data_parallel_sharding_strategy"] = workload::to_string(c.sharding);
  auto& t = doc["training"];
  if (!t.is_object()) t = nlohmann::json::object();
  t["recompute_granularity"] = workload::to_string(c.recompute);
  t["tp_comm_overlap"] = c.tp_comm_overlap && q.tp > 1;
  t["overlap_grad_reduce"] = c.overlap_grad_reduce;
  if (q.ep > 1) t["moe_token_dispatcher_type"] = workload::to_string(c.dispatcher);
  if (spec.total_tokens > 0) t["total_tokens"] = spec.total_tokens, t.erase("train_iters");
  if (spec.train_iters > 0) t["train_iters"] = spec.train_iters, t.erase("total_tokens");
  return doc;
}

void fill_totals(const SearchSpec& spec, const workload::Scenario& s, Candidate& c) {
  const double tokens_per_step = static_cast<double>(c.parallelism.global_batch) * s.training.seq;
  c.tokens_per_s_per_gpu = tokens_per_step / c.step_s / c.gpus;
  c.usd_per_hour = s.cluster.usd_per_hour_per_node ? *s.cluster.usd_per_hour_per_node * c.nodes : 0.0;
  c.steps = spec.train_iters > 0 ? static_cast<double>(spec.train_iters) : spec.total_tokens > 0 ? std::ceil(spec.total_tokens / tokens_per_step) : 0.0;
  c.time_to_train_s = c.steps * c.step_s;
  c.usd_total = c.usd_per_hour * c.time_to_train_s / 3600.0;
}

std::vector<Candidate> evaluate_candidates(const SearchSpec& spec, const hardware::Catalog& catalog, Pruning& pruning,
                                           const Progress& progress) {
  std::vector<Candidate> out;
  long long by_gpus = 0, by_price = 0, by_rules = 0, by_memory = 0, by_deadline = 0, by_usd = 0, by_rate = 0;
  Nearest near_gpus, near_price, near_memory, near_deadline, near_usd, near_rate;
  std::string last_rule;
  const auto& sp = spec.space;
  long long sizes = 0, size_index = 0;
  for (const auto& choice : spec.clusters) sizes += static_cast<long long>(choice.nodes.size());
  for (std::size_t ci = 0; ci < spec.clusters.size(); ++ci) {
    for (int nodes : spec.clusters[ci].nodes) {
      ++size_index;
      workload::Scenario s;
      try {
        s = base_scenario(spec, static_cast<int>(ci), nodes, catalog);
      } catch (const InputError& error) {
        throw InputError(spec.file + ": /clusters/" + std::to_string(ci) + " (" + spec.clusters[ci].label + ", " + std::to_string(nodes) +
                         " nodes): " + error.what());
      }
      const workload::Scenario pristine = s;
      const int gpus = s.cluster.total_gpus();
      const auto& m = s.model;
      Candidate base;
      base.cluster = static_cast<int>(ci);
      base.nodes = nodes;
      base.gpus = gpus;
      base.instance_type = s.cluster.instance.name;
      base.gpu = s.cluster.gpu.name;
      const std::string here = base.where() + " (" + std::to_string(gpus) + " GPUs)";
      if ((spec.limits.max_gpus && gpus > *spec.limits.max_gpus) || (spec.limits.min_gpus && gpus < *spec.limits.min_gpus)) {
        ++by_gpus;
        near_gpus.offer(spec.limits.max_gpus ? gpus / *spec.limits.max_gpus : *spec.limits.min_gpus / gpus, here);
        continue;
      }
      const double price = s.cluster.usd_per_hour_per_node ? *s.cluster.usd_per_hour_per_node * nodes : 0.0;
      if (spec.limits.max_usd_per_hour && price > *spec.limits.max_usd_per_hour) {
        ++by_price;
        char text[160];
        std::snprintf(text, sizeof text, "%s at $%.0f/h", here.c_str(), price);
        near_price.offer(price / *spec.limits.max_usd_per_hour, text);
        continue;
      }
      AnalyticModel model(s.cluster);
      const int node_gpus = s.cluster.gpus_per_node * s.cluster.nvlink_domain_nodes;
      std::vector<int> tps;
      for (int tp : or_default(sp.tp, {1, 2, 4, 8})) if (tp <= node_gpus || !sp.tp.empty()) tps.push_back(tp);
      const auto pps = or_default(sp.pp, {1, 2, 4, 8, 16, 32});
      const auto vps = or_default(sp.vp, {1, 2, 4, 8});
      const auto cps = or_default(sp.cp, {1, 2, 4, 8});
      const auto eps = m.is_moe() ? or_default(sp.ep, {1, 2, 4, 8, 16, 32, 64}) : std::vector<int>{1};
      const auto mbs = or_default(sp.micro_batch, {1, 2, 4});
      const auto recomputes = or_default(sp.recompute, {"none", "selective", "full"});
      const auto shardings = or_default(sp.sharding, {workload::to_string(pristine.parallelism.sharding)});
      const auto dispatchers = m.is_moe() ? or_default(sp.dispatcher, {workload::to_string(pristine.training.moe_dispatcher)})
                                          : std::vector<std::string>{"alltoall"};
      const auto tp_overlaps = or_default(sp.tp_comm_overlap, {pristine.training.tp_comm_overlap});
      const auto dp_overlaps = or_default(sp.overlap_grad_reduce, {pristine.training.overlap_grad_reduce});
      const auto batches = or_default(spec.global_batch, {pristine.resolved["parallelism"].value("global_batch_size", 1)});
      const auto before = out.size();
      for (int tp : tps) for (int pp : pps) for (int cp : cps) {
        if (static_cast<long long>(tp) * pp * cp > gpus || gpus % (tp * pp * cp) != 0) {
          const long long skipped = static_cast<long long>(vps.size()) * eps.size() * mbs.size() * recomputes.size() * batches.size();
          pruning.enumerated += skipped;
          by_rules += skipped;
          last_rule = "TP x PP x CP = " + std::to_string(tp * pp * cp) + " does not divide " + std::to_string(gpus) + " GPUs";
          continue;
        }
        const int dp = gpus / (tp * pp * cp);
        for (int vp : vps) for (int ep : eps) for (int mb : mbs) for (int gb : batches) for (const auto& rc : recomputes)
        for (const auto& sh : shardings) for (const auto& dispatcher : dispatchers) for (bool tpo : tp_overlaps) for (bool dpo : dp_overlaps) {
          if (tp == 1 && tpo != tp_overlaps.front()) continue;  // the switch means nothing without TP
          ++pruning.enumerated;
          Candidate c = base;
          auto& p = c.parallelism;
          p.tp = tp, p.pp = pp, p.vp = vp, p.cp = cp, p.ep = ep, p.dp = dp, p.micro_batch = mb, p.global_batch = gb;
          p.etp = sp.etp.empty() ? (m.is_moe() ? 1 : tp) : sp.etp.front();
          c.recompute = recompute_of(rc);
          c.sharding = sharding_of(sh);
          c.dispatcher = dispatcher == "flex" ? MoeDispatcher::flex : MoeDispatcher::alltoall;
          c.tp_comm_overlap = tpo;
          c.overlap_grad_reduce = dpo;
          if (gb % (mb * dp) != 0) {
            ++by_rules;
            last_rule = "global batch " + std::to_string(gb) + " is not a multiple of micro-batch x DP = " + std::to_string(mb * dp);
            continue;
          }
          p.microbatches = gb / (mb * dp);
          s.parallelism = pristine.parallelism;
          s.training = pristine.training;
          apply(c, s);
          c.parallelism = s.parallelism;
          try {
            workload::validate(s.parallelism, s.training, s.model, s.cluster.gpu, s.file);
            (void)workload::pipeline_stages(m.layers, m.mtp_layers, s.parallelism, s.file);
          } catch (const InputError& error) {
            ++by_rules;
            last_rule = error.what();
            continue;
          }
          const auto memory = workload::estimate_memory(s);
          c.memory_bytes = memory.peak.total_bytes;
          c.hbm_bytes = memory.hbm_bytes;
          const double allowed = spec.limits.hbm_fraction * memory.hbm_bytes;
          if (c.memory_bytes > allowed) {
            ++by_memory;
            near_memory.offer(c.memory_bytes / allowed, c.layout() + " on " + here + " needs " + gib(c.memory_bytes) + " of " + gib(allowed));
            continue;
          }
          c.analytic = model.step(s);
          c.step_s = c.analytic.step_s;
          c.terms = c.analytic.terms();
          fill_totals(spec, s, c);
          const std::string who = c.layout() + " on " + here;
          if (spec.limits.deadline_s && c.time_to_train_s > *spec.limits.deadline_s) {
            ++by_deadline;
            near_deadline.offer(c.time_to_train_s / *spec.limits.deadline_s, who + " trains in " + std::to_string(c.time_to_train_s / 86400).substr(0, 6) + " days");
            continue;
          }
          if (spec.limits.max_usd && c.usd_total > *spec.limits.max_usd) {
            ++by_usd;
            char text[64];
            std::snprintf(text, sizeof text, " costs $%.4g", c.usd_total);
            near_usd.offer(c.usd_total / *spec.limits.max_usd, who + text);
            continue;
          }
          if (spec.limits.min_tokens_per_s_per_gpu && c.tokens_per_s_per_gpu < *spec.limits.min_tokens_per_s_per_gpu) {
            ++by_rate;
            char text[64];
            std::snprintf(text, sizeof text, " reaches %.0f tokens/s/GPU", c.tokens_per_s_per_gpu);
            near_rate.offer(*spec.limits.min_tokens_per_s_per_gpu / c.tokens_per_s_per_gpu, who + text);
            continue;
          }
          out.push_back(std::move(c));
        }
      }
      if (progress) progress(base.where() + ": " + std::to_string(out.size() - before) + " candidates ranked", size_index, sizes);
    }
  }
  pruning.ranked = static_cast<long long>(out.size());
  pruning.dropped = {{"/limits/max_gpus or min_gpus", by_gpus}, {"/limits/max_usd_per_hour", by_price},
                     {"divisibility (Megatron's rules)", by_rules}, {"/limits/hbm_fraction (memory)", by_memory},
                     {"/limits/deadline", by_deadline}, {"/limits/max_usd", by_usd}, {"/limits/min_tokens_per_s_per_gpu", by_rate}};
  if (!near_gpus.text.empty()) pruning.closest["/limits/max_gpus or min_gpus"] = near_gpus.text;
  if (!near_price.text.empty()) pruning.closest["/limits/max_usd_per_hour"] = near_price.text;
  if (!last_rule.empty()) pruning.closest["divisibility (Megatron's rules)"] = last_rule;
  if (!near_memory.text.empty()) pruning.closest["/limits/hbm_fraction (memory)"] = near_memory.text;
  if (!near_deadline.text.empty()) pruning.closest["/limits/deadline"] = near_deadline.text;
  if (!near_usd.text.empty()) pruning.closest["/limits/max_usd"] = near_usd.text;
  if (!near_rate.text.empty()) pruning.closest["/limits/min_tokens_per_s_per_gpu"] = near_rate.text;
  if (out.empty()) {
    // The limit that excluded everything: the last stage of the pruning that dropped candidates.
    std::string limit = "the space";
    for (const auto& [name, count] : pruning.dropped) if (count > 0) limit = name;
    std::string counts;
    for (const auto& [name, count] : pruning.dropped) {
      if (count > 0) counts += (counts.empty() ? "" : ", ") + std::to_string(count) + " by " + name;
    }
    const auto it = pruning.closest.find(limit);
    throw InputError(spec.file + ": no candidate meets " + limit + " (" + std::to_string(pruning.enumerated) + " enumerated: " + counts +
                     "); the closest: " + (it != pruning.closest.end() ? it->second : "none") );
  }
  return out;
}

}  // namespace fmsim::search
