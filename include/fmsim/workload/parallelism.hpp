#pragma once
// The training strategy, with Megatron-Core names, and the derived sizes. Validation rejects the
// combinations Megatron rejects, with the reason.
#include <string>

#include "fmsim/config/object_reader.hpp"
#include "fmsim/hardware/catalog.hpp"
#include "fmsim/workload/model.hpp"
#include "fmsim/workload/workload_kind.hpp"

namespace fmsim::workload {

enum class Precision { bf16, fp8, fp4 };
/// Transformer Engine's FP8 scaling recipe (Megatron-Core `fp8_recipe`): per-tensor scales from the
/// tensor's own amax (`tensorwise`, "current scaling"), from an amax history (`delayed`), or E8M0
/// scales per 32 elements (`mxfp8`, Blackwell).
enum class Fp8Recipe { tensorwise, delayed, mxfp8 };
/// Transformer Engine's FP4 training recipe (Megatron-Core `fp4_recipe`): E2M1 values with E4M3 scales
/// per 16 elements and a per-tensor FP32 scale (`nvfp4`, NVFP4BlockScaling), or E8M0 scales per 32
/// (`mxfp4`). Blackwell only.
enum class Fp4Recipe { nvfp4, mxfp4 };
enum class Recompute { none, selective, full };
/// Megatron-FSDP data_parallel_sharding_strategy: no_shard (plain DDP), optim (ZeRO-1 = distributed
/// optimizer), optim_grads (ZeRO-2), optim_grads_params (ZeRO-3 / FSDP).
enum class Sharding { no_shard, optim, optim_grads, optim_grads_params };
enum class CpCommType { p2p, all_gather, a2a };
/// Megatron-Core moe_token_dispatcher_type: `alltoall` (NCCL all-to-all with separate permutations) or
/// `flex` (DeepEP / HybridEP: one send per destination NVLink domain, permutation fused, reduction in the
/// combine kernel).
enum class MoeDispatcher { alltoall, flex };

struct Parallelism {
  int tp = 1, pp = 1, vp = 1, cp = 1, ep = 1, etp = 1, dp = 1;
  bool sequence_parallel = false;
  int micro_batch = 1;
  int global_batch = 1;
  int microbatches = 1;            ///< per pipeline per step: global / (micro x dp)
  Sharding sharding = Sharding::optim;
  CpCommType cp_comm = CpCommType::p2p;
  bool account_for_embedding = false;  ///< account_for_embedding_in_pipeline_split
  bool account_for_loss = false;       ///< account_for_loss_in_pipeline_split
  int first_stage_layers = 0;          ///< num_layers_in_first_pipeline_stage (0 = even split)
  int last_stage_layers = 0;           ///< num_layers_in_last_pipeline_stage (0 = even split)
  std::string layout;                  ///< pipeline_model_parallel_layout, e.g. "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"
  int world() const { return tp * pp * cp * dp; }
};

/// Megatron's `recompute_modules` under selective recompute: which parts of a layer are recomputed in
/// backward instead of keeping their outputs (MLM transformer_config.py; default {"core_attn"}).
struct RecomputeModules {
  bool core_attn = true;   ///< the attention core
  bool layernorm = false;  ///< both norms: their outputs are dropped after the next GEMM reads them
  bool moe_act = false;    ///< the experts' activation function: FC2's input is recomputed
  bool mlp = false;        ///< a dense MLP's FC1 and activation: only the MLP input is kept
  bool mla_up_proj = false;  ///< MLA's Q and KV up-projections and RoPE: only their low-rank inputs are kept
  bool moe = false;        ///< the whole MoE block (router, all-to-alls, experts): only its input is kept
};

/// Megatron-Core's CUDA-graph settings (cuda_graph_impl, cuda_graph_scope) as they act on the host issue
/// path of MoE layers (moe_host.hpp): a captured piece costs the host one graph launch instead of its
/// modules' and ops' issue; full_iteration replays the whole step as one graph (Megatron-Bridge 26.06's
/// MoE recipes, which make the experts' buffers static with moe_paged_stash), so no host issue and no
/// device-to-host sync remain. Dense layers follow the stack's coverage (framework.hpp cuda_graphs).
struct CudaGraphScope {
  bool full_iteration = false;
  bool attn = false;            ///< the attention half of a layer
  bool moe_router = false;      ///< the router (gate GEMM, top-k, aux loss)
  bool moe_preprocess = false;  ///< the dispatcher's preprocess (counts, splits, permute)
  bool moe = false;             ///< the whole MoE block (static shapes only: token drop with padding)
  bool mlp = false, mamba = false;  ///< accepted as Megatron spells them; dense MLP and Mamba host follow the stack
};

struct TrainingOptions {
  int seq = 4096;
  Precision precision = Precision::bf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::tensorwise;  ///< with precision fp8
  Fp4Recipe fp4_recipe = Fp4Recipe::nvfp4;        ///< with precision fp4
  /// Megatron-Core first_last_layers_bf16: the first num_layers_at_start_in_bf16 and the last
  /// num_layers_at_end_in_bf16 transformer layers of the model run their GEMMs in BF16 under FP8 or FP4.
  bool first_last_layers_bf16 = false;
  int layers_at_start_in_bf16 = 1;
  int layers_at_end_in_bf16 = 1;
  /// Megatron-Bridge keep_mtp_spec_in_bf16 (the Nemotron 3 Super recipe): the MTP module's GEMMs (eh_proj,
  /// a hybrid model's MTP layers) run in BF16 under FP8 or FP4.
  bool keep_mtp_in_bf16 = false;
  Recompute recompute = Recompute::none;
  RecomputeModules recompute_modules;  ///< used when recompute == selective
  bool overlap_grad_reduce = true;
  bool overlap_param_gather = true;
  bool tp_comm_overlap = false;
  /// Megatron's overlap_moe_expert_parallel_comm (Megatron-Bridge `moe_a2a_overlap`): the steady state
  /// runs one micro-batch's forward and another's backward together, layer by layer, so that each EP
  /// all-to-all hides behind the other pass's compute (combined 1F1B, MLM MR3470).
  bool overlap_moe_expert_parallel_comm = false;
  /// delay_wgrad_compute: the experts' weight-gradient GEMMs run after the backward dispatch all-to-all
  /// is issued, beside it (on by default with the overlap, as Megatron-Bridge sets both).
  bool delay_wgrad_compute = false;
  MoeDispatcher moe_dispatcher = MoeDispatcher::alltoall;
  /// SMs the EP all-to-all kernels hold while they run beside compute (combined 1F1B): NCCL's
  /// send/recv CTAs for the alltoall dispatcher (compute::kNcclAllToAllSms); for flex, Megatron-Core's
  /// moe_deepep_num_sms (default 20) or moe_hybridep_num_sms (default 16) by moe_flex_dispatcher_backend.
  int moe_dispatcher_sms = 16;
  bool moe_flex_hybridep = false;  ///< moe_flex_dispatcher_backend = "hybridep" (else DeepEP)
  /// moe_shared_expert_overlap: the shared experts run beside the EP all-to-alls (Megatron-Core runs
  /// FC1 during the dispatch and FC2 during the combine, on their own stream), not after the experts.
  bool moe_shared_expert_overlap = false;
  /// moe_expert_capacity_factor: token dropping, each expert takes at most capacity = factor x its balanced
  /// share of the routed rows; 0 = dropless (Megatron's default, None).
  double moe_capacity_factor = 0;
  /// moe_load_imbalance: tokens the busiest expert-parallel rank receives over the mean (>= 1); 0 = what
  /// uniform random routing gives (moe_routing.hpp, random_routing_imbalance), as Megatron's benchmarks
  /// force it.
  double moe_load_imbalance = 0;
  /// moe_pad_expert_input_to_capacity: every expert computes exactly its capacity (padded), so shapes are
  /// static and the dispatcher needs no device-to-host sync ("drop and pad").
  bool moe_pad_to_capacity = false;
  CudaGraphScope cuda_graphs;
  bool grad_reduce_in_fp32 = false;
  bool fp8_param_gather = false;
  /// Megatron disable_parameter_transpose_cache: Transformer Engine gets is_first_microbatch = None and
  /// quantizes every low-precision GEMM weight at each call instead of once per step (the weight-cast
  /// traffic, low_precision.hpp weight_cast_bytes_per_element). Megatron-Bridge's Llama 3 SFT and LoRA
  /// performance recipes set it (scripts/performance/configs/llama/llama3_llm_finetune.py,
  /// set_llama3_common_peft_configs, v0.2.0-v0.5.0).
  bool disable_parameter_transpose_cache = false;
  /// Megatron fp8_dot_product_attention: the FP8 layers' fused attention runs cuDNN's FP8 kernels
  /// (Q, K, V, O and their gradients in FP8; compute_model.hpp attention_fp8_time_factor), and its
  /// backward does not skip the tiles a sliding window masks (trace_builder: the whole causal span).
  bool fp8_dot_product_attention = false;
  /// Megatron use_transformer_engine_op_fuser (Megatron-Bridge's cutedsl_fused_grouped_mlp): the experts
  /// run as Transformer Engine's fused op sequence (GroupedLinear, scaled activation, GroupedLinear with
  /// FC2's bias scaled by the routing probabilities inside it), so no eager per-expert bias add
  /// (moe_ops.cpp). Its other effects are not modelled (docs/model.md).
  bool te_op_fuser = false;
  double bucket_params = 0;        ///< DDP bucket size in parameters; 0 = Megatron's default max(4e7, 1e6 dp)
  double total_tokens = 0;         ///< the whole run, for time/cost to train and goodput; 0 = not given
  long long train_iters = 0;       ///< the whole run in steps (Megatron --train-iters); 0 = not given
  FineTuning fine_tuning;          ///< workload: pretrain, sft (packed sequences), lora (workload_kind.hpp)
  /// Megatron mtp_num_layers: multi-token-prediction depths; -1 = the model's (HF num_nextn_predict_layers).
  int mtp_num_layers = -1;

