"""Each training case of ../shared/calibration as rows to simulate (or to list with the reason they cannot be).

items_of(case, root) returns dicts with: case, label, group {generation, system, kind, workload, stack},
metric, measured, and either scenario (an fmsim scenario document) and predict (fmsim run JSON -> the
metric), or reason. `assumptions` names what the source leaves open and the row assumes."""
import math
import os
import re

from training_recipes import (GPT3_5B, MBRIDGE_PRECISION, MODELS, NEMO2407_PRECISION, UNPUBLISHED, fine_tuning_settings,
                              recipe_reference, recipe_sets)

MOE = {"deepseek-v3", "gpt-oss-120b", "qwen3-30b-a3b", "qwen3-235b-a22b", "kimi-k2"}
HYBRID = {"nemotron-3-nano", "nemotron-3-super", "nemotron-3-ultra"}
GENERATION = {"DGX-A100": "A100", "DGX-H100": "H100", "p5": "H100", "DGX-B200": "Blackwell", "DGX-GB200": "Blackwell",
              "DGX-B300": "Blackwell Ultra", "DGX-GB300": "Blackwell Ultra"}
IB_FABRIC = {"topology": "rail-optimized", "nodes_per_leaf": 32, "oversubscription": 1.0}


def first_int(value, default=1):
    """'4 (8)' -> 4; 'n/a', '', None -> default."""
    match = re.match(r"\s*(\d+)", str(value)) if value is not None else None
    return int(match.group(1)) if match else default


def alt_int(value, default=1):
    """'4 (8)' -> 8 (the alternate configuration's value); '4' -> 4."""
    match = re.search(r"\((\d+)\)", str(value)) if value is not None else None
    return int(match.group(1)) if match else first_int(value, default)


