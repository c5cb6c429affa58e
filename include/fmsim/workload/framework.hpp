#pragma once
// The software stack a training scenario runs on (`training.framework`, e.g. "torchtitan@2025-03"): the
// mechanisms its release selects, read from one data file per stack under configs/stacks/ (docs/formats.md
// "Stack files", docs/model.md "Software stacks"). Each mechanism is priced in its own file:
// attention_kernel.cpp (fused flash, FlashAttention-2, unfused softmax), elementwise_fusion.cpp (norm, RoPE,
// activation, cross-entropy, permutation, router), host_launch.cpp (CUDA-graph coverage and the eager
// host issue path), and the data-parallel engine in trace_builder.cpp / sharded_gathers.cpp (Megatron's
// distributed optimizer, FSDP2, DeepSpeed ZeRO-3). The default (no key) is today's idealised current
// Megatron-Core, so scenarios without the key do not change.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace fmsim::workload {

struct Scenario;

/// The attention core: a fused flash kernel (Transformer Engine's cuDNN / FlashAttention-3 on Hopper and
/// later, FlashAttention-2 on Ampere: compute::attention_efficiency), FlashAttention-2 on any GPU (PyTorch
/// SDPA's flash backend, which on Hopper is not the FA3 kernel), or the unfused softmax path (QK^T and PV
/// as batched GEMMs over the whole s x s score matrix, which is written to and read back from HBM by the
/// softmax and, with attention dropout, the dropout kernels).
enum class AttentionKernel { fused, flash2, unfused };

/// Which element-wise chains run as one fused kernel (true) or as one eager PyTorch op per step (false).
struct Fusions {
  bool norm = true;             ///< LayerNorm / RMSNorm (TE, Apex)
  bool rope = true;             ///< rotary embedding (TE fused RoPE, Megatron apply_rope_fusion)
  /// The fused RoPE also applies YaRN's attention factor. Megatron-Core 0.16 and later (and the Megatron-LM
  /// that Megatron-Bridge 25.11 and later pin) run their unfused RoPE instead when the factor is not 1
  /// (rope_utils.py apply_rotary_pos_emb: "mscale ... is not supported by TE's fused RoPE"): GPT-OSS.
  bool rope_attention_factor = false;
  bool bias_activation = true;  ///< bias + GeLU / SwiGLU (Megatron bias_activation_fusion)
  bool cross_entropy = true;    ///< cast + softmax + loss over the vocabulary (cross_entropy_loss_fusion)
  bool permute = true;          ///< MoE token permutation (moe_permute_fusion)
  bool router = true;           ///< MoE router top-k and score function (moe_router_fusion)
};

/// How the host issues the kernels of layers that no CUDA graph covers.
enum class HostLaunch {
  te_modules,  ///< Transformer Engine modules through Megatron (kTeModuleHost_s each) plus eager ops
  eager,       ///< plain eager PyTorch: one dispatcher call per kernel (kEagerOpHost_s each)
};

/// Where CUDA graphs (or a host far enough ahead) hide the host: dense layers (today's behaviour: only
/// MoE blocks, which run eagerly, pay their host time) or nothing (every layer is issued op by op).
enum class GraphCoverage { dense_layers, none };

/// The data-parallel engine that shards parameters with sharding optim_grads_params.
enum class DataParallelEngine {
  megatron,   ///< Megatron-Core's distributed optimizer / Megatron-FSDP: buckets, one bucket ahead
  fsdp2,      ///< PyTorch FSDP2: one unit per transformer block, all-gather copy-out on the compute stream
  deepspeed,  ///< DeepSpeed ZeRO-3 (2021): one all-gather per parameter tensor, fetched when the module runs
};

/// What `recompute_granularity: "selective"` recomputes: Megatron's recompute_modules, or PyTorch's
/// op-level selective activation checkpointing as torchtitan applies it (selective_ac_option "op": the
/// outputs of every other matmul and of attention are saved, all other ops of a block run again).
enum class SelectiveRecompute { megatron_modules, torch_op_sac };

struct Framework {
  std::string name = "megatron-core";  ///< the stack's file name under configs/stacks/
  std::string release = "current";
  std::string display_name = "Megatron-Core current";  ///< e.g. "torchtitan 2025-03"
  std::string source;                                    ///< the release entry's source (release notes, code)
  AttentionKernel attention = AttentionKernel::fused;
  bool attention_dropout = false;  ///< unfused attention: a dropout over the scores (Megatron-LM 2021: 0.1)
  Fusions fusions;
  bool torch_compile = false;  ///< torch.compile fuses the element-wise chains (norm, RoPE, activation, loss)
  GraphCoverage graphs = GraphCoverage::dense_layers;
  HostLaunch host_launch = HostLaunch::te_modules;
  DataParallelEngine dp_engine = DataParallelEngine::megatron;
  SelectiveRecompute selective_recompute = SelectiveRecompute::megatron_modules;
  /// DeepSpeed ZeRO-3's stage3_max_reuse_distance (elements): a gathered parameter is kept for its next use
  /// only if fewer elements are used in between (DeepSpeed's default 1e9); with full recompute, the
  /// parameters between a layer's recomputed forward and its backward are gathered again past it.
  double max_reuse_distance = 1e9;
  /// Training and parallelism settings the stack uses unless the scenario sets them (its default
  /// overlaps, gradient reduction precision, bucket size, sharding), as {"training": {...}, "parallelism": {...}}.
  nlohmann::json defaults = nlohmann::json::object();

  bool is_default() const { return name == "megatron-core" && release == "current"; }
  /// Whether an element-wise chain runs fused: by the stack's kernels or by torch.compile. The MoE
  /// permutation and router are not compiled (their row counts change every step). RoPE also depends on
  /// the model (elementwise_fusion.cpp rope_path).
  bool fuses_norm() const { return fusions.norm || torch_compile; }
  bool fuses_activation() const { return fusions.bias_activation || torch_compile; }
  bool fuses_cross_entropy() const { return fusions.cross_entropy || torch_compile; }
};

/// Where stack files are read: $FMSIM_STACKS_DIR, else the source tree's configs/stacks.
std::filesystem::path default_stacks_dir();
/// The stacks found there ("megatron-core", "torchtitan", ...), sorted.
std::vector<std::string> stack_names(const std::filesystem::path& stacks_dir);

/// Resolves "NAME" (the stack's default release) or "NAME@RELEASE" against configs/stacks/NAME.json.
/// `origin` names the scenario file for messages. Throws InputError (exit 2) for an unknown stack, listing
/// the known ones, an unknown release, listing the file's releases, or a malformed stack file.
Framework load_framework(const std::string& value, const std::string& origin, const std::filesystem::path& stacks_dir);

/// Reads a stack file's document (exposed for tests and `fmsim check`).
Framework framework_from_json(const nlohmann::json& stack, const std::string& release, const std::string& file);

/// The stack's display name for reports and error bands, e.g. "torchtitan 2025-03" or
/// "Megatron-Core current" when the scenario names none.
std::string framework_display_name(const Scenario& scenario);

/// Applies the stack's defaults to a scenario document: each key of defaults.training / defaults.parallelism
/// the scenario does not set is added. The scenario's own settings win.
void apply_framework_defaults(const Framework& framework, nlohmann::json& document);

std::string to_string(AttentionKernel kernel);
std::string to_string(DataParallelEngine engine);

}  // namespace fmsim::workload