  /// Whether layer `layer` (0-based, of `layers`) runs its GEMMs in the low precision (FP8 or FP4). A
  /// hybrid model's MTP layers (numbered from `layers` on) run as the last decoder layer does.
  bool layer_in_fp8(int layer, int layers) const {
    if (precision == Precision::bf16) return false;
    if (layer >= layers) {
      if (keep_mtp_in_bf16) return false;
      layer = layers - 1;
    }
    return !first_last_layers_bf16 || (layer >= layers_at_start_in_bf16 && layer < layers - layers_at_end_in_bf16);
  }
};

/// Reads "parallelism" (Megatron names). `gpus` is the world size the cluster offers.
Parallelism read_parallelism(config::ObjectReader& reader, int gpus);
TrainingOptions read_training(config::ObjectReader& reader);

/// Reads moe_expert_capacity_factor and moe_pad_expert_input_to_capacity (moe_options.cpp).
void read_token_drop(config::ObjectReader& reader, TrainingOptions& t);
/// Reads cuda_graph_impl and cuda_graph_scope, Megatron-Core's names and values (moe_options.cpp).
void read_cuda_graphs(config::ObjectReader& reader, TrainingOptions& t);
/// An expert load imbalance key (training's moe_load_imbalance, serving's expert_load_imbalance): the
/// busiest expert-parallel rank's tokens over the mean, 1 to 64, or `absent` when the key is not given.
double read_load_imbalance(config::ObjectReader& reader, const std::string& key, double absent);
/// Token dropping and CUDA-graph scopes against the model and dispatcher; InputError naming the key.
void validate_moe_options(const TrainingOptions& t, const ModelSpec& model, const std::string& where);

/// Throws InputError with the reason when Megatron would reject the combination (TP not dividing the
/// heads, GPUs not divisible by TP x PP x CP, global batch not divisible, ...). `where` names the file.
void validate(const Parallelism& p, const TrainingOptions& t, const ModelSpec& model, const hardware::GpuSpec& gpu,
              const std::string& where);

std::string to_string(Precision precision);
std::string to_string(Fp8Recipe recipe);
std::string to_string(Fp4Recipe recipe);
/// "bf16", or "fp8 (tensorwise)", "fp8 (delayed, first 1 and last 1 layers in bf16)".
std::string describe_precision(const TrainingOptions& t);
std::string to_string(Recompute recompute);
/// "selective (core_attn, moe_act)" for selective recompute, else to_string(recompute).
std::string describe_recompute(const TrainingOptions& t);
std::string to_string(Sharding sharding);
std::string to_string(MoeDispatcher dispatcher);

/// Bytes per element of activations and of communicated activations at this precision (BF16 = 2).
inline double activation_bytes() { return 2.0; }

}  // namespace fmsim::workload