def cluster_for(system, gpus, root):
    """The cluster a row ran on, at least `gpus` GPUs (the job takes `gpus` of them)."""
    if system == "DGX-H100":
        return {"base": os.path.join(root, "topologies", "dgx-h100-8node-ib.json"), "nodes": math.ceil(gpus / 8)}
    if system in ("DGX-A100", "DGX-B200", "DGX-B300"):
        instance = {"DGX-A100": "dgx-a100", "DGX-B200": "dgx-b200", "DGX-B300": "dgx-b300"}[system]
        return {"name": instance + "-ib", "instance_type": instance, "nodes": math.ceil(gpus / 8), "fabric": IB_FABRIC}
    if system in ("DGX-GB200", "DGX-GB300"):
        rack = {"DGX-GB200": "dgx-gb200-nvl72", "DGX-GB300": "dgx-gb300-nvl72"}[system]
        return {"name": rack + "-ib", "ultraserver_type": rack, "ultraservers": math.ceil(gpus / 72),
                "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 18, "oversubscription": 1.0}}
    if system == "p5":
        return {"name": "p5", "instance_type": "p5.48xlarge", "nodes": math.ceil(gpus / 8),
                "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 32, "oversubscription": 1.0}}
    raise ValueError(system)


def scenario(name, system, gpus, model, tp, pp, cp, vp, ep, mbs, gbs, seq, training, root, fsdp=False, extra_par=None):
    dp = gpus // (tp * pp * cp)
    par = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp, "context_parallel_size": cp,
           "expert_model_parallel_size": ep, "expert_tensor_parallel_size": 1, "sequence_parallel": tp > 1,
           "micro_batch_size": mbs, "global_batch_size": gbs, "data_parallel_size": dp,
           "data_parallel_sharding_strategy": "optim_grads_params" if fsdp else "optim"}
    if vp > 1:
        par["virtual_pipeline_model_parallel_size"] = vp
    par.update(extra_par or {})
    train = {"seq_length": seq, "tp_comm_overlap": tp > 1, "overlap_grad_reduce": True, "overlap_param_gather": True}
    train.update(training)
    return {"schema": "fmsim.scenario/1", "name": name, "cluster": cluster_for(system, gpus, root), "model": model,
            "parallelism": par, "training": train}


def on_stack(doc, framework, keep_sharding=False):
    """Names the scenario's software stack (configs/stacks) and leaves the overlaps, and unless kept the
    sharding, that scenario() fills in for Megatron-Core to the stack's own defaults."""
    doc["training"]["framework"] = framework
    for key in ("tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"):
        doc["training"].pop(key, None)
    if not keep_sharding:
        doc["parallelism"].pop("data_parallel_sharding_strategy", None)
    if framework.startswith("megatron-lm@"):
        doc["parallelism"].pop("sequence_parallel", None)  # Megatron-LM 2021 predates sequence parallelism
    return doc


def tokens_per_gpu(out):
    return out["tokens_per_s_per_gpu"]


def tflops_per_gpu(out):
    return out["model_tflops_per_gpu"]


def item(case, label, group, metric, measured, scenario_doc=None, predict=None, reason=None, assumptions=()):
    return {"case": case, "label": label, "group": group, "metric": metric, "measured": float(measured),
            "scenario": scenario_doc, "predict": predict, "reason": reason, "assumptions": list(assumptions)}


def kind_of(model):
    return "hybrid" if model in HYBRID else "MoE" if model in MOE else "dense"


# ---- Megatron-Bridge / NeMo tables (rows of model, gpus, precision, gbs, mbs, seq_len, tp, pp, cp, vp, ep) ----

def mbridge_items(case, root):
    """Megatron-Bridge tables, and the held-out files of benchmarks/calibration/ in the same row format (a row
    may carry model_config where fmsim has no preset and recipe {parallelism, training} over the defaults)."""
    setup = case["setup"]
    release = re.sub(r" NeMo Container", "", str(setup.get("release", "")))
    nemo = "24.07" in release
    stack = release if nemo else f"Megatron-Bridge {release}" if release else "Megatron-Core/Bridge recipes (held out)"
    workload = {"SFT Performance": "sft", "LoRA Performance": "lora"}.get(setup.get("task"), "pretrain")
    out = []
    for row in case["measured"]["rows"]:
        row = dict(row)
        row.setdefault("system", setup.get("system", "DGX-H100"))
        out += mbridge_row_items(case["id"], row, stack, workload, root, NEMO2407_PRECISION if nemo else MBRIDGE_PRECISION,
                                 release=release)
    return out


# Megatron-Bridge r0.1.0 (25.09) perf_matrix entries with cuda_graphs: true (the others are false).
R0109_CUDA_GRAPHS = {("qwen3-30b-a3b", "GB200"), ("qwen3-30b-a3b", "B200"), ("qwen3-235b-a22b", "GB200")}


def mbridge_row_items(case_id, row, stack, workload, root, precisions=MBRIDGE_PRECISION, release=None):
    raw_name = row["model"]
    base_name = re.sub(r"\s*\((tokendrop|w/ MTP)\)", "", raw_name)
    system = row["system"]
    gen = GENERATION[system]
    precision = str(row.get("precision"))
    assumptions = []
    if precision == "not stated in table":
        precision = "FP8-CS (FP8-MX)" if "alt_tokens_per_s_per_gpu" in row else "FP8-CS"
        assumptions.append("precision not stated; read as FP8-CS, as the next release's table labels the same rows")
    primary, _, alternate = precision.partition(" (")
    alternate = alternate.rstrip(")")
    model = MODELS.get(base_name) or row.get("model_config")
    group = {"generation": gen, "system": system, "kind": kind_of(MODELS.get(base_name)) if model else "?", "workload": workload,
             "stack": stack}
    # Rows that give only model TFLOP/s/GPU are compared on it (fmsim counts Megatron's FLOPs).
    by_tokens = "tokens_per_s_per_gpu" in row
    metric, predict = ("tokens/s/GPU", tokens_per_gpu) if by_tokens else ("model TFLOP/s/GPU", tflops_per_gpu)
    configs = [(primary, first_int, row["tokens_per_s_per_gpu" if by_tokens else "model_tflops_per_gpu"], "")]
    if "alt_tokens_per_s_per_gpu" in row:
        # The parenthesised cells: the other quantization granularity (32x32 blocks = MXFP8 on Blackwell,
        # 128x128 weights / 1x128 activations = blockwise FP8 on H100), with its own layout where it differs.
        configs.append((alternate or ("FP8-MX" if gen != "H100" else "FP8-BLOCKWISE"), alt_int,
                        row["alt_tokens_per_s_per_gpu"], " [alternate]"))
    items = []
    for prec, pick, measured, suffix in configs:
        gpus = first_int(row["gpus"])
        tp, pp, cp = pick(row.get("tp")), pick(row.get("pp")), pick(row.get("cp"))
        vp, ep = pick(row.get("vp")), pick(row.get("ep"))
        mbs, gbs, seq = pick(row.get("mbs")), pick(row.get("gbs")), pick(row.get("seq_len"))
        fsdp = pick(row.get("fsdp"), 0) > 0
        layout = f"TP{tp} PP{pp} CP{cp} VP{vp} EP{ep}" + (" FSDP" if fsdp else "")
        label = f"{raw_name} {system} {gpus} GPUs {prec} {layout}{suffix}"
        if prec not in precisions and prec != "FP8-BLOCKWISE":
            items.append(item(case_id, label, group, metric, measured, reason=f"precision {prec!r} not mapped"))
            continue
        if base_name in UNPUBLISHED:
            items.append(item(case_id, label, group, metric, measured, reason=UNPUBLISHED[base_name]))
            continue
        if model is None:
            items.append(item(case_id, label, group, metric, measured, reason=f"no preset for model {raw_name!r}"))
            continue
        if ep and gpus % (pp * tp * cp) == 0 and (gpus // pp) % ep:
            items.append(item(case_id, label, group, metric, measured,
                              reason=f"the published layout cannot exist: EP {ep} does not divide the {gpus // pp} GPUs of a "
                                     f"pipeline stage ({gpus} GPUs / PP {pp}); Megatron-Core refuses it"))
            continue
        if prec == "FP8-BLOCKWISE":
            training = {"precision": "fp8", "fp8_recipe": "blockwise"}
        else:
            training = dict(precisions[prec])
        # The published recipe of the model (configs/recipes/megatron-bridge/, at the row's release): fmsim
        # merges the variant for the row's GPU, precision and PP x VP under the row's own settings. VP is
        # always given so that a variant of another VP is not picked.
        par = {"virtual_pipeline_model_parallel_size": vp}
        name = MODELS.get(base_name)
        reference = name and recipe_reference(f"megatron-bridge/{name}" + ("" if workload == "pretrain" else f"-{workload}"), release)
        if reference:
            training["recipe"] = reference
        par.update(row.get("recipe", {}).get("parallelism", {}))
        training.update(row.get("recipe", {}).get("training", {}))
        # The 26.06 SFT table counts model FLOPs over whole packed rows (it predates Megatron-Bridge's
        # per-sequence count, pull request 4511).
        training.update(fine_tuning_settings(workload, flops_per_row=workload == "sft"))
        if "tokendrop" in raw_name:
            # Megatron-Bridge's token-drop rows: capacity factor 1, padded (apply_moe_token_drop's defaults,
            # src/megatron/bridge/training/utils/moe_token_drop.py at r0.1.0).
            training["moe_expert_capacity_factor"] = 1.0
            training["moe_pad_expert_input_to_capacity"] = True
            # Megatron-Core refuses padding with DeepEP, and 25.09 had no HybridEP: the alltoall dispatcher.
            training["moe_token_dispatcher_type"] = "alltoall"
            # 25.09's perf_matrix sets cuda_graphs per model and GPU, which set_cuda_graph_overrides turns into
            # enable_cuda_graph (Megatron-Core's "local" graphs of whole layers; scripts/performance/configs/
            # */*_llm_pretrain.yaml and utils/helpers.py at r0.1.0).
            if (name, system.replace("DGX-", "")) in R0109_CUDA_GRAPHS:
                training["cuda_graph_impl"] = "local"
        doc = scenario(f"{base_name}-{system}-{gpus}".replace(" ", "_"), system, gpus, model, tp, pp, cp, vp, ep, mbs, gbs, seq, training,
                       root, fsdp=fsdp, extra_par=par)
        if reference and recipe_sets(reference, "tp_comm_overlap"):
            # The recipe says whether its performance scripts overlap TP communication (CommOverlapConfig);
            # the others do where TP > 1, as scenario() sets it.
            doc["training"].pop("tp_comm_overlap", None)
        items.append(item(case_id, label, group, metric, measured, doc, predict, assumptions=assumptions))
    return items


def nemo2407_items(case, root):
    """NeMo 24.07 rows: one configuration per case (setup + measured), or the fine-tuning table."""
    setup, measured = case["setup"], case["measured"]
    stack = "NeMo 24.07"
    if "rows" in measured and not all("task" in r for r in measured["rows"]):
        items = mbridge_items(case, root)  # a pretraining table (the held-out NeMo 24.07 rows)
        for it in items:
            if it["scenario"]:
                it["scenario"]["training"]["framework"] = "nemo@24.07"
        return items
    if "rows" in measured:  # SFT / LoRA of Llama 2 on packed 4096-token sequences
        items = []
        for row in measured["rows"]:
            model = MODELS[row["model"]]
            workload = row["task"].lower()
            gpus = row["gpus"]
            label = f"{row['model']} {row['task']} {gpus} GPUs TP{row['tp']} PP{row['pp']}"
            group = {"generation": "H100", "system": "DGX-H100", "kind": "dense", "workload": workload, "stack": stack}
            training = dict(NEMO2407_PRECISION[setup["precision"]])
            training.update(fine_tuning_settings(workload), recipe=f"nemo/llama2-{workload}@24.07")
            doc = scenario(f"{model}-{workload}", "DGX-H100", gpus, model, row["tp"], row["pp"], 1, 1, 1, row["mbs"],
                           row["gbs"], setup["packed_seq_len"], training, root)
            doc["training"]["framework"] = "nemo@24.07"
            items.append(item(case["id"], label, group, "tokens/s/GPU", row["tokens_per_s_per_gpu"], doc, tokens_per_gpu))
        return items
    row = dict(setup)
    model_name = row["model"]
    model = MODELS.get(model_name) or (GPT3_5B if model_name == "GPT3-5B" else None)
    gpus = row["gpus"]
    label = f"{model_name} {gpus} GPUs {row['precision']} TP{row['tp']} PP{row['pp']} CP{row['cp']} VP{row['vp']}"
    group = {"generation": "H100", "system": "DGX-H100", "kind": "dense", "workload": "pretrain", "stack": stack}
    doc = scenario(f"{model_name}-{gpus}", "DGX-H100", gpus, model, row["tp"], row["pp"], row["cp"], row["vp"], 1,
                   row["mbs"], row["gbs"], row["seq_len"], dict(NEMO2407_PRECISION[row["precision"]]), root)
    doc["training"]["framework"] = "nemo@24.07"
    return [item(case["id"], label, group, "tokens/s/GPU", measured["tokens_per_s_per_gpu"], doc, tokens_per_gpu)]


# ---- papers and other stacks ----

def gpt_config(hidden, layers, heads, vocab, seq):
    """A GPT-3-style model as Megatron-LM trains it (learned positions, biases, GeLU MLP of 4h, tied embeddings)."""
    return {"model_type": "gpt", "hidden_size": hidden, "intermediate_size": 4 * hidden, "num_hidden_layers": layers,
            "num_attention_heads": heads, "num_key_value_heads": heads, "vocab_size": vocab, "hidden_act": "gelu",
            "position_embedding_type": "learned_absolute", "max_position_embeddings": seq, "add_bias_linear": True,
            "tie_word_embeddings": True}


def megatron2021_flops(batch, seq, layers, hidden, vocab):
    """Narayanan et al. 2021, eq. (3): F = 96 B s l h^2 (1 + s/6h + V/16lh), recomputation included."""
    return 96 * batch * seq * layers * hidden ** 2 * (1 + seq / (6 * hidden) + vocab / (16 * layers * hidden))


def paper_tflops(flops, gpus):
    return lambda out: flops / (out["step_time_s"] * gpus) / 1e12


def megatron2021_items(case, root):
    s = case["setup"]
    m = s["model"]
    gpus, tp, pp, batch = s["gpus"], s["tp"], s["pp"], s["global_batch"]
    vp = 2 if pp > 1 and (m["layers"] // pp) % 2 == 0 and m["layers"] % pp == 0 else 1
    group = {"generation": "A100", "system": "DGX-A100", "kind": "dense", "workload": "pretrain", "stack": "Megatron-LM 2021"}
    label = f"GPT {m['params_B']}B {gpus} GPUs TP{tp} PP{pp}"
    model = gpt_config(m["hidden"], m["layers"], m["attention_heads"], m["vocab"], m["seq_len"])
    doc = on_stack(scenario(f"gpt-{m['params_B']}b", "DGX-A100", gpus, model, tp, pp, 1, vp, 1, 1, batch, m["seq_len"],
                            {"precision": "bf16", "recompute_granularity": "full"}, root), "megatron-lm@2021")
    flops = megatron2021_flops(batch, m["seq_len"], m["layers"], m["hidden"], m["vocab"])
    return [item(case["id"], label, group, "TFLOP/s/GPU (paper's count, eq. 3)", case["measured"]["tflops_per_gpu"], doc,
                 paper_tflops(flops, gpus), assumptions=[f"micro-batch 1 and {vp} virtual stages (the paper's table gives "
                                                          "neither); FP16 priced as BF16 (same A100 tensor rate)"])]


def ptd_vs_zero3_items(case, root):
    shapes = {174.6: (12288, 96, 96), 529.6: (20480, 105, 128)}  # hidden, layers, heads (the paper's Table 1 rows)
    items = []
    for row in case["measured"]["rows"]:
        hidden, layers, heads = shapes[row["params_B"]]
        gpus, batch, mbs = row["gpus"], first_int(row["batch"]), row["microbatch"]
        zero3 = row["scheme"] == "ZeRO-3"
        tp, pp = (1, 1) if zero3 else (8, row["model_parallel"] // 8)
        group = {"generation": "A100", "system": "DGX-A100", "kind": "dense", "workload": "pretrain",
                 "stack": "Megatron-LM 2021" if not zero3 else "DeepSpeed ZeRO-3 (2021)"}
        label = f"{row['scheme']} {row['params_B']}B {gpus} GPUs micro-batch {mbs}" + ("" if zero3 else f" TP{tp} PP{pp}")
        doc = scenario(f"{row['scheme']}-{row['params_B']}b-{gpus}", "DGX-A100", gpus, gpt_config(hidden, layers, heads, 51200, 2048),
                       tp, pp, 1, 1, 1, mbs, batch, 2048, {"precision": "bf16", "recompute_granularity": "full"}, root,
                       fsdp=zero3)
        on_stack(doc, "deepspeed@2021" if zero3 else "megatron-lm@2021", keep_sharding=zero3)
        flops = megatron2021_flops(batch, 2048, layers, hidden, 51200)
        items.append(item(case["id"], label, group, "TFLOP/s/GPU (paper's count, eq. 3)", row["tflops_per_gpu"], doc,
                          paper_tflops(flops, gpus)))
    return items


def megascale_items(case, root):
    s = case["setup"]
    m = s["model"]
    hidden, layers, heads = m["hidden"], m["layers"], m["heads"]
    model = gpt_config(hidden, layers, heads, m["vocab"], m["seq_len"])
    training = {"precision": "bf16", "recompute_granularity": "selective"}
    assumptions = ["micro-batch 1; selective recompute; DGX A100 nodes with one 200 Gb/s NIC per GPU for the paper's "
                   "Ampere nodes; MegaScale's model changes (parallel block, sliding-window attention, LAMB) are not "
                   "modelled (its stack's kernels and overlaps are: configs/stacks/megascale.json)"]
    items = []
    if "rows" in case["measured"]:  # 175B strong scaling, iteration times
        for row in case["measured"]["rows"]:
            gpus = row["gpus"]
            group = {"generation": "A100", "system": "DGX-A100", "kind": "dense", "workload": "pretrain",
                     "stack": "MegaScale (2024)" if row["method"] == "MegaScale" else "Megatron-LM (MegaScale baseline)"}
            doc = scenario(f"megascale-175b-{gpus}", "DGX-A100", gpus, model, m["tp"], m["pp"], 1, m["interleave"], 1, 1,
                           s["global_batch"], m["seq_len"], training, root)
            if row["method"] == "MegaScale":
                on_stack(doc, "megascale@2024")
            items.append(item(case["id"], f"175B {row['method']} {gpus} GPUs", group, "iteration s", row["iter_s"], doc,
                              lambda out: out["step_time_s"], assumptions=assumptions))
        return items
    for method, key in (("MegaScale", "mfu_megascale"), ("Megatron-LM", "mfu_megatron_lm")):
        for gpus, mfu in zip(s["gpus"], case["measured"][key]):
            group = {"generation": "A100", "system": "DGX-A100", "kind": "dense", "workload": "pretrain",
                     "stack": "MegaScale (2024)" if method == "MegaScale" else "Megatron-LM (MegaScale baseline)"}
            doc = scenario(f"megascale-530b-{gpus}", "DGX-A100", gpus, model, m["tp"], m["pp"], 1, m["interleave"], 1, 1,
                           gpus, m["seq_len"], training, root)
            if method == "MegaScale":
                on_stack(doc, "megascale@2024")
            items.append(item(case["id"], f"530B {method} {gpus} GPUs", group, "MFU", mfu, doc, lambda out: out["mfu"],
                              assumptions=assumptions))
    return items


def llama3_405b_items(case, root):
    s = case["setup"]
    gpus, tp, cp, pp, seq = s["gpus"], s["tp"], s["cp"], s["pp"], s["seq_len"]
    dp = gpus // (tp * cp * pp)
    group = {"generation": "H100", "system": "Meta H100 RoCE", "kind": "dense", "workload": "pretrain",
             "stack": "Meta Llama 3 (2024)"}
    label = f"Llama 3 405B {gpus} GPUs seq {seq} TP{tp} CP{cp} PP{pp} DP{dp}"
    doc = scenario(f"llama3-405b-{seq}", "DGX-H100", gpus, "llama3.1-405b", tp, pp, cp, 4, 1, 1, dp * s["batch_size_per_dp"],
                   seq, {"precision": "bf16"}, root,
                   extra_par={"data_parallel_sharding_strategy": "optim_grads",
                              "account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True})
    return [item(case["id"], label, group, "model TFLOP/s/GPU", case["measured"]["tflops_per_gpu"], doc, tflops_per_gpu,
                 assumptions=["micro-batch 1 and 4 virtual stages (the paper tunes them); DGX H100 nodes on a non-blocking "
                              "fabric for Meta's RoCE cluster (1:7 above 3,072-GPU pods)"])]


def torchtitan_items(case, root):
    m = case["measured"]
    group = {"generation": "H100", "system": "p5", "kind": "dense", "workload": "pretrain", "stack": "torchtitan (2025-03)"}
    items = []
    # llama3_8b.toml: selective activation checkpointing with selective_ac_option "op" (the stack's op-level
    # policy); the second run adds compile=true and float8 (tensorwise) with FP8 all-gathers.
    for key, training in (("default_bf16", {"precision": "bf16"}),
                          ("compile_plus_float8", {"precision": "fp8", "fp8_recipe": "tensorwise", "fp8_param_gather": True,
                                                   "torch_compile": True})):
        training = dict(training, recompute_granularity="selective")
        doc = on_stack(scenario(f"torchtitan-{key}", "p5", 32, "llama3-8b", 1, 1, 1, 1, 1, 1, 32, 8192, training, root, fsdp=True),
                       "torchtitan@2025-03", keep_sharding=True)
        items.append(item(case["id"], f"Llama 3 8B FSDP2 32 x H100 {key}", group, "tokens/s/GPU", m[key]["tps_per_gpu"], doc,
                          tokens_per_gpu, assumptions=["the llama3_8b.toml read (selective op checkpointing); the AWS run's "
                                                       "exact config is not pinned"]))
    return items


def long_context_items(case, root):
    group = {"generation": "H100", "system": "DGX-H100", "kind": "dense", "workload": "pretrain", "stack": "NeMo (long context)"}
    items = []
    for row in case["measured"]["rows"]:
        gpus, seq = row["gpus"], row["seq_len_K"] * 1024
        tp, pp, cp, dp = row["tp"], row["pp"], row["cp"], row["dp"]
        label = f"Llama 2 7B seq {row['seq_len_K']}K {gpus} GPUs TP{tp} PP{pp} CP{cp} DP{dp}"
        doc = scenario(f"llama2-7b-{row['seq_len_K']}k", "DGX-H100", gpus, "llama2-7b", tp, pp, cp, 1, 1, 1, 8 * dp, seq,
                       {"precision": "fp8", "fp8_recipe": "delayed"}, root)
        items.append(item(case["id"], label + " (with CP)", group, "model TFLOP/s/GPU", row["with_cp_tflops"], doc,
                          tflops_per_gpu, assumptions=["8 micro-batches of 1 per replica (the page gives no batch)"]))
        if cp > 1:
            items.append(item(case["id"], label.replace(f" CP{cp}", "") + " (without CP)", group, "model TFLOP/s/GPU",
                              row["without_cp_tflops"], reason="the page gives no configuration for its 'without CP' column"))
    return items


def unexpressible_items(case):
    group = {"generation": "-", "system": "-", "kind": "-", "workload": "pretrain", "stack": "-"}
    if case["id"] == "train-mlperf-gpt3-175b-time-to-train":
        return [item(case["id"], f"{r['round']} {r['submitter']} {r['gpus']}", group, "minutes", r["minutes"],
                     reason="time to train depends on the tokens to reach the target quality, which the source does not "
                            "give (and MLPerf v5.x is reserved for independent checks)") for r in case["measured"]["rows"]]
    if case["id"] == "train-megatronlm-readme-h100-scaling":
        return [item(case["id"], label, group, "MFU", value,
                     reason="per-model configurations and figures are only in images; the text gives ranges")
                for label, value in (("weak scaling 2B-462B", 0.41), ("strong scaling GPT-3 175B 96-4608 GPUs", 0.47))]
    return [item(case["id"], case["id"], group, "-", 0, reason="no adapter for this case (validate_training.py)")]


def items_of(case, root):
    cid = case["id"]
    if cid.startswith("train-mbridge-"):
        return mbridge_items(case, root)
    if cid.startswith("train-nemo2407-"):
        return nemo2407_items(case, root)
    if cid.startswith("train-megatron2021-gpt-"):
        return megatron2021_items(case, root)
    if cid == "train-megatron2021-ptd-vs-zero3":
        return ptd_vs_zero3_items(case, root)
    if cid.startswith("train-megascale-"):
        return megascale_items(case, root)
    if cid.startswith("train-llama3-405b-"):
        return llama3_405b_items(case, root)
    if cid == "train-aws-p5-4node-torchtitan-llama3-8b":
        return torchtitan_items(case, root)
    if cid == "train-nemo-h100-llama2-7b-long-context-cp":
        return long_context_items(case, root)
    if "rows" not in case["measured"] and "model" in case["setup"] and "gpus" in case["setup"] and "tp" in case["setup"]:
        return nemo2407_items(case, root)  # one configuration per case
    if isinstance(case["measured"].get("rows"), list) and all("model" in r and "gpus" in r for r in case["measured"]["rows"]):
        return mbridge_items(case, root)  # held-out files in the table format
    return unexpressible_items(case)
