"""Published recipe settings the training validation applies, and the names the calibration rows use.

Every entry cites the recipe it comes from; a setting applies only where the row matches the recipe's
layout (issue #25 moves these into configs/recipes/)."""

# Calibration row model names -> presets in configs/models/.
MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3-8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3-70B": "llama3-70b",
          "LLAMA2-7B": "llama2-7b", "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b",
          "Nemotron-340B": "nemotron-4-340b", "DeepSeekV3": "deepseek-v3", "LLAMA3.1_405B": "llama3.1-405b",
          "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b", "Qwen3_235B_a22B": "qwen3-235b-a22b",
          "GPT3-175B": "gpt3-175b", "Kimi_K2": "kimi-k2", "Nemotron_3_Nano": "nemotron-3-nano",
          "Nemotron_3_Super": "nemotron-3-super", "Nemotron_3_Ultra": "nemotron-3-ultra"}
# Models whose architecture no public config describes (the row is listed with this reason).
UNPUBLISHED = {"DeepSeekV4 Flash": "DeepSeek-V4 Flash: no public model configuration to build a preset from",
               "Nemotron_3_5_Lightning": "Nemotron 3.5 Lightning: no public model configuration to build a preset from"}
# GPT-3 5B of the NeMo 24.07 table (NeMo's gpt3 5B config: 24 layers, hidden 4096, 32 heads, ffn 16384).
GPT3_5B = {"model_type": "gpt3", "hidden_size": 4096, "intermediate_size": 16384, "num_hidden_layers": 24,
           "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 50257, "hidden_act": "gelu",
           "position_embedding_type": "learned_absolute", "max_position_embeddings": 2048, "add_bias_linear": True,
           "tie_word_embeddings": True}

# Pipeline layouts where they differ from an even split (Megatron-Bridge 25.11 recipes; MEGATRON-NOTES.md
# section 8): Llama-3-70B FP8 at PP8 VP5 uses a custom layout (its 40 stages belong to that PP x VP only);
# 405B and Qwen3-235B account for the embedding and loss in the split. DeepSeek-V3's recipes place its
# MTP layer (m) on the last stage with a layout per PP x VP (Megatron-Bridge deepseek_v3 workload configs:
# DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1 at PP8 VP4 "Et|(tt|)*30mL"; the others as listed). Every DeepSeek-V3
# row of the set counts MTP: its published TFLOP/s over tokens/s is 260.0 GFLOP/token, Megatron's count with
# MTP (249.8 without).
LAYOUT_STAGES = {"llama3-70b": 40}
LAYOUTS = {"llama3-70b": {"pipeline_model_parallel_layout": "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"},
           "llama3.1-405b": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True},
           "qwen3-235b-a22b": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True}}

# Selective recompute (Megatron-Bridge scripts/performance/configs/gpt_oss/gpt_oss_workload_base_configs.py:
# GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1 recomputes the norms and the experts' activation; DeepSeek-V3's
# H100 recipe DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1 recomputes mla_up_proj and mlp).
RECOMPUTE = {"gpt-oss-120b": ["layernorm", "moe_act"], "deepseek-v3": ["mla_up_proj", "mlp"],
             "nemotron-3-ultra": ["moe_act"]}
# Per system where the recipes differ (Megatron-Bridge nemotron_3_workload_base_configs.py: Nano on H100
# checkpoints the MoE layer, the norms and core attention; Super on GB200 the MoE layer, on B200 the norms,
# core attention and the experts' activation).
RECOMPUTE_BY_SYSTEM = {("nemotron-3-nano", "DGX-H100"): ["moe", "layernorm", "core_attn"],
                       ("nemotron-3-super", "DGX-GB200"): ["moe"],
                       ("nemotron-3-super", "DGX-B200"): ["layernorm", "core_attn", "moe_act"],
                       ("nemotron-3-super", "DGX-B300"): ["moe_act", "layernorm"]}
# Nemotron 3 Super's NVFP4 recipe (mixed_precision.py nemotron_3_super_bf16_with_nvfp4_mixed) keeps the last
# 14 layers in BF16; Megatron-Bridge's MixedPrecisionConfig sets num_layers_at_start_in_bf16 to 0 (its
# default, written over Megatron-Core's 1). The Super recipe keeps its MTP layers in BF16
# (nemotron_3_super.py: keep_mtp_spec_in_bf16=True), under MXFP8 as under NVFP4.
NVFP4_BF16_LAYERS = {"nemotron-3-super": {"first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 0,
                                          "num_layers_at_end_in_bf16": 14}}
MTP_IN_BF16 = {"nemotron-3-super"}

# Token dispatcher where it is not alltoall (DeepSeek-V3: DeepEP / HybridEP, moe_flex_dispatcher_backend in
# the base config).
DISPATCHER = {"deepseek-v3": "flex"}

