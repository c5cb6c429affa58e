#!/usr/bin/env python3
"""Step 2 of transcribing configs/recipes/: writes the recipe files from the configurations that
extract_megatron_bridge.py dumped (WORK/TAG.json, WORK/TAG/scripts/performance), adding the hand-read parts
(26.08's perf_recipes GB200 configurations, the model recipes' layout tables, the fine-tuning recipes,
and the release-independent variants the validation applied before: their sources are in the files).
How the performance scripts end up with each setting is documented in docs/formats.md, "Recipe files".
Usage: transcribe_recipes.py WORK_DIR OUT_DIR (e.g. configs/recipes)

The files in configs/recipes/ have since been edited by hand where this script stops short, each edit with
its source in the file: CUDA-graph settings moved from not_modelled into training once fmsim modelled them;
GPT-OSS's 26.06 V2 variants (GBS 1280, selected by when.global_batch_size; this script keeps only the first
configuration per selectors and release); tp_comm_overlap false for DeepSeek-V3 and Nemotron 3 Super/Ultra;
disable_parameter_transpose_cache for the Llama 3 70B SFT and LoRA recipes (session 25). Regenerating
overwrites them: compare with git before committing a regenerated file."""
import json, os, re, sys
WORK, OUT = sys.argv[1], sys.argv[2]
REPO = "NVIDIA-NeMo/Megatron-Bridge"
RELS = [("25.09", "r0.1.0", "684a68616597c8097b17e089f91f86383d9e7b74", None),
        ("25.11", "v0.2.0", "7af9601c9da746d21481194356295bfe23df3737", "v0.2.0"),
        ("26.02", "v0.3.0", "21b02e0cfb2f8ff907e0d8baee0c5205876c6812", "v0.3.0"),
        ("26.02.01", "v0.3.1", "9c9dd848966322fc3ed7706747ec13219ef49dda", "v0.3.1"),
        ("26.04", "v0.4.0", "0fbfe7d3e970fbd75c1281d71cee586ce1f3df5e", "v0.4.0"),
        ("26.04.01", "v0.4.1", "f9b6319e58494b9a655b4789724df715aebabaef", "v0.4.1"),
        ("26.06", "v0.5.0", "fcbb6031103d0ca845c1a54d4fee55ecfcca17b6", "v0.5.0"),
        ("26.06.01", "v0.5.1", "5cb3444c43f7499cf3872b2d46870cf8bc2e00ce", "v0.5.1"),
        ("26.08", "v0.6.0", "51885cf132b2814188b6855c25a8588254274c2a", None)]
# model -> (config prefix, family dir at v0.3+, family dir at v0.2.0, file stem of the pretrain script, r0.1.0 yaml, v0.6.0 perf recipe)
MODELS = {
 "deepseek-v3": ("DEEPSEEK_V3", "deepseek", "deepseek", "deepseek", "scripts/performance/configs/deepseek/deepseek_v3_llm_pretrain.yaml", "src/megatron/bridge/perf_recipes/deepseek/{gpu}/deepseek_v3.py"),
 "qwen3-30b-a3b": ("QWEN3_30B_A3B", "qwen", "qwen3", "qwen3", "scripts/performance/configs/qwen3/qwen3_30b_a3b_llm_pretrain.yaml", "src/megatron/bridge/perf_recipes/qwen/{gpu}/qwen3_moe.py"),
 "qwen3-235b-a22b": ("QWEN3_235B_A22B", "qwen", "qwen3", "qwen3", "scripts/performance/configs/qwen3/qwen3_235b_a22b_llm_pretrain.yaml", "src/megatron/bridge/perf_recipes/qwen/{gpu}/qwen3_moe.py"),
 "gpt-oss-120b": ("GPT_OSS_120B", "gpt_oss", "gpt_oss", "gpt_oss", None, "src/megatron/bridge/perf_recipes/gpt_oss/{gpu}/gpt_oss.py"),
 "kimi-k2": ("KIMI_K2", "kimi", None, "kimi", None, "src/megatron/bridge/perf_recipes/kimi/{gpu}/kimi_k2.py"),
 "nemotron-3-nano": ("NEMOTRON_3_NANO", "nemotronh", None, None, None, None),
 "nemotron-3-super": ("NEMOTRON_3_SUPER", "nemotronh", None, None, None, "src/megatron/bridge/perf_recipes/nemotronh/{gpu}/nemotronh.py"),
 "nemotron-3-ultra": ("NEMOTRON_3_ULTRA", "nemotronh", None, None, None, None),
}
GPUS = {"H100": "H100", "B200": "B200", "B300": "B300", "GB200": "GB200", "GB300": "GB300"}
DTYPES = {"BF16": ["BF16"], "FP8_CS": ["FP8-CS"], "FP8_MX": ["MXFP8"], "NVFP4": ["NVFP4"], "": None}

