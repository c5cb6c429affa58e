// Simulates one RL iteration (rl_iteration.hpp) from parts fmsim already models: the rollout is an
// offline serving run of the iteration's prompts on the rollout engine's layout; each forward pass
// (old log-probs, reference, reward model, critic values) is a prefill-only serving run of the samples
// on the trainer's GPUs at the trainer's TP x PP, plus the LM head over every token (RL needs the
// log-probability of each response token, a sampler only the last one's); an update is a training step
// over the samples packed into rows of seq_length; the weight transfer is a collective on the cluster's
// fabric. docs/model.md, "RL post-training".
#include <algorithm>
#include <cmath>

#include <spdlog/spdlog.h>

#include "fmsim/collectives/benchmark.hpp"
#include "fmsim/collectives/layout.hpp"
#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/inference/requests.hpp"
#include "fmsim/inference/serve_scenario.hpp"
#include "fmsim/inference/serving_plan.hpp"
#include "fmsim/inference/serving_sim.hpp"
#include "fmsim/rl/rl_iteration.hpp"
#include "fmsim/topology/cluster_graph.hpp"
#include "fmsim/topology/placement.hpp"
#include "fmsim/training/step_simulation.hpp"
#include "fmsim/workload/memory.hpp"
#include "fmsim/workload/scenario.hpp"
#include "fmsim/workload/trace_builder.hpp"

namespace fmsim::rl {

using nlohmann::json;

namespace {

/// The cluster a role runs on: its nodes, or on UltraServer clusters the racks that hold its instances
/// (the role then uses only its own GPUs of them: the first instances of a rack, as a job smaller than
/// an NVLink domain is placed).
json cluster_with(const json& expanded, bool ultraserver, int nodes, int domain_nodes) {
  json cluster = expanded;
  cluster[ultraserver ? "ultraservers" : "nodes"] = ultraserver ? (nodes + domain_nodes - 1) / domain_nodes : nodes;
  return cluster;
}

struct ServeRun {
  double end_s = 0, tail_s = 0, output_tokens_per_s = 0;
  double weight_bytes_per_gpu = 0;  ///< the engine's weights on one of its GPUs
  double mean_input = 0, mean_output = 0;
  double max_sequence = 0;  ///< the longest prompt + response
  int replicas = 0;
  std::vector<std::vector<int>> replica_gpus;  ///< each replica's GPUs on the run's cluster, as serving placed them
};

/// An offline serving run of `document`; the finish time of every request and its 90th percentile.
ServeRun run_offline(const json& document, const std::string& origin, const std::filesystem::path& base_dir,
                     const hardware::Catalog& catalog) {
  const inference::ServeScenario scenario = inference::serve_scenario_from_json(document, origin, base_dir, catalog);
  const inference::ServingPlan plan(scenario);
  const auto requests = inference::make_requests(scenario.workload);
  const auto outcome = inference::simulate_serving(plan, requests, false);
  ServeRun run;
  run.end_s = outcome.end_s;
  run.weight_bytes_per_gpu = plan.model(0).memory().weight_bytes_per_gpu;
  std::vector<double> finish;
  finish.reserve(outcome.requests.size());
  double output_tokens = 0;
  for (const auto& r : outcome.requests) {
    finish.push_back(r.finish_s);
    run.mean_input += r.input_tokens;
    run.mean_output += r.output_tokens;
    run.max_sequence = std::max(run.max_sequence, static_cast<double>(r.input_tokens + r.output_tokens));
    output_tokens += static_cast<double>(r.output_tokens) * r.samples;
  }
  if (!finish.empty()) {
    std::sort(finish.begin(), finish.end());
    const auto p90 = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(finish.size()))) - 1;
    run.tail_s = run.end_s - finish[std::min(p90, finish.size() - 1)];
    run.mean_input /= static_cast<double>(finish.size());
    run.mean_output /= static_cast<double>(finish.size());
  }
  run.output_tokens_per_s = run.end_s > 0 ? output_tokens / run.end_s : 0.0;
  run.replicas = static_cast<int>(plan.replicas().size());
  for (const auto& replica : plan.replicas()) run.replica_gpus.push_back(replica.gpus);
  return run;
}

