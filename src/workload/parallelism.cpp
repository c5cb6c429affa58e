// Reading and validating the parallel strategy (Megatron-Core argument names).
#include "fmsim/workload/parallelism.hpp"

#include <algorithm>
#include <cstdint>

#include "fmsim/common/error.hpp"
#include "fmsim/compute/compute_model.hpp"
#include "fmsim/workload/pipeline_layout.hpp"
#include "fmsim/workload/pipeline_schedule.hpp"

namespace fmsim::workload {

using config::ObjectReader;

namespace {
/// Virtual pipeline stages per rank: no model has more layers than this.
constexpr std::int64_t kMaxVirtualStages = 4096;
/// Tokens of one micro-batch (micro_batch_size x seq_length): far above any real run, within an int.
constexpr std::int64_t kMaxMicroBatchTokens = std::int64_t{1} << 30;
/// Megatron-Core's rules between the layout options (transformer_config.py __post_init__): a layout
/// excludes the other options and sets the virtual stages when they are not given.
void read_layout_options(ObjectReader& r, Parallelism& p) {
  const bool uneven = p.first_stage_layers > 0 || p.last_stage_layers > 0;
  const bool accounted = p.account_for_embedding || p.account_for_loss;
  if (uneven && accounted) {
    r.fail(p.first_stage_layers > 0 ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
           "not together with account_for_embedding/loss_in_pipeline_split (Megatron rejects both)");
  }
  if (p.layout.empty()) return;
  if (uneven || accounted) {
    r.fail("pipeline_model_parallel_layout", "no num_layers_in_first/last_pipeline_stage or account_for_embedding/"
                                             "loss_in_pipeline_split beside a layout (Megatron rejects both)");
  }
  // Megatron takes the virtual stages from the layout when they are not given (the stage count is
  // checked against PP x VP with the layers in validate()).
  if (r.has("virtual_pipeline_model_parallel_size") && !r.required_value("virtual_pipeline_model_parallel_size").is_null()) return;
  const int stages = pipeline_layout_stage_count(p.layout, r.file() + ": " + r.path_of("pipeline_model_parallel_layout"));
  if (stages % p.pp != 0) {
    r.fail("pipeline_model_parallel_layout", "a pipeline layout whose stages (" + std::to_string(stages) +
                                                 ") are a multiple of pipeline_model_parallel_size " + std::to_string(p.pp));
  }
  p.vp = stages / p.pp;
}

}  // namespace

Parallelism read_parallelism(ObjectReader& r, int gpus) {
  Parallelism p;
  // No parallel size can exceed the GPUs of the cluster; capping each at that keeps every product of them
  // (TP x PP x CP, EP x ETP) well inside 64-bit arithmetic, and the int casts exact.
  const auto size = [&r, gpus](const std::string& key, std::int64_t fallback) {
    const auto value = r.int_or(key, fallback, 1);
    if (value > std::max(1, gpus)) r.fail(key, "an integer >= 1 and at most the cluster's " + std::to_string(gpus) + " GPUs");
    return static_cast<int>(value);
  };
  p.tp = size("tensor_model_parallel_size", 1);
  p.pp = size("pipeline_model_parallel_size", 1);
  p.vp = r.has("virtual_pipeline_model_parallel_size") && r.required_value("virtual_pipeline_model_parallel_size").is_null()
             ? 1
             : static_cast<int>(r.int_or("virtual_pipeline_model_parallel_size", 1, 1, kMaxVirtualStages));
  p.cp = size("context_parallel_size", 1);
  p.ep = size("expert_model_parallel_size", 1);
  p.etp = size("expert_tensor_parallel_size", p.tp);
  p.sequence_parallel = r.bool_or("sequence_parallel", p.tp > 1);
  p.micro_batch = static_cast<int>(r.int_or("micro_batch_size", 1, 1));
  p.global_batch = static_cast<int>(r.required_int("global_batch_size", 1));
  const bool distributed_optimizer = r.bool_or("use_distributed_optimizer", true);
  const std::string sharding = r.choice_or("data_parallel_sharding_strategy",
                                           {"no_shard", "optim", "optim_grads", "optim_grads_params"},
                                           distributed_optimizer ? "optim" : "no_shard");
  p.sharding = sharding == "no_shard" ? Sharding::no_shard
               : sharding == "optim"  ? Sharding::optim
               : sharding == "optim_grads" ? Sharding::optim_grads
                                           : Sharding::optim_grads_params;
  const std::string cp_comm = r.choice_or("cp_comm_type", {"p2p", "all_gather", "a2a"}, "p2p");
  p.cp_comm = cp_comm == "p2p" ? CpCommType::p2p : cp_comm == "all_gather" ? CpCommType::all_gather : CpCommType::a2a;
  p.account_for_embedding = r.bool_or("account_for_embedding_in_pipeline_split", false);
  p.account_for_loss = r.bool_or("account_for_loss_in_pipeline_split", false);
  p.layout = r.string_or("pipeline_model_parallel_layout", "");
  p.first_stage_layers = static_cast<int>(r.int_or("num_layers_in_first_pipeline_stage", 0, 1, 1 << 14));
  p.last_stage_layers = static_cast<int>(r.int_or("num_layers_in_last_pipeline_stage", 0, 1, 1 << 14));
  read_layout_options(r, p);
  const std::int64_t model_parallel = std::int64_t{p.tp} * p.pp * p.cp;
  if (r.has("data_parallel_size")) {
    // A job on part of the cluster (64 GPUs of a 72-GPU NVL72, 256 GPUs over four racks): the job is
    // TP x PP x CP x DP GPUs, placed by the placement policy; the other GPUs stay idle.
    p.dp = static_cast<int>(r.required_int("data_parallel_size", 1));
    if (static_cast<long long>(model_parallel) * p.dp > gpus) {
      r.fail("data_parallel_size", "a job that fits the cluster: TP x PP x CP x DP = " + std::to_string(p.tp) + " x " +
                                       std::to_string(p.pp) + " x " + std::to_string(p.cp) + " x " +
                                       std::to_string(p.dp) + " = " + std::to_string(static_cast<long long>(model_parallel) * p.dp) +
                                       " GPUs, the cluster has " + std::to_string(gpus) + " (at most " +
                                       std::to_string(gpus / model_parallel) + ")");
    }
  } else {
    if (gpus % model_parallel != 0) {
      throw InputError(r.file() + ": " + r.path_of("tensor_model_parallel_size") + ": " + std::to_string(gpus) +
                       " GPUs are not divisible by TP x PP x CP = " + std::to_string(p.tp) + " x " + std::to_string(p.pp) +
                       " x " + std::to_string(p.cp) + " = " + std::to_string(model_parallel) +
                       " (or give data_parallel_size to use part of the cluster)");
    }
    p.dp = static_cast<int>(gpus / model_parallel);
  }
  if (p.global_batch % (std::int64_t{p.micro_batch} * p.dp) != 0) {
    throw InputError(r.file() + ": " + r.path_of("global_batch_size") + " = " + std::to_string(p.global_batch) +
                     ": expected a multiple of micro_batch_size x data parallel size = " + std::to_string(p.micro_batch) +
                     " x " + std::to_string(p.dp) + " = " + std::to_string(std::int64_t{p.micro_batch} * p.dp));
  }
  p.microbatches = static_cast<int>(p.global_batch / (std::int64_t{p.micro_batch} * p.dp));
  r.reject_unknown_keys();
  return p;
}

TrainingOptions read_training(ObjectReader& r) {
  TrainingOptions t;
  t.seq = static_cast<int>(r.int_or("seq_length", 4096, 1));
  const std::string precision = r.choice_or("precision", {"bf16", "fp8", "fp4"}, "bf16");
  t.precision = precision == "fp8" ? Precision::fp8 : precision == "fp4" ? Precision::fp4 : Precision::bf16;
  const bool fp8 = t.precision == Precision::fp8;
  if (r.has("fp8_recipe") && !fp8) r.fail("fp8_recipe", "only with precision = \"fp8\"");
  const std::string recipe = r.choice_or("fp8_recipe", {"tensorwise", "delayed", "mxfp8"}, "tensorwise");
  t.fp8_recipe = recipe == "delayed" ? Fp8Recipe::delayed : recipe == "mxfp8" ? Fp8Recipe::mxfp8 : Fp8Recipe::tensorwise;
  if (r.has("fp4_recipe") && t.precision != Precision::fp4) r.fail("fp4_recipe", "only with precision = \"fp4\"");
  t.fp4_recipe = r.choice_or("fp4_recipe", {"nvfp4", "mxfp4"}, "nvfp4") == "mxfp4" ? Fp4Recipe::mxfp4 : Fp4Recipe::nvfp4;
  if (r.has("first_last_layers_bf16") && t.precision == Precision::bf16) {
    r.fail("first_last_layers_bf16", "only with precision = \"fp8\" or \"fp4\"");
  }
  t.first_last_layers_bf16 = r.bool_or("first_last_layers_bf16", false);
  for (const char* key : {"num_layers_at_start_in_bf16", "num_layers_at_end_in_bf16"}) {
    if (r.has(key) && !t.first_last_layers_bf16) r.fail(key, "only with first_last_layers_bf16 = true");
  }
  t.layers_at_start_in_bf16 = static_cast<int>(r.int_or("num_layers_at_start_in_bf16", 1, 0));
  t.layers_at_end_in_bf16 = static_cast<int>(r.int_or("num_layers_at_end_in_bf16", 1, 0));
  if (r.has("keep_mtp_spec_in_bf16") && t.precision == Precision::bf16) {
    r.fail("keep_mtp_spec_in_bf16", "only with precision = \"fp8\" or \"fp4\"");
  }
  t.keep_mtp_in_bf16 = r.bool_or("keep_mtp_spec_in_bf16", false);
  const std::string recompute = r.choice_or("recompute_granularity", {"none", "selective", "full"}, "none");
  t.recompute = recompute == "none" ? Recompute::none : recompute == "selective" ? Recompute::selective : Recompute::full;
  if (r.has("recompute_modules")) {
    if (t.recompute != Recompute::selective) r.fail("recompute_modules", "only with recompute_granularity = \"selective\"");
    const auto& list = r.required_value("recompute_modules");
    const std::string modelled = "a list of core_attn, layernorm, moe_act, mlp, mla_up_proj, moe";
    if (!list.is_array() || list.empty()) r.fail("recompute_modules", modelled);
    t.recompute_modules = RecomputeModules{false, false, false, false, false, false};
    for (const auto& item : list) {
      const std::string name = item.is_string() ? item.get<std::string>() : "";
      if (name == "core_attn") t.recompute_modules.core_attn = true;
      else if (name == "layernorm") t.recompute_modules.layernorm = true;
      else if (name == "moe_act") t.recompute_modules.moe_act = true;
      else if (name == "mlp") t.recompute_modules.mlp = true;
      else if (name == "mla_up_proj") t.recompute_modules.mla_up_proj = true;
      else if (name == "moe") t.recompute_modules.moe = true;
      else r.fail("recompute_modules", modelled + " (" + config::render_value(item) + " is not modelled)");
    }
  }
  t.overlap_grad_reduce = r.bool_or("overlap_grad_reduce", true);
  t.overlap_param_gather = r.bool_or("overlap_param_gather", true);
  t.tp_comm_overlap = r.bool_or("tp_comm_overlap", false);
  t.overlap_moe_expert_parallel_comm = r.bool_or("overlap_moe_expert_parallel_comm", false);
  t.moe_shared_expert_overlap = r.bool_or("moe_shared_expert_overlap", false);
  t.delay_wgrad_compute = r.bool_or("delay_wgrad_compute", t.overlap_moe_expert_parallel_comm);
  if (t.delay_wgrad_compute && !t.overlap_moe_expert_parallel_comm) {
    r.fail("delay_wgrad_compute", "false unless overlap_moe_expert_parallel_comm is true (the delayed weight gradients "
                                  "overlap its all-to-alls)");
  }
  t.moe_dispatcher = r.choice_or("moe_token_dispatcher_type", {"alltoall", "flex"}, "alltoall") == "flex" ? MoeDispatcher::flex
                                                                                                       : MoeDispatcher::alltoall;
  // DeepEP and HybridEP move the same token copies; HybridEP adds its probability rows (moe_ops.cpp,
  // docs/model.md). They also differ in the SMs their kernels hold,
  // Megatron-Core's moe_deepep_num_sms (default 20) and moe_hybridep_num_sms (default 16).
  std::string backend = "deepep";
  if (r.has("moe_flex_dispatcher_backend")) {
    if (t.moe_dispatcher != MoeDispatcher::flex) r.fail("moe_flex_dispatcher_backend", "only with moe_token_dispatcher_type = \"flex\"");
    backend = r.choice_or("moe_flex_dispatcher_backend", {"deepep", "hybridep"}, "deepep");
  }
  for (const char* key : {"moe_deepep_num_sms", "moe_hybridep_num_sms"}) {
    if (r.has(key) && t.moe_dispatcher != MoeDispatcher::flex) r.fail(key, "only with moe_token_dispatcher_type = \"flex\"");
  }
  const int deepep_sms = static_cast<int>(r.int_or("moe_deepep_num_sms", 20, 1));
  const int hybridep_sms = static_cast<int>(r.int_or("moe_hybridep_num_sms", 16, 1));
  t.moe_flex_hybridep = backend == "hybridep";
  t.moe_dispatcher_sms = t.moe_dispatcher == MoeDispatcher::alltoall ? compute::kNcclAllToAllSms
                         : t.moe_flex_hybridep                         ? hybridep_sms
                                                                       : deepep_sms;
  read_token_drop(r, t);
  read_cuda_graphs(r, t);
  t.grad_reduce_in_fp32 = r.bool_or("grad_reduce_in_fp32", false);
  t.fp8_param_gather = r.bool_or("fp8_param_gather", false);
  t.disable_parameter_transpose_cache = r.bool_or("disable_parameter_transpose_cache", false);
  t.fp8_dot_product_attention = r.bool_or("fp8_dot_product_attention", false);
  t.te_op_fuser = r.bool_or("use_transformer_engine_op_fuser", false);
  t.bucket_params = r.number_or("bucket_size", 0.0, -1.0);
  // Runs: at most 1e16 tokens (several hundred times today's largest) and a billion steps, so that the
  // step count and the run's seconds stay exact in 64-bit arithmetic.
  if (r.has("total_tokens")) t.total_tokens = r.required_number("total_tokens", 0.0);
  if (t.total_tokens > 1e16) r.fail("total_tokens", "a token count > 0 and at most 1e16");
  if (r.has("train_iters")) t.train_iters = r.required_int("train_iters", 1, 1000000000);
  if (t.total_tokens > 0 && t.train_iters > 0) r.fail("train_iters", "either total_tokens or train_iters, not both");
  t.fine_tuning = read_fine_tuning(r, t.seq);
  if (r.has("mtp_num_layers")) t.mtp_num_layers = static_cast<int>(r.int_or("mtp_num_layers", 0, 0, 64));
  r.reject_unknown_keys();
  return t;
}

void validate(const Parallelism& p, const TrainingOptions& t, const ModelSpec& m, const hardware::GpuSpec& gpu,
              const std::string& where) {
  auto fail = [&](const std::string& key, int value, const std::string& why) {
    throw InputError(where + ": " + key + " = " + std::to_string(value) + ": " + why);
  };
  // One micro-batch's tokens are an int in the op graph: 65536 x 65536 overflowed it (signed overflow,
  // 0 tokens and an MFU of 267,000,000 %).
  const std::int64_t micro_batch_tokens = std::int64_t{p.micro_batch} * t.seq;
  if (micro_batch_tokens > kMaxMicroBatchTokens) {
    fail("/parallelism/micro_batch_size", p.micro_batch,
         "gives micro_batch_size x seq_length = " + std::to_string(micro_batch_tokens) +
             " tokens per micro-batch; expected at most 1073741824 (2^30)");
  }
  const std::string tp_key = "/parallelism/tensor_model_parallel_size";
  if (m.heads % p.tp != 0) fail(tp_key, p.tp, "does not divide the model's " + std::to_string(m.heads) + " attention heads");
  if (!m.mla && m.kv_heads % p.tp != 0) {
    fail(tp_key, p.tp, "does not divide the model's " + std::to_string(m.kv_heads) + " key/value heads (num_query_groups)");
  }
  if (m.ffn % p.tp != 0) fail(tp_key, p.tp, "does not divide the MLP intermediate size " + std::to_string(m.ffn));
  if (m.hybrid.enabled()) validate_hybrid_parallelism(p, m, where);
  if (m.hybrid.enabled() && m.mtp_layers > 0 && m.hybrid.mtp_layers.empty()) {
    const std::string key = t.mtp_num_layers >= 0 ? "/training/mtp_num_layers" : "/model/num_nextn_predict_layers";
    fail(key, m.mtp_layers, "a hybrid model's MTP depths run the layers of its MTP pattern, and the model has none "
                            "(give mtp_hybrid_override_pattern in its config.json, e.g. \"*E\")");
  }
  // A layout may hold stages without layers; account_for_embedding/loss_in_pipeline_split count the
  // embedding and the loss as one layer each (Megatron-Core's split), so a stage may hold only one of them.
  const int slots = m.layers + (p.account_for_embedding ? 1 : 0) + (p.account_for_loss ? 1 : 0);
  if (p.layout.empty() && std::int64_t{p.pp} * p.vp > slots) {
    fail("/parallelism/pipeline_model_parallel_size", p.pp,
         "x virtual stages " + std::to_string(p.vp) + " exceeds the model's " + std::to_string(m.layers) + " layers" +
             (slots > m.layers ? " (with the embedding and loss counted: " + std::to_string(slots) + ")" : ""));
  }
  pipeline_stages(m.layers, m.mtp_layers, p, where + ": /parallelism/pipeline_model_parallel_layout");
  validate_fine_tuning(t.fine_tuning, m, where);
  if (t.recompute == Recompute::selective && t.recompute_modules.mla_up_proj && !m.mla) {
    throw InputError(where + ": /training/recompute_modules: mla_up_proj needs a model with multi-head latent attention "
                             "(kv_lora_rank)");
  }
  if (t.moe_dispatcher == MoeDispatcher::flex && t.moe_dispatcher_sms >= gpu.sm_count) {
    fail(t.moe_flex_hybridep ? "/training/moe_hybridep_num_sms" : "/training/moe_deepep_num_sms", t.moe_dispatcher_sms,
         "leaves none of the " + gpu.name + "'s " + std::to_string(gpu.sm_count) + " SMs for compute");
  }
  if (p.vp > 1 && p.pp == 1) fail("/parallelism/virtual_pipeline_model_parallel_size", p.vp, "needs pipeline_model_parallel_size > 1");
  if (p.vp > 1 && p.microbatches < p.pp) {
    fail("/parallelism/global_batch_size", p.global_batch,
         "gives " + std::to_string(p.microbatches) + " micro-batches per pipeline; the interleaved schedule needs at least "
         "pipeline_model_parallel_size = " + std::to_string(p.pp));
  }
  if (p.vp > 1 && p.microbatches % p.pp != 0) {
    // Megatron's get_schedule_table rejects a remainder smaller than the group size (pp).
    fail("/parallelism/global_batch_size", p.global_batch,
         "gives " + std::to_string(p.microbatches) + " micro-batches per pipeline, not a multiple of "
         "pipeline_model_parallel_size = " + std::to_string(p.pp) + " (the interleaved schedule needs it)");
  }
  if (p.sequence_parallel && p.tp > 1 && t.seq / p.cp % p.tp != 0) {
    fail("/training/seq_length", t.seq, "must be divisible by context x tensor parallel size for sequence parallelism");
  }
  if (p.cp > 1 && t.seq % (2 * p.cp) != 0) {
    fail("/training/seq_length", t.seq, "must be divisible by 2 x context_parallel_size (load-balanced chunks)");
  }
  if (p.ep > 1 && !m.is_moe()) fail("/parallelism/expert_model_parallel_size", p.ep, "needs a mixture-of-experts model");
  if (m.is_moe()) {
    if (m.moe.experts % p.ep != 0) {
      fail("/parallelism/expert_model_parallel_size", p.ep, "does not divide the model's " + std::to_string(m.moe.experts) + " experts");
    }
    if ((std::int64_t{p.tp} * p.cp * p.dp) % (std::int64_t{p.ep} * p.etp) != 0) {
      fail("/parallelism/expert_model_parallel_size", p.ep,
           "x expert_tensor_parallel_size " + std::to_string(p.etp) + " must divide TP x CP x DP = " +
               std::to_string(p.tp * p.cp * p.dp));
    }
    if (m.moe.expert_ffn % p.etp != 0) {
      fail("/parallelism/expert_tensor_parallel_size", p.etp, "does not divide the expert intermediate size " + std::to_string(m.moe.expert_ffn));
    }
  }
  if (t.precision == Precision::fp4 && gpu.fp4_dense_flops <= 0) {
    throw InputError(where + ": /training/precision = \"fp4\": FP4 training needs Blackwell tensor cores (NVFP4/MXFP4); the " +
                     gpu.name + " (" + gpu.architecture + ") has none (use fp8 or bf16)");
  }
  if (t.fp8_param_gather && t.precision != Precision::fp8) {
    throw InputError(where + ": /training/fp8_param_gather = true: only with precision = \"fp8\" (Megatron-Bridge's NVFP4 "
                     "recipe gathers BF16 parameters)");
  }
  if (t.precision == Precision::fp8 && gpu.fp8_dense_flops <= 0) {
    throw InputError(where + ": /training/precision = \"fp8\": the " + gpu.name + " has no FP8 tensor cores (use bf16)");
  }
  const bool blackwell = gpu.architecture.rfind("blackwell", 0) == 0;
  if (t.precision == Precision::fp8 && t.fp8_recipe == Fp8Recipe::mxfp8 && !blackwell) {
    throw InputError(where + ": /training/fp8_recipe = \"mxfp8\": needs a Blackwell GPU (MXFP8 tensor cores); the " +
                     gpu.name + " is " + gpu.architecture + " (use tensorwise or delayed)");
  }
  validate_moe_options(t, m, where);
  if (t.moe_dispatcher == MoeDispatcher::flex && !m.is_moe()) {
    throw InputError(where + ": /training/moe_token_dispatcher_type = \"flex\": needs a mixture-of-experts model");
  }
  if (t.moe_shared_expert_overlap) {
    // Megatron-Bridge turns it off with the flex dispatcher (apply_flex_dispatcher_backend) and forbids it
    // with the EP all-to-all overlap (comm_overlap.py).
    const std::string key = where + ": /training/moe_shared_expert_overlap = true: ";
    if (m.moe.shared_ffn <= 0) throw InputError(key + "needs a model with shared experts (" + m.name + " has none)");
    if (t.moe_dispatcher == MoeDispatcher::flex) throw InputError(key + "needs the alltoall dispatcher (flex does not overlap the shared experts)");
    if (t.overlap_moe_expert_parallel_comm) throw InputError(key + "does not work with overlap_moe_expert_parallel_comm");
  }
  if (t.overlap_moe_expert_parallel_comm) {
    // Megatron-Bridge's checks (training/comm_overlap.py): EP all-to-alls to hide, the interleaved
    // schedule when pipelined, and no full recompute.
    const std::string key = where + ": /training/overlap_moe_expert_parallel_comm = true: ";
    if (!m.is_moe() || p.ep < 2) throw InputError(key + "needs a mixture-of-experts model with expert_model_parallel_size >= 2");
    if (p.pp > 1 && p.vp < 2) {
      throw InputError(key + "with pipeline_model_parallel_size > 1 it needs virtual_pipeline_model_parallel_size >= 2");
    }
    if (t.recompute == Recompute::full) throw InputError(key + "does not work with recompute_granularity = \"full\"");
  }
  if (t.tp_comm_overlap && (p.tp < 2 || !p.sequence_parallel)) {
    throw InputError(where + ": /training/tp_comm_overlap = true: needs tensor_model_parallel_size >= 2 and sequence_parallel");
  }
}

std::string to_string(Precision precision) {
  return precision == Precision::fp8 ? "fp8" : precision == Precision::fp4 ? "fp4" : "bf16";
}
std::string to_string(Fp4Recipe recipe) { return recipe == Fp4Recipe::mxfp4 ? "mxfp4" : "nvfp4"; }
std::string to_string(Fp8Recipe recipe) {
  return recipe == Fp8Recipe::delayed ? "delayed" : recipe == Fp8Recipe::mxfp8 ? "mxfp8" : "tensorwise";
}
std::string describe_precision(const TrainingOptions& t) {
  if (t.precision == Precision::bf16) return to_string(t.precision);
  std::string text = t.precision == Precision::fp8 ? "fp8 (" + to_string(t.fp8_recipe) : "fp4 (" + to_string(t.fp4_recipe);
  if (t.first_last_layers_bf16) {
    text += ", first " + std::to_string(t.layers_at_start_in_bf16) + " and last " + std::to_string(t.layers_at_end_in_bf16) +
            " layers in bf16";
  }
  return text + ")";
}
std::string describe_recompute(const TrainingOptions& t) {
  if (t.recompute != Recompute::selective) return to_string(t.recompute);
  std::string list;
  auto add = [&](bool on, const char* name) {
    if (on) list += (list.empty() ? "" : ", ") + std::string(name);
  };
  add(t.recompute_modules.core_attn, "core_attn");
  add(t.recompute_modules.layernorm, "layernorm");
  add(t.recompute_modules.moe_act, "moe_act");
  add(t.recompute_modules.mlp, "mlp");
  add(t.recompute_modules.moe, "moe");
  return "selective (" + list + ")";
}

std::string to_string(MoeDispatcher dispatcher) { return dispatcher == MoeDispatcher::flex ? "flex" : "alltoall"; }
std::string to_string(Recompute recompute) {
  return recompute == Recompute::none ? "none" : recompute == Recompute::selective ? "selective" : "full";
}
std::string to_string(Sharding sharding) {
  switch (sharding) {
    case Sharding::no_shard: return "no_shard";
    case Sharding::optim: return "optim";
    case Sharding::optim_grads: return "optim_grads";
    case Sharding::optim_grads_params: return "optim_grads_params";
  }
  return "optim";
}

}  // namespace fmsim::workload