def pretrain_file(tag, fam, stem, model):
    d = f"{WORK}/{tag}/scripts/performance/configs/{fam}"
    if not os.path.isdir(d): return []
    return sorted(f"scripts/performance/configs/{fam}/{f}" for f in os.listdir(d)
                  if f.endswith(".py") and f != "__init__.py" and (("nano" in f) == ("nano" in model) or fam != "nemotronh")
                  and ("qwen3_vl" not in f))

def dispatcher(model, gpu, backend):
    """moe_token_dispatcher_type / backend the perf scripts end with (docs/formats.md: recipes)."""
    if backend is None:
        return {}, {}
    if model == "qwen3-235b-a22b" and gpu in ("H100", "B200", "B300"):
        return {}, {"moe_flex_dispatcher_backend": backend, "moe_token_dispatcher_type": "alltoall (qwen3_llm_pretrain.py sets it after the backend)"}
    if backend == "deepep" and gpu in ("GB200", "GB300"):
        return {}, {"moe_flex_dispatcher_backend": "deepep (apply_flex_dispatcher_backend skips DeepEP on GB200/GB300)"}
    return {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": backend}, {}

def variants_for(model):
    prefix = MODELS[model][0]
    pat_new = re.compile(rf"^{prefix}_PRETRAIN_CONFIG_(H100|B200|B300|GB200|GB300)(?:_(BF16|FP8_CS|FP8_MX|NVFP4))?(?:_V\d+|_LARGE_SCALE)?$")
    pat_old = re.compile(rf"^{prefix}_(H100|B200|B300|GB200|GB300)_(BF16|FP8_CS|FP8_MX|NVFP4)_BASE_CONFIG$")
    exact, general = [], []
    for rel, tag, commit, _ in RELS:
        path = f"{WORK}/{tag}.json"
        if not os.path.exists(path): continue
        d = json.load(open(path))
        for name, v in d.items():
            m = pat_new.match(name) or pat_old.match(name)
            if not m: continue
            gpu, dtype = m.group(1), m.group(2) or ""
            if gpu == "H100" and dtype in ("FP8_MX", "NVFP4"):
                continue  # the configuration files alias these names on H100; Hopper has no MXFP8/NVFP4 tensor cores
            pp, vp = v["pipeline_model_parallel_size"], v["virtual_pipeline_model_parallel_size"] or 1
            par = {"tensor_model_parallel_size": v["tensor_model_parallel_size"], "context_parallel_size": v["context_parallel_size"],
                   "expert_model_parallel_size": v["expert_model_parallel_size"], "micro_batch_size": v["micro_batch_size"],
                   "global_batch_size": v["global_batch_size"]}
            if v.get("expert_tensor_parallel_size"): par["expert_tensor_parallel_size"] = v["expert_tensor_parallel_size"]
            if v.get("pp_layout"): par["pipeline_model_parallel_layout"] = v["pp_layout"]
            tr, nm = {}, {}
            if v.get("recompute_modules"):
                tr.update({"recompute_granularity": "selective", "recompute_modules": list(v["recompute_modules"])})
            t2, n2 = dispatcher(model, gpu, v.get("moe_flex_dispatcher_backend"))
            tr.update(t2); nm.update(n2)
            if v.get("moe_a2a_overlap") and v["expert_model_parallel_size"] > 1 and (pp == 1 or vp > 1):
                tr["overlap_moe_expert_parallel_comm"] = True
            for key in ("cuda_graph_impl", "cuda_graph_scope", "use_megatron_fsdp", "nccl_ub", "cpu_offloading_num_layers", "recompute_num_layers"):
                if v.get(key) not in (None, [], False):
                    nm[key] = v[key]
            when = {"gpu": gpu}
            if DTYPES[dtype]: when["precision"] = DTYPES[dtype]
            when.update({"pipeline_model_parallel_size": pp, "virtual_pipeline_model_parallel_size": vp})
            ex = {"name": f"{gpu} {dtype or 'any precision'} PP{pp} VP{vp} ({name})", "source": name, "rel": rel,
                  "when": when, "parallelism": par, "training": tr, "not_modelled": nm}
            exact.append(ex)
            gtr = {k: x for k, x in tr.items() if k != "overlap_moe_expert_parallel_comm"}
            gw = {k: x for k, x in when.items() if k in ("gpu", "precision")}
            general.append({"name": f"{gpu} {dtype or 'any precision'} any layout (settings of {name})", "source": name, "rel": rel,
                            "when": gw, "training": gtr, "not_modelled": nm})
    return specific_first(merge_releases(exact)) + specific_first(merge_releases(general))

def specific_first(variants):
    """A configuration for one precision before the release's configuration for any precision (the
    `_V1` names without a dtype): the loader takes the first variant that fits, so the precision-specific
    one must come first where both hold for a release (DeepSeek-V3 GB200 26.06: MXFP8 full-iteration)."""
    return sorted(variants, key=lambda v: 0 if "precision" in v["when"] else 1)

def merge_releases(items):
    """One variant per distinct (name without release, settings), with the releases it holds for."""
    out, index, seen = [], {}, set()
    for it in items:
        first = json.dumps([it["rel"], it["when"]], sort_keys=True)
        if first in seen:
            continue  # a later config with the same selectors at the same release is never chosen
        seen.add(first)
        key = json.dumps({k: it[k] for k in it if k not in ("rel", "name", "source")}, sort_keys=True)
        if key in index:
            index[key]["when"]["release"].append(it["rel"])
        else:
            v = {k: it[k] for k in ("name", "source")}
            v["when"] = dict({"release": [it["rel"]]}, **it["when"])
            for k in ("parallelism", "training", "not_modelled"):
                if it.get(k): v[k] = it[k]
            index[key] = v
            out.append(v)
    return out

def releases_for(model):
    prefix, fam, fam02, stem, yaml01, perf06 = MODELS[model]
    out = []
    for rel, tag, commit, _ in RELS:
        if tag == "r0.1.0":
            files = [yaml01] if yaml01 else ["docs/performance-summary-archive.md"]
        elif tag == "v0.6.0":
            files = [perf06.format(gpu=g) for g in ("h100", "b200", "gb200", "gb300")] if perf06 else ["docs/performance-summary.md"]
        else:
            f = fam if tag != "v0.2.0" else (fam02 or fam)
            files = pretrain_file(tag, f, stem, model) or ["docs/performance-summary-archive.md"]
        notes = None
        if tag == "r0.1.0" or (tag == "v0.6.0" and model not in V0608):
            notes = ("per-release settings not extracted for this release; only the release-independent variants "
                     "(the last ones, from the validation's earlier recipe tables) apply")
        elif tag == "v0.6.0":
            notes = V0608_NOTES.get(model, "26.08: only the GB200 MXFP8 configuration of the published table is transcribed (perf_recipes/<family>/gb200)")
        src = {"repository": REPO, "ref": tag, "commit": commit, "files": files}
        if notes: src["notes"] = notes
        out.append({"release": rel, "framework": f"megatron-bridge@{rel}", "source": src})
    return out
def super_0608(precision, suffix, low_precision_training):
    """Nemotron 3 Super on 64 GB200 at v0.6.0: the same layout and graphs for MXFP8 and NVFP4; NVFP4 adds its
    BF16 layers (nemotron_3_super_bf16_with_nvfp4_mixed)."""
    config = f"nemotron_3_super_pretrain_64gpu_gb200_{suffix}_config"
    return {"name": f"GB200 {precision} PP1 VP1 ({config})",
            "source": f"src/megatron/bridge/perf_recipes/nemotronh/gb200/nemotronh.py {config} at v0.6.0 (TP2 SP, EP64, HybridEP, CUDA graphs of attn, mamba, moe_router, moe_preprocess; nemotronh/common.py _apply_nemotron_3_super_perf_defaults: no recompute)",
            "when": {"release": ["26.08"], "gpu": "GB200", "precision": [precision], "pipeline_model_parallel_size": 1, "virtual_pipeline_model_parallel_size": 1},
            "parallelism": {"tensor_model_parallel_size": 2, "context_parallel_size": 1, "expert_model_parallel_size": 64, "micro_batch_size": 1,
                            "global_batch_size": 512, "expert_tensor_parallel_size": 1},
            "training": dict({"keep_mtp_spec_in_bf16": True}, **low_precision_training,
                             cuda_graph_impl="transformer_engine", cuda_graph_scope=["attn", "mamba", "moe_router", "moe_preprocess"],
                             moe_token_dispatcher_type="flex", moe_flex_dispatcher_backend="hybridep")}


NM_FULL = {"cuda_graph_impl": "full_iteration", "cuda_graph_scope": [], "moe_paged_stash": True,
           "moe_expert_rank_capacity_factor": 1.5, "high_priority_a2a_comm_stream": True}
V0608 = {
 "deepseek-v3": [{"name": "GB200 MXFP8 PP4 VP4 (deepseek_v3_pretrain_256gpu_gb200_fp8mx_config)",
                  "source": "src/megatron/bridge/perf_recipes/deepseek/gb200/deepseek_v3.py deepseek_v3_pretrain_256gpu_gb200_fp8mx_config; deepseek/common.py _enable_deepseek_full_iteration_mxfp8",
                  "when": {"release": ["26.08"], "gpu": "GB200", "precision": ["MXFP8"], "pipeline_model_parallel_size": 4, "virtual_pipeline_model_parallel_size": 4},
                  "parallelism": {"tensor_model_parallel_size": 1, "expert_model_parallel_size": 64, "micro_batch_size": 1},
                  "training": {"recompute_granularity": "selective", "recompute_modules": ["mla_up_proj"], "moe_token_dispatcher_type": "flex",
                               "moe_flex_dispatcher_backend": "hybridep", "overlap_moe_expert_parallel_comm": True},
                  "not_modelled": dict(NM_FULL, overlap_param_gather_with_optimizer_step=True)}],
 "qwen3-235b-a22b": [{"name": "GB200 MXFP8 PP8 VP3 (qwen3_235b_a22b_pretrain_64gpu_gb200_fp8mx_config)",
                  "source": "src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py qwen3_235b_a22b_pretrain_64gpu_gb200_fp8mx_config; qwen/common.py _enable_hybridep_full_iteration_mxfp8",
                  "when": {"release": ["26.08"], "gpu": "GB200", "precision": ["MXFP8"], "pipeline_model_parallel_size": 8, "virtual_pipeline_model_parallel_size": 3},
                  "parallelism": {"tensor_model_parallel_size": 1, "expert_model_parallel_size": 32, "micro_batch_size": 1, "global_batch_size": 2048},
                  "training": {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep", "overlap_moe_expert_parallel_comm": True},
                  "not_modelled": NM_FULL}],
 "qwen3-30b-a3b": [{"name": "GB200 MXFP8 PP1 (qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config)",
                  "source": "src/megatron/bridge/perf_recipes/qwen/gb200/qwen3_moe.py qwen3_30b_a3b_pretrain_8gpu_gb200_fp8mx_config; qwen/common.py _enable_hybridep_full_iteration_mxfp8",
                  "when": {"release": ["26.08"], "gpu": "GB200", "precision": ["MXFP8"], "pipeline_model_parallel_size": 1, "virtual_pipeline_model_parallel_size": 1},
                  "parallelism": {"tensor_model_parallel_size": 1, "expert_model_parallel_size": 8, "micro_batch_size": 4, "global_batch_size": 512},
                  "training": {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep", "overlap_moe_expert_parallel_comm": True},
                  "not_modelled": NM_FULL}],
 "gpt-oss-120b": [{"name": "GB200 MXFP8 PP1 (gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config)",
                  "source": "src/megatron/bridge/perf_recipes/gpt_oss/gb200/gpt_oss.py gpt_oss_120b_pretrain_64gpu_gb200_fp8mx_config at v0.6.0; gpt_oss/common.py _apply_gpt_oss_120b_full_iter_fp8mx_configs (full-iteration CUDA graph, HybridEP, the EP all-to-all overlap with delay_wgrad_compute, the op fuser; recompute_modules emptied after it); env NVTE_CUTEDSL_FUSED_GROUPED_MLP=1",
                  "when": {"release": ["26.08"], "gpu": "GB200", "precision": ["MXFP8"], "pipeline_model_parallel_size": 1, "virtual_pipeline_model_parallel_size": 1},
                  "parallelism": {"tensor_model_parallel_size": 1, "context_parallel_size": 1, "expert_model_parallel_size": 64, "micro_batch_size": 4,
                                  "global_batch_size": 1280, "expert_tensor_parallel_size": 1},
                  "training": {"moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep", "overlap_moe_expert_parallel_comm": True,
                               "cuda_graph_impl": "full_iteration", "use_transformer_engine_op_fuser": True},
                  "not_modelled": {"fp8_dot_product_attention": True, "moe_paged_stash": True, "moe_expert_rank_capacity_factor": 1.5,
                                   "moe_pad_experts_for_cuda_graph_inference": True, "moe_mlp_glu_interleave_size": 32,
                                   "high_priority_a2a_comm_stream": True, "fp8_output_proj": True}}],
 "nemotron-3-super": [super_0608("MXFP8", "fp8mx", {}),
                      super_0608("NVFP4", "nvfp4", {"first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 0, "num_layers_at_end_in_bf16": 14})],
}
V0608_NOTES = {
 "gpt-oss-120b": "26.08: only the GB200 MXFP8 configuration of the published table is transcribed (perf_recipes/gpt_oss/gb200); other GPUs and precisions take the release-independent variant",
 "nemotron-3-super": "26.08: only the GB200 MXFP8 and NVFP4 configurations of the published table are transcribed (perf_recipes/nemotronh/gb200: the 26.06 settings); other GPUs take the release-independent variants",
}
G = {"variants_for": {m: variants_for(m) for m in MODELS}, "releases_for": {m: releases_for(m) for m in MODELS}}


MB = "NVIDIA-NeMo/Megatron-Bridge"
MAIN = "067f987df03b8355b03192d88d70f1709fedf51a"

def dump(path, doc):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(json.dumps(doc, indent=1) + "\n")

dump(f"{OUT}/megatron-bridge/precision.presets.json", {
    "schema": "fmsim.recipe-presets/1",
    "description": "Megatron-Bridge's mixed-precision presets as the performance scripts run them.",
    "source": {"repository": MB, "commit": MAIN,
               "files": ["src/megatron/bridge/training/mixed_precision.py", "scripts/performance/utils/precision.py"],
               "notes": "bf16_with_fp8_current_scaling_mixed is current (tensorwise) scaling with FP8 parameter all-gather; it "
                        "keeps the first and last transformer layer in BF16, but the performance scripts behind the published "
                        "tables turn that off (get_precision_config('fp8', 'cs'): 'Disable BF16 Transformer layers in the "
                        "performance config'). MXFP8 is bf16_with_mxfp8_mixed (Blackwell); NVFP4 is bf16_with_nvfp4_mixed."},
    "aliases": {"FP8": "FP8-CS", "FP8-MX": "MXFP8"},
    "presets": {"BF16": {"precision": "bf16"},
                "FP8-CS": {"precision": "fp8", "fp8_recipe": "tensorwise", "fp8_param_gather": True},
                "MXFP8": {"precision": "fp8", "fp8_recipe": "mxfp8"},
                "NVFP4": {"precision": "fp4", "fp4_recipe": "nvfp4"}}})
dump(f"{OUT}/nemo/precision.presets.json", {
    "schema": "fmsim.recipe-presets/1",
    "description": "NeMo 24.07's precisions: its plain 'FP8' is Transformer Engine's delayed scaling.",
    "source": {"repository": "NVIDIA/NeMo", "ref": "r2.0.0",
               "files": ["examples/nlp/language_modeling/conf/megatron_gpt_config.yaml"]},
    "presets": {"BF16": {"precision": "bf16"}, "FP8": {"precision": "fp8", "fp8_recipe": "delayed"}}})

ALL = ["BF16", "FP8-CS", "MXFP8", "NVFP4"]
DS_LAYOUTS = {(8, 4): "Et|(tt|)*30mL", (4, 1): "Et*16|t*16|t*16|t*13mL", (8, 1): "Et*8|(t*8|)*6,t*5mL",
              (4, 2): "Et*8|(t*8|)*6,t*5mL", (16, 1): "Et*4|(t*4|)*14,tmL", (8, 2): "Et*4|(t*4|)*14,tmL",
              (4, 4): "Et*4|(t*4|)*14,tmL", (2, 8): "Et*4|(t*4|)*14,tmL"}
LEGACY_NOTE = ("release-independent settings (what the validation applied before the per-release data; MEGATRON-NOTES.md "
               "and the recipe files named in source): they apply to every release, after the per-release variants")

def legacy(name, training=None, when=None, parallelism=None, source=None):
    v = {"name": name, "notes": LEGACY_NOTE}
    if source: v["source"] = source
    if when: v["when"] = when
    if parallelism: v["parallelism"] = parallelism
    if training: v["training"] = training
    return v

def mb_releases(model):
    return G["releases_for"][model]



def graphs_to_training(v):
    """The CUDA-graph settings are modelled (training.cuda_graph_impl / cuda_graph_scope, docs/formats.md):
    move them out of not_modelled; a scope means nothing with impl none or full_iteration."""
    nm = v.get("not_modelled")
    if not nm or not ({"cuda_graph_impl", "cuda_graph_scope"} & set(nm)): return v
    nm = dict(nm); tr = dict(v.get("training") or {})
    impl, scope = nm.pop("cuda_graph_impl", None), nm.pop("cuda_graph_scope", None)
    if impl is not None: tr["cuda_graph_impl"] = impl
    if scope and impl not in (None, "none", "full_iteration"): tr["cuda_graph_scope"] = scope
    v = dict(v, training=tr)
    if nm: v["not_modelled"] = nm
    else: v.pop("not_modelled", None)
    return v

def recipe(model, description, variants, legacy_variants, common=None, layouts=None, releases=None, notes=None, not_modelled=None):
    doc = {"schema": "fmsim.recipe/1", "name": f"megatron-bridge/{model}", "model": model, "description": description,
           "releases": releases or mb_releases(model), "precisions": "precision.presets.json"}
    if notes: doc["notes"] = notes
    if layouts: doc["layouts"] = layouts
    if common or not_modelled:
        doc["common"] = dict(common or {})
        if not_modelled: doc["common"]["not_modelled"] = not_modelled
    doc["variants"] = [graphs_to_training(v) for v in variants + V0608.get(model, []) + legacy_variants]
    if "common" in doc: doc["common"] = graphs_to_training(doc["common"])
    dump(f"{OUT}/megatron-bridge/{model}.json", doc)

PER_RELEASE = ("Variants: first the per-release performance configurations (scripts/performance/configs/*/"
               "*_workload_base_configs.py at each release's tag, one per GPU x precision x PP x VP), then the same "
               "releases' settings for any layout (without the EP all-to-all overlap, which needs the interleaved "
               "schedule), then the release-independent settings. The token dispatcher follows the performance "
               "scripts: flex with the configuration's moe_flex_dispatcher_backend where apply_flex_dispatcher_backend "
               "accepts the GPU (DeepEP: not on GB200/GB300), alltoall where the script sets it.")

recipe("deepseek-v3", "DeepSeek-V3 pretraining, Megatron-Bridge performance recipes (H100, B200, B300, GB200, GB300).",
       G["variants_for"]["deepseek-v3"],
       [legacy("any GPU, any precision", {"moe_token_dispatcher_type": "flex", "recompute_granularity": "selective",
                                           "recompute_modules": ["mla_up_proj", "mlp"]},
               source="DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1 (recompute), moe_flex_dispatcher_backend of the base config")],
       layouts=[{"pipeline_model_parallel_size": pp, "virtual_pipeline_model_parallel_size": vp,
                 "pipeline_model_parallel_layout": lay, "source": "deepseek_workload_base_configs.py pp_layout / "
                 "src/megatron/bridge/recipes/deepseek/deepseek_v3.py (MTP layer m on the last stage)"}
                for (pp, vp), lay in DS_LAYOUTS.items()],
       notes=[PER_RELEASE, "Every DeepSeek-V3 row of the calibration set counts MTP (260.0 GFLOP/token with MTP, 249.8 without)."])

recipe("qwen3-30b-a3b", "Qwen3-30B-A3B pretraining, Megatron-Bridge performance recipes.",
       G["variants_for"]["qwen3-30b-a3b"], [],
       notes=[PER_RELEASE, "26.02 -> 26.02.01: H100 moves from DeepEP with the EP all-to-all overlap at PP2 VP12 EP8 to "
              "HybridEP at PP1 EP16 without it (commit 4a6450755, #2477); B200 moves to HybridEP with micro-batch 4 and "
              "attention in the CUDA-graph scope (commit 0ec1df783, #2499)."],
       releases=mb_releases("qwen3-30b-a3b"))
# The release-independent variant of qwen3-30b-a3b: nothing (the validation set nothing before).
doc = json.load(open(f"{OUT}/megatron-bridge/qwen3-30b-a3b.json"))
doc["variants"].append(legacy("any GPU, any precision (no settings beyond the per-release ones)"))
dump(f"{OUT}/megatron-bridge/qwen3-30b-a3b.json", doc)

recipe("qwen3-235b-a22b", "Qwen3-235B-A22B pretraining, Megatron-Bridge performance recipes.",
       G["variants_for"]["qwen3-235b-a22b"],
       [legacy("any GPU, any precision", None)],
       common={"parallelism": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True}},
       notes=[PER_RELEASE, "The recipe accounts for the embedding and the loss in the pipeline split (src/megatron/bridge/"
              "recipes/qwen/qwen3_moe.py). The EP all-to-all overlap (moe_a2a_overlap: overlap_moe_expert_parallel_comm "
              "and delay_wgrad_compute) comes only from the per-release configurations that set it."])

recipe("gpt-oss-120b", "GPT-OSS-120B pretraining, Megatron-Bridge performance recipes.",
       G["variants_for"]["gpt-oss-120b"],
       [legacy("any GPU, any precision", {"recompute_granularity": "selective", "recompute_modules": ["layernorm", "moe_act"]},
               source="GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1")], notes=[PER_RELEASE])

recipe("kimi-k2", "Kimi K2 pretraining, Megatron-Bridge performance recipes (from 26.02.01).",
       G["variants_for"]["kimi-k2"], [legacy("any GPU, any precision (no settings beyond the per-release ones)")],
       notes=[PER_RELEASE])

recipe("nemotron-3-nano", "Nemotron 3 Nano pretraining, Megatron-Bridge performance recipes.",
       G["variants_for"]["nemotron-3-nano"],
       [legacy("H100, any precision", {"recompute_granularity": "selective", "recompute_modules": ["moe", "layernorm", "core_attn"]},
               when={"gpu": "H100"}, source="nemotron_3_workload_base_configs.py (H100)"),
        legacy("any GPU, any precision (no settings)")],
       notes=[PER_RELEASE, "The Nemotron 3 performance scripts set moe_flex_dispatcher_backend without switching the "
              "dispatcher to flex: it is kept under not_modelled and the dispatcher stays alltoall."])

# Nemotron 3 Super: NVFP4 keeps the last 14 layers in BF16 and the MTP layers in BF16 (any low precision).
super_rc = {"GB200": ["moe"], "B200": ["layernorm", "core_attn", "moe_act"], "B300": ["moe_act", "layernorm"], None: None}
super_legacy = []
for gpu, modules in super_rc.items():
    for prec in ("NVFP4", "low", "BF16"):
        tr = {}
        if prec == "NVFP4":
            tr.update({"first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 0, "num_layers_at_end_in_bf16": 14})
        if prec != "BF16":
            tr["keep_mtp_spec_in_bf16"] = True
        if modules:
            tr.update({"recompute_granularity": "selective", "recompute_modules": modules})
        when = {}
        if gpu: when["gpu"] = gpu
        when["precision"] = {"NVFP4": ["NVFP4"], "low": ["MXFP8", "FP8-CS"], "BF16": ["BF16"]}[prec]
        super_legacy.append(legacy(f"{gpu or 'any GPU'}, {'/'.join(when['precision'])}", tr, when=when,
                                   source="nemotron_3_workload_base_configs.py; mixed_precision.py nemotron_3_super_bf16_with_nvfp4_mixed; nemotron_3_super.py keep_mtp_spec_in_bf16"))
# The per-release Super variants get the same precision-bound settings (the recipe's, not the configuration's).
sv = []
for v in G["variants_for"]["nemotron-3-super"]:
    v = json.loads(json.dumps(v))
    precs = v["when"].get("precision", ALL)
    tr = v.setdefault("training", {})
    if precs != ["BF16"] and "BF16" not in precs:
        tr["keep_mtp_spec_in_bf16"] = True
    if precs == ["NVFP4"]:
        tr.update({"first_last_layers_bf16": True, "num_layers_at_start_in_bf16": 0, "num_layers_at_end_in_bf16": 14})
    sv.append(v)
recipe("nemotron-3-super", "Nemotron 3 Super pretraining, Megatron-Bridge performance recipes.", sv, super_legacy,
       notes=[PER_RELEASE, "The NVFP4 recipe (mixed_precision.py nemotron_3_super_bf16_with_nvfp4_mixed) keeps the last 14 "
              "layers in BF16 (num_layers_at_start_in_bf16 0: Megatron-Bridge's default over Megatron-Core's 1); the "
              "recipe keeps its MTP layers in BF16 under MXFP8 as under NVFP4 (nemotron_3_super.py keep_mtp_spec_in_bf16)."])

recipe("nemotron-3-ultra", "Nemotron 3 Ultra pretraining, Megatron-Bridge performance recipes (26.08).", [],
       [legacy("any GPU, any precision", {"recompute_granularity": "selective", "recompute_modules": ["moe_act"]},
               source="src/megatron/bridge/perf_recipes/nemotronh (26.08)")], notes=[PER_RELEASE])

# Dense models: release-independent settings only.
L70 = "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"
l70_layouts = [{"pipeline_model_parallel_size": pp, "virtual_pipeline_model_parallel_size": 40 // pp,
                "pipeline_model_parallel_layout": L70,
                "source": "scripts/performance/configs/llama/llama3_workload_base_configs.py (Llama-3-70B FP8 at PP8 VP5); "
                          "the layout has 40 stages and holds for any PP x VP of 40"} for pp in (2, 4, 5, 8, 10, 20, 40)]
def dense_releases(files):
    out = []
    for r in G["releases_for"]["deepseek-v3"]:
        r = json.loads(json.dumps(r))
        r["source"]["files"] = files
        r["source"].pop("notes", None)
        out.append(r)
    return out
recipe("llama3-70b", "Llama 3 70B pretraining, Megatron-Bridge performance recipes.", [],
       [legacy("any GPU, any precision")], layouts=l70_layouts,
       releases=dense_releases(["scripts/performance/configs/llama/llama3_workload_base_configs.py"]),
       notes=["Release-independent: the custom 40-stage layout of the FP8 recipe at PP8 VP5 (MEGATRON-NOTES.md section 8)."])
for task, extra, src in (("sft", {"workload": "sft", "packing": {"mean_sequence_length": 180, "sequence_length_std": 60, "packing_efficiency": 0.99}},
                          "SQuAD packed into rows of seq_length"),
                         ("lora", {"workload": "lora", "packing": {"mean_sequence_length": 180, "sequence_length_std": 60, "packing_efficiency": 0.99},
                                   "lora": {"rank": 16, "alpha": 32, "target_modules": ["linear_qkv"]}},
                          "SQuAD packed; LoRA dim 16, alpha 32 on linear_qkv")):
    doc = {"schema": "fmsim.recipe/1", "name": f"megatron-bridge/llama3-70b-{task}", "model": "llama3-70b",
           "description": f"Llama 3 70B {task.upper()} on SQuAD, Megatron-Bridge performance recipe ({src}).",
           "releases": [{"release": "26.06", "framework": "megatron-bridge@26.06",
                         "source": {"repository": MB, "commit": MAIN, "files": ["src/megatron/bridge/perf_recipes/llama/llama3.py",
                                                                                  "scripts/performance/configs/llama/llama3_llm_finetune.py"],
                                    "notes": "SQuAD's sequence lengths (mean 180 tokens, std 60, rows 99 % full) are an estimate, not a measured figure"}}],
           "precisions": "precision.presets.json", "layouts": l70_layouts,
           "common": {"training": extra}, "variants": [{"name": "any GPU, any precision"}]}
    dump(f"{OUT}/megatron-bridge/llama3-70b-{task}.json", doc)
recipe("llama3.1-405b", "Llama 3.1 405B pretraining, Megatron-Bridge performance recipes.", [],
       [legacy("any GPU, any precision")],
       common={"parallelism": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True}},
       releases=dense_releases(["src/megatron/bridge/recipes/llama/llama3.py"]),
       notes=["The 405B recipe accounts for the embedding and the loss in the pipeline split."])
for task, lora in (("sft", None), ("lora", {"rank": 32, "alpha": 32, "target_modules": ["linear_qkv"]})):
    tr = {"workload": task, "packing": {"mean_sequence_length": 180, "sequence_length_std": 60, "packing_efficiency": 0.99}}
    if lora: tr["lora"] = lora
    doc = {"schema": "fmsim.recipe/1", "name": f"nemo/llama2-{task}", "model": "llama2-7b",
           "description": f"Llama 2 {task.upper()} on packed SQuAD, NeMo 24.07 (megatron_gpt_finetuning_config.yaml).",
           "releases": [{"release": "24.07", "framework": "nemo@24.07",
                         "source": {"repository": "NVIDIA/NeMo", "ref": "r2.0.0",
                                    "files": ["examples/nlp/language_modeling/tuning/conf/megatron_gpt_finetuning_config.yaml"],
                                    "notes": "LoRA adapter_dim 32, alpha 32 on attention_qkv; SQuAD's lengths are an estimate"}}],
           "precisions": "precision.presets.json", "common": {"training": tr}, "variants": [{"name": "any GPU, any precision"}]}
    dump(f"{OUT}/nemo/llama2-{task}.json", doc)
print("ok")