/// A collective of `bytes` (nccl-tests size) over `gpus`, as `fmsim collective` times it: the algorithm
/// NCCL's tuner would pick, its network part simulated as flows on the engine (fast mode).
double collective_s(const topology::ClusterGraph& cluster, const std::vector<int>& gpus, collectives::Op op, double bytes) {
  collectives::BenchmarkRequest request;
  request.op = op;
  request.sizes_bytes = {bytes};
  return collectives::run_benchmark(collectives::make_layout(cluster, gpus), request).rows.at(0).time_s;
}

int int_in(const json& object, const char* key, int fallback) {
  return object.contains(key) && object[key].is_number_integer() ? object[key].get<int>() : fallback;
}

}  // namespace

RlResult simulate_rl_iteration(const json& document, const std::string& origin, const std::filesystem::path& base_dir,
                               const hardware::Catalog& catalog, bool allow_oom) {
  RlResult result;
  result.spec = read_rl_spec(document, origin);
  const RlSpec& spec = result.spec;
  result.name = document.value("name", std::filesystem::path(origin).stem().string());
  if (!document.contains("cluster") || !document.contains("model") || !document.contains("parallelism") ||
      !document.contains("training") || !document["training"].is_object()) {
    throw InputError(origin + ": an RL scenario needs cluster, model, parallelism (the trainer's layout) and training sections");
  }
  if (document["training"].contains("packing")) {
    throw InputError(origin + ": /training/packing: no such key with workload \"rl\" (the samples are packed from "
                     "rl.prompt_tokens and rl.response_tokens; rl.packing_efficiency sets how full a row is)");
  }
  const json expanded = workload::expand_cluster(document["cluster"], origin, base_dir);
  const auto whole = topology::cluster_from_json(expanded, origin + ": /cluster", "cluster", catalog);
  const bool ultraserver = whole.ultraserver.has_value();
  const int domain_nodes = ultraserver ? whole.nvlink_domain_nodes : 1;
  if (spec.nodes > whole.nodes) {
    throw InputError(origin + ": /rl/nodes = " + std::to_string(spec.nodes) + ": the cluster has " + std::to_string(whole.nodes) +
                     " instances (expected at most that)");
  }
  const int job_nodes = spec.nodes > 0 ? spec.nodes : whole.nodes;
  result.nodes = job_nodes;
  result.total_gpus = job_nodes * whole.gpus_per_node;
  result.gpu = whole.gpu.name;
  result.instance_type = whole.instance.name;
  if (whole.instance.usd_per_hour) result.usd_per_hour = *whole.instance.usd_per_hour * job_nodes;

  // Which instances each role has. On UltraServer clusters a role runs on the racks that hold its
  // instances and uses only its own GPUs of them, spread over those racks as a training job of that size
  // is (the same count in each NVLink domain).
  int rollout_nodes = job_nodes, trainer_nodes = job_nodes;
  if (spec.placement == Placement::disaggregated) {
    rollout_nodes = spec.rollout_nodes;
    trainer_nodes = job_nodes - rollout_nodes;
    if (trainer_nodes < 1) {
      throw InputError(origin + ": /rl/rollout/nodes = " + std::to_string(spec.rollout_nodes) + ": the job has " + std::to_string(job_nodes) +
                       " instances and the trainer needs at least one of them (expected fewer rollout nodes, or more nodes)");
    }
  }
  result.rollout_gpus = rollout_nodes * whole.gpus_per_node;
  result.trainer_gpus = trainer_nodes * whole.gpus_per_node;

  // The rollout: every prompt's group of responses, offline (all at once), on the rollout's replicas.
  result.rollout_tp = int_in(spec.rollout, "tensor_parallel_size", 1);
  result.rollout_pp = int_in(spec.rollout, "pipeline_parallel_size", 1);
  const int per_replica = std::max(1, result.rollout_tp * result.rollout_pp);
  const int rollout_replicas = result.rollout_gpus / per_replica;
  if (rollout_replicas < 1) {
    throw InputError(origin + ": /rl/rollout/tensor_parallel_size: a rollout replica of " + std::to_string(per_replica) +
                     " GPUs does not fit the rollout's " + std::to_string(result.rollout_gpus) + " GPUs");
  }
  json serving = spec.rollout;
  serving["replicas"] = rollout_replicas;
  // With a lag of k >= 1 iterations the rollout never drains: the engine keeps generating the next
  // iterations' prompts while the last responses of one finish (async GRPO's replay buffer), so an
  // iteration costs its share of k + 1 iterations generated back to back, one long tail among them.
  const int iterations_in_flight = spec.placement == Placement::disaggregated && spec.staleness > 0 ? spec.staleness + 1 : 1;
  const json rollout_doc = {{"name", result.name + "-rollout"},
                            {"cluster", cluster_with(expanded, ultraserver, rollout_nodes, domain_nodes)},
                            {"model", document["model"]},
                            {"serving", serving},
                            {"workload",
                             {{"arrival", "offline"},
                              {"requests", spec.samples() * iterations_in_flight},
                              {"input_tokens", spec.prompt_tokens},
                              {"output_tokens", spec.response_tokens},
                              {"seed", spec.seed}}}};
  spdlog::info("{}: rollout of {} responses on {} replicas", result.name, spec.samples(), rollout_replicas);
  const ServeRun rollout = run_offline(rollout_doc, origin + " (rl.rollout as a serving scenario: rl.prompt_tokens and "
                                                              "rl.response_tokens are its workload's input_tokens and output_tokens)",
                                       base_dir, catalog);
  result.rollout_replicas = rollout.replicas;
  result.phases.generation_s = rollout.end_s / iterations_in_flight;
  result.phases.generation_tail_s = rollout.tail_s / iterations_in_flight;
  result.generation_output_tokens_per_s = rollout.output_tokens_per_s;
  result.mean_prompt_tokens = rollout.mean_input;
  result.mean_response_tokens = rollout.mean_output;
  const double sequence_tokens = rollout.mean_input + rollout.mean_output;

  // The update: the samples packed into rows of seq_length, split into mini-batches.
  json train = document;
  train.erase("rl");
  train["cluster"] = cluster_with(expanded, ultraserver, trainer_nodes, domain_nodes);
  const json& par = train["parallelism"];
  result.trainer_tp = int_in(par, "tensor_model_parallel_size", 1);
  result.trainer_pp = int_in(par, "pipeline_model_parallel_size", 1);
  const int cp = int_in(par, "context_parallel_size", 1);
  const int micro = int_in(par, "micro_batch_size", 1);
  const int model_parallel = std::max(1, result.trainer_tp * result.trainer_pp * cp);
  const int dp = int_in(par, "data_parallel_size", result.trainer_gpus / model_parallel);
  if (dp < 1) {
    throw InputError(origin + ": /parallelism: the trainer's " + std::to_string(result.trainer_gpus) + " GPUs cannot hold TP x PP x CP = " +
                     std::to_string(model_parallel) + " (expected a smaller layout, or fewer rollout nodes)");
  }
  if (static_cast<long long>(dp) * model_parallel > result.trainer_gpus) {
    throw InputError(origin + ": /parallelism/data_parallel_size = " + std::to_string(dp) + ": TP x PP x CP x DP = " +
                     std::to_string(static_cast<long long>(dp) * model_parallel) + " GPUs, more than the trainer's " +
                     std::to_string(result.trainer_gpus) + " (expected at most " + std::to_string(result.trainer_gpus / model_parallel) + ")");
  }
  result.trainer_dp = dp;
  // The trainer's world is its own GPUs, also where its cluster (whole racks) holds more.
  train["parallelism"]["data_parallel_size"] = dp;
  result.seq_length = int_in(train["training"], "seq_length", 0);
  if (result.seq_length < 1) throw InputError(origin + ": /training/seq_length: the packed row length (tokens) the update trains on");
  if (sequence_tokens > result.seq_length) {
    throw InputError(origin + ": /training/seq_length = " + std::to_string(result.seq_length) + ": the samples average " +
                     std::to_string(static_cast<long long>(std::lround(sequence_tokens))) +
                     " tokens (prompt + response), more than a row holds (expected a seq_length of at least that)");
  }
  // The tokens a sample occupies in the update and the forward passes: its own (packed), or the longest
  // sample's (unpacked: the batch is padded to it), which seq_length bounds (the recipes' max total
  // sequence length, the engine's max_model_len: a response stops there). Megatron pads a row to a
  // multiple of TP x CP (x 2 with CP's load-balanced halves) for sequence and context parallelism.
  const double pad_multiple = static_cast<double>(result.trainer_tp) * cp * (cp > 1 ? 2 : 1);
  const double padded_tokens = spec.sequence_packing ? sequence_tokens
                                                     : std::min(std::ceil(rollout.max_sequence / pad_multiple) * pad_multiple,
                                                                static_cast<double>(result.seq_length));
  result.sample_row_tokens = padded_tokens;
  const double rows = spec.sequence_packing ? std::ceil(static_cast<double>(spec.samples()) * sequence_tokens / (result.seq_length * spec.packing_efficiency))
                                            : static_cast<double>(spec.samples());
  const double quantum = static_cast<double>(micro) * dp;
  result.packed_rows_per_step = static_cast<int>(std::max(1.0, std::ceil(rows / spec.mini_batches / quantum)) * quantum);
  train["parallelism"]["global_batch_size"] = result.packed_rows_per_step;
  train["training"]["workload"] = "sft";
  if (spec.sequence_packing) {
    train["training"]["packing"] = {{"mean_sequence_length", sequence_tokens}, {"packing_efficiency", spec.packing_efficiency}};
  } else {
    train["training"]["seq_length"] = static_cast<int>(padded_tokens);  // one sample per row, padded to the longest
  }
  const workload::Scenario update = workload::scenario_from_json(train, origin + " (the policy update)", base_dir, catalog);
  const auto memory = workload::estimate_memory(update);
  result.trainer_memory_bytes = memory.peak.total_bytes;
  result.hbm_bytes = memory.hbm_bytes;
  if (memory.oom && !allow_oom) {
    throw InputError(origin + ": the policy update does not fit: " + workload::describe_oom(memory) +
                     " (more TP/PP, recompute or a larger GPU would; --allow-oom simulates anyway)");
  }
  auto trainer_cluster = topology::build_cluster_graph(update.cluster);
  const auto trainer_gpus = topology::place_ranks(trainer_cluster, update.parallelism.world(), update.placement, update.seed);
  const auto trace = workload::build_trace(update, trainer_gpus, update.fidelity == workload::Fidelity::full);
  result.update_step_s = training::simulate_step(trace, trainer_cluster).step_time_s;
  result.update_steps = spec.mini_batches * spec.epochs * spec.update_models();
  result.phases.update_s = result.update_step_s * result.update_steps;

  // Forward passes: a prefill of every sample on the trainer's GPUs at its TP x PP, and the LM head over
  // every token.
  const std::string precision = train["training"].value("precision", std::string("bf16"));
  // Megatron's forward-only schedule streams micro-batches through the pipeline (its bubble is small over
  // thousands of samples); the serving replica model runs its stages in turn, so the pass is priced at
  // TP alone where the weights fit that way (under half of HBM), at the trainer's TP x PP otherwise.
  // A MoE trainer's experts stay spread over its expert-parallel ranks: with EP > TP the pass runs as a
  // serving replica of EP ranks with the experts over all of them and attention data-parallel (every
  // rank whole attention for its own samples: the same work per rank as Megatron's attention at TP).
  const auto counts = workload::count_parameters(update.model);
  const double parameters = counts.total;
  const int ep = update.model.is_moe() ? std::max(1, int_in(par, "expert_model_parallel_size", 1)) : 1;
  const bool expert_replica = ep > result.trainer_tp;
  const int forward_tp = expert_replica ? ep : result.trainer_tp;
  const double expert_parameters = counts.expert_per_moe_layer * update.model.moe_layers();
  const double element_bytes = precision == "fp8" ? 1.0 : precision == "fp4" ? 0.5625 : 2.0;
  const double weight_bytes_per_gpu = expert_replica ? element_bytes * ((parameters - expert_parameters) + expert_parameters / forward_tp)
                                                     : element_bytes * parameters / forward_tp;
  const int forward_pp = weight_bytes_per_gpu < 0.5 * update.cluster.gpu.hbm_bytes ? 1 : result.trainer_pp;
  const int forward_replicas = std::max(1, result.trainer_gpus / (forward_tp * forward_pp));
  json forward_serving = {{"precision", precision == "fp8" || precision == "fp4" ? precision : std::string("bf16")},
                          {"tensor_parallel_size", forward_tp},
                          {"pipeline_parallel_size", forward_pp},
                          {"replicas", forward_replicas},
                          // The trainer's forward passes run Megatron's grouped GEMMs (priced as training
                          // prices them), not a serving engine's fused MoE kernels.
                          {"moe_backend", "grouped_gemm"}};
  if (expert_replica) {
    forward_serving["enable_expert_parallel"] = true;
    forward_serving["data_parallel_attention"] = true;
  }
  const json forward_doc = {
      {"name", result.name + "-forward"},
      {"cluster", cluster_with(expanded, ultraserver, trainer_nodes, domain_nodes)},
      {"model", document["model"]},
      {"serving", forward_serving},
      {"workload",
       {{"arrival", "offline"},
        {"requests", spec.samples()},
        {"input_tokens", std::max(1L, std::lround(padded_tokens))},
        {"output_tokens", 1},
        {"seed", spec.seed}}}};
  const ServeRun forward = run_offline(forward_doc, origin + " (a forward pass over the samples on the trainer's layout)", base_dir, catalog);
  const auto& model = update.model;
  const compute::ComputeModel gpu_model(update.cluster.gpu);
  const double tokens_per_replica = static_cast<double>(spec.samples()) * padded_tokens / forward_replicas;
  // Each GPU's share of the LM head: its vocabulary slice at TP, or its own samples over the whole
  // vocabulary with data-parallel attention (the same work).
  const double vocab_slice = static_cast<double>(model.vocab) / forward_tp;
  const double lm_head_s = gpu_model.gemm_s({tokens_per_replica, vocab_slice, static_cast<double>(model.hidden)}, compute::MathPrecision::bf16) +
                           gpu_model.memory_s(2.0 * 4.0 * tokens_per_replica * vocab_slice);  // FP32 logits written, read by log-softmax
  result.forward_pass_s = forward.end_s + lm_head_s;
  result.phases.forward_s = result.forward_pass_s * spec.forward_passes();

  // Weight transfer: each rollout GPU receives a BF16 copy of the policy, whole tensors that it slices
  // (weight_sync full: NeMo RL, veRL, OpenRLHF), or only its shard (1 / (TP x PP); sharded).
  result.weight_bytes = weight_sync_bytes(parameters);
  const double received_bytes = spec.weight_sync == WeightSync::full ? result.weight_bytes : result.weight_bytes / per_replica;
  const int gpus_per_node = whole.gpus_per_node;
  if (spec.placement == Placement::colocated) {
    // Resharding in place: each GPU's bytes are gathered from the trainer's ranks that hold one full copy
    // between them (TP x PP x CP for the dense weights, and the expert-parallel group for the experts:
    // TP x PP x CP x EP GPUs of the trainer's first placement), then loaded into the engine.
    const int holders = std::min(result.trainer_gpus, model_parallel * std::max(1, int_in(par, "expert_model_parallel_size", 1)));
    if (holders > 1) {
      std::vector<int> group(trainer_gpus.begin(), trainer_gpus.begin() + std::min<std::size_t>(holders, trainer_gpus.size()));
      result.phases.weight_sync_s = collective_s(trainer_cluster, group, collectives::Op::all_gather, received_bytes);
    }
  } else {
    // The trainer broadcasts GPU k's bytes (shard k, or every tensor) to GPU k of every rollout replica, all at once, on
    // different rails. The trainer's first NVLink domain takes part with as many GPUs as the rollout
    // has in each of its domains (at the same local positions, each holding the weights), as NCCL's
    // communicators need the same rank count in every domain.
    const auto cluster = topology::build_cluster_graph(whole);  // both pools: the trainer's graph holds only its own nodes
    const int domain_gpus = gpus_per_node * whole.nvlink_domain_nodes;
    // On UltraServer clusters the rollout shares the trainer's rack when both fit in one, starts on the
    // rack after the trainer's where the cluster has room for that, and otherwise right after the trainer's
    // instances (sharing the rack at the boundary).
    const int trainer_racks = (trainer_nodes + domain_nodes - 1) / domain_nodes;
    const int rollout_racks = (rollout_nodes + domain_nodes - 1) / domain_nodes;
    const bool shared_rack = !ultraserver || trainer_nodes + rollout_nodes <= domain_nodes;
    const bool own_racks = !shared_rack && trainer_racks + rollout_racks <= whole.nvlink_domains();
    const int first_rollout_gpu = own_racks ? trainer_racks * domain_gpus : result.trainer_gpus;
    const int trainer_in_domain = std::min(domain_gpus, result.trainer_gpus / std::max(1, own_racks ? trainer_racks : 1));
    // A pipelined broadcast where NCCL's communicator cannot span the group evenly: from a trainer GPU to
    // the first receiver, then along the receivers, at the slowest hop's bandwidth.
    auto chain_s = [&](const std::vector<int>& receivers) {
      const int sender_domain = cluster.domain_of_node(cluster.node_of_gpu(0));
      const bool crosses = std::any_of(receivers.begin(), receivers.end(),
                                       [&](int gpu) { return cluster.domain_of_node(cluster.node_of_gpu(gpu)) != sender_domain; });
      const double link_Bps = crosses ? whole.rail_bandwidth_Bps() : whole.gpu.nvlink_bandwidth_per_direction_Bps;
      const double latency_s = crosses ? whole.network.message_latency_s : whole.nvlink.message_latency_s;
      return static_cast<double>(receivers.size()) * latency_s + received_bytes / link_Bps;
    };
    double slowest = 0;
    for (int k = 0; k < per_replica; ++k) {
      std::vector<int> receivers;  // GPU k of every replica, where serving placed it
      for (const auto& gpus : rollout.replica_gpus) receivers.push_back(first_rollout_gpu + gpus.at(static_cast<std::size_t>(k)));
      std::vector<int> group;
      bool even = true;
      for (int gpu : receivers) {
        const int offset = gpu - first_rollout_gpu;  // the same offsets in the trainer's first domain
        if (offset >= domain_gpus) continue;
        if (offset < trainer_in_domain && offset < first_rollout_gpu) {
          group.push_back(offset);
        } else {
          even = false;  // a rollout GPU with no trainer GPU at its position
        }
      }
      group.insert(group.end(), receivers.begin(), receivers.end());
      // NCCL's broadcast where its communicator spans the domains evenly, else the chain.
      const bool broadcast = even && group.size() > receivers.size() && collectives::spans_domains_evenly(cluster, group);
      const double s_k = broadcast ? collective_s(cluster, group, collectives::Op::broadcast, received_bytes) : chain_s(receivers);
      slowest = std::max(slowest, s_k);
    }
    result.phases.weight_sync_s = slowest;
  }
  // Colocated with offload: the trainer's weights, gradients and optimizer state leave HBM for the
  // rollout and come back for the update, over the host link.
  // The rollout engine sleeps while the trainer runs (vLLM's sleep level 1, as veRL and NeMo RL use it:
  // its weights to host memory, its KV cache dropped) and wakes for the next rollout (the weights back).
  if (spec.placement == Placement::colocated && spec.offload) {
    result.handover_bytes_per_gpu = memory.peak.weights_bytes + memory.peak.gradients_bytes + memory.peak.optimizer_bytes +
                                    rollout.weight_bytes_per_gpu;
    result.phases.handover_s = 2.0 * result.handover_bytes_per_gpu / whole.instance.host_gpu_bandwidth_Bps;
  }
  // A host-resident KL reference: for its forward pass the policy's weights go out and the reference's
  // come in, and after it the policy's come back: three copies of a weight shard over the host link.
  if (spec.reference_on_host) {
    result.reference_swap_s = 3.0 * memory.peak.weights_bytes / whole.instance.host_gpu_bandwidth_Bps;
    result.phases.forward_s += result.reference_swap_s;
  }
  result.timing = compose_iteration(result.phases, spec.placement, spec.staleness);
  return result;
}

}  // namespace fmsim::rl