# EP all-to-all overlap (qwen3_workload_base_configs.py: QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1 sets
# moe_a2a_overlap=True, i.e. overlap_moe_expert_parallel_comm and delay_wgrad_compute).
A2A_OVERLAP = {"qwen3-235b-a22b"}

# Precision names of the tables. Megatron-Bridge's FP8-CS preset (bf16_with_fp8_current_scaling_mixed,
# src/megatron/bridge/training/mixed_precision.py) is current (tensorwise) scaling with FP8 parameter
# all-gather; the preset keeps the first and last transformer layer in BF16, but the performance scripts
# behind these tables turn that off ("Disable BF16 Transformer layers in the performance config":
# scripts/performance/utils/precision.py get_precision_config("fp8", "cs"), and _perf_precision("fp8_cs") in
# the perf recipes). FP8-MX / MXFP8 is MXFP8 (Blackwell); the 26.x tables' plain "FP8" is the FP8-CS recipe
# (they list FP8 beside MXFP8 and NVFP4); NVFP4 is bf16_with_nvfp4_mixed. NeMo 24.07's plain "FP8" is
# Transformer Engine's delayed scaling.
MBRIDGE_PRECISION = {
    "FP8-CS": {"precision": "fp8", "fp8_recipe": "tensorwise", "fp8_param_gather": True},
    "FP8": {"precision": "fp8", "fp8_recipe": "tensorwise", "fp8_param_gather": True},
    "FP8-MX": {"precision": "fp8", "fp8_recipe": "mxfp8"},
    "MXFP8": {"precision": "fp8", "fp8_recipe": "mxfp8"},
    "NVFP4": {"precision": "fp4", "fp4_recipe": "nvfp4"},
    "BF16": {"precision": "bf16"},
}
NEMO2407_PRECISION = {"FP8": {"precision": "fp8", "fp8_recipe": "delayed"}, "BF16": {"precision": "bf16"}}


DEEPSEEK_LAYOUTS = {(8, 4): "Et|(tt|)*30mL", (4, 1): "Et*16|t*16|t*16|t*13mL", (8, 1): "Et*8|(t*8|)*6,t*5mL",
                    (4, 2): "Et*8|(t*8|)*6,t*5mL", (16, 1): "Et*4|(t*4|)*14,tmL", (8, 2): "Et*4|(t*4|)*14,tmL",
                    (4, 4): "Et*4|(t*4|)*14,tmL", (2, 8): "Et*4|(t*4|)*14,tmL"}

# Fine-tuning recipes. Megatron-Bridge 26.06 (perf_recipes/llama/llama3.py @ 067f987d): SQuAD packed into
# rows of seq_length, LoRA dim 16, alpha 32 on linear_qkv; its SFT table counts model FLOPs over whole rows.
# NeMo 24.07 (megatron_gpt_finetuning_config.yaml): LoRA adapter_dim 32, alpha 32 on attention_qkv.
# SQuAD's sequence lengths (mean 180 tokens, std 60, rows 99 % full) are an estimate, not a measured figure.
SQUAD_PACKING = {"mean_sequence_length": 180, "sequence_length_std": 60, "packing_efficiency": 0.99}
MBRIDGE_LORA = {"rank": 16, "alpha": 32, "target_modules": ["linear_qkv"]}
NEMO_LORA = {"rank": 32, "alpha": 32, "target_modules": ["linear_qkv"]}


def fine_tuning_settings(workload, lora, flops_per_row=False):
    """training settings of an SFT or LoRA row (empty for pretraining)."""
    if workload == "pretrain":
        return {}
    training = {"workload": workload, "packing": dict(SQUAD_PACKING, flops_attention="per_row" if flops_per_row else "per_sequence")}
    if workload == "lora":
        training["lora"] = lora
    return training


def recipe_settings(model, pp, vp, ep, system="DGX-H100", precision="FP8"):
    """(parallelism, training) settings of the published recipe for `model` at this PP x VP x EP."""
    par, training = {}, {}
    if precision == "NVFP4":
        training.update(NVFP4_BF16_LAYERS.get(model, {}))
    if model in MTP_IN_BF16 and precision != "BF16":
        training["keep_mtp_spec_in_bf16"] = True
    if pp * vp > 1 and LAYOUT_STAGES.get(model, pp * vp) == pp * vp:
        par.update(LAYOUTS.get(model, {}))
    if model == "deepseek-v3" and (pp, vp) in DEEPSEEK_LAYOUTS:
        par["pipeline_model_parallel_layout"] = DEEPSEEK_LAYOUTS[(pp, vp)]
    if model in DISPATCHER:
        training["moe_token_dispatcher_type"] = DISPATCHER[model]
    if model in A2A_OVERLAP and ep > 1 and (pp == 1 or vp > 1):  # what Megatron-Bridge allows
        training["overlap_moe_expert_parallel_comm"] = True
    modules = RECOMPUTE_BY_SYSTEM.get((model, system), RECOMPUTE.get(model))
    if modules:
        training.update({"recompute_granularity": "selective", "recompute_modules": modules})
    return par, training
