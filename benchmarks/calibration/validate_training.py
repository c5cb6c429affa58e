#!/usr/bin/env python3
"""Predicted vs measured training throughput for every training row of ../shared/calibration.

Each row becomes a scenario (the published model, GPU count, precision, batch and parallel layout on
DGX H100 nodes with NDR InfiniBand, the system the rows were measured on); fmsim run predicts
tokens/s/GPU and model TFLOP/s/GPU. Prints a table and the mean absolute error; --markdown FILE writes
the table for docs/validation.md, --json FILE the raw rows.
Rows may name their system (DGX-H100, the default; DGX-B200; DGX-GB200):
benchmarks/calibration/published_blackwell_training.json holds held-out Blackwell rows in the same format,
published_nemo2407_training.json the held-out NeMo 24.07 rows (a row may carry its model's configuration,
model_config, where fmsim has no preset), published_mbridge_verified_h100.json held-out MoE rows of current
recipes (a row may carry its recipe's settings, recipe: {"parallelism": {...}, "training": {...}}, over the
model's defaults below; a row with model TFLOP/s/GPU but no tokens/s is compared on TFLOP/s).
Usage: benchmarks/calibration/validate_training.py [--fmsim build/fmsim] [--measurements PATH]"""
import json
import os
import subprocess
import sys
import tempfile

from calibration_support import arguments

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

MODELS = {"LLAMA3_8B": "llama3-8b", "LLAMA3-8B": "llama3-8b", "LLAMA3_70B": "llama3-70b", "LLAMA3-70B": "llama3-70b",
          "LLAMA2-7B": "llama2-7b", "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b", "Nemotron-340B": "nemotron-4-340b",
          "DeepSeekV3": "deepseek-v3",
          "LLAMA3.1_405B": "llama3.1-405b", "GPT OSS 120B": "gpt-oss-120b", "Qwen3_30B_a3B": "qwen3-30b-a3b",
          "Qwen3_235B_a22B": "qwen3-235b-a22b", "GPT3-175B": "gpt3-175b"}
# Published recipes' pipeline layouts where they differ from an even split (Megatron-Bridge 25.11
# recipes; MEGATRON-NOTES.md section 8): Llama-3-70B FP8 at PP8 VP5 uses a custom layout (its 40 stages
# belong to that PP x VP only); 405B and Qwen3-235B account for the embedding and loss in the split.
# DeepSeek-V3 at PP8 VP4 (DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1) uses "Et|(tt|)*30mL"; fmsim has no MTP
# layer (m), so its last stage keeps only the loss.
LAYOUT_STAGES = {"llama3-70b": 40, "deepseek-v3": 32}
LAYOUTS = {"llama3-70b": {"pipeline_model_parallel_layout": "Et*2|(t*2|)*34,t*3|(t*2|)*3,tL"},
           "deepseek-v3": {"pipeline_model_parallel_layout": "Et|(tt|)*30L"},
           "llama3.1-405b": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True},
           "qwen3-235b-a22b": {"account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True}}

# Published recipes' selective recompute (Megatron-Bridge scripts/performance/configs/gpt_oss/
# gpt_oss_workload_base_configs.py: GPT_OSS_120B_PRETRAIN_CONFIG_H100_BF16_V1 recomputes the norms and
# the experts' activation).
# DeepSeek-V3's H100 recipe (DEEPSEEK_V3_PRETRAIN_CONFIG_H100_V1) recomputes mla_up_proj and mlp.
RECOMPUTE = {"gpt-oss-120b": ["layernorm", "moe_act"], "deepseek-v3": ["mla_up_proj", "mlp"]}

# Published recipes' token dispatcher where it is not alltoall (DeepSeek-V3 on H100: DeepEP / HybridEP,
# moe_flex_dispatcher_backend in the H100 base config).
DISPATCHER = {"deepseek-v3": "flex"}

# Published recipes' EP all-to-all overlap (Megatron-Bridge scripts/performance/configs/qwen/
# qwen3_workload_base_configs.py: QWEN3_235B_A22B_PRETRAIN_CONFIG_H100_FP8_CS_V1, the row's TP2 PP8 VP4
# EP32 GBS 2048 layout, sets moe_a2a_overlap=True, i.e. overlap_moe_expert_parallel_comm and
# delay_wgrad_compute).
A2A_OVERLAP = {"qwen3-235b-a22b"}

# The rows' precision names as FP8 recipes. Megatron-Bridge's FP8-CS preset
# (bf16_with_fp8_current_scaling_mixed, src/megatron/bridge/training/mixed_precision.py) is current
# (tensorwise) scaling with the first and last transformer layer in BF16 and FP8 parameter all-gather;
# FP8-MX is MXFP8; the NeMo 24.07 rows' plain "FP8" is Transformer Engine's delayed scaling.
FP8_RECIPES = {"FP8-CS": {"fp8_recipe": "tensorwise", "first_last_layers_bf16": True, "fp8_param_gather": True},
               "FP8-MX": {"fp8_recipe": "mxfp8"}, "FP8": {"fp8_recipe": "delayed"}}


def as_int(value, default=1):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def rows_of(measurements):
    for case in measurements:
        if case["category"] != "training":
            continue
        if "rows" in case["measured"]:
            for row in case["measured"]["rows"]:
                yield case["id"], row
        else:
            setup = dict(case["setup"])
            setup.update(case["measured"])
            yield case["id"], setup


def scenario_of(row):
    model = MODELS.get(row["model"], row["model"].lower())
    gpus = as_int(row["gpus"])
    precision = "fp8" if "FP8" in str(row["precision"]).upper() else "bf16"
    tp, pp, cp = as_int(row.get("tp")), as_int(row.get("pp")), as_int(row.get("cp"))
    vp, ep = as_int(row.get("vp")), as_int(row.get("ep"))
    fsdp = as_int(row.get("fsdp"), 0)
    par = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp,
           "context_parallel_size": cp, "expert_model_parallel_size": ep, "expert_tensor_parallel_size": 1,
           "sequence_parallel": tp > 1, "micro_batch_size": as_int(row["mbs"]), "global_batch_size": as_int(row["gbs"]),
           "data_parallel_sharding_strategy": "optim_grads_params" if fsdp > 0 else "optim"}
    if vp > 1:
        par["virtual_pipeline_model_parallel_size"] = vp
    if pp * vp > 1 and LAYOUT_STAGES.get(model, pp * vp) == pp * vp:
        par.update(LAYOUTS.get(model, {}))
    training = {"seq_length": as_int(row["seq_len"]), "precision": precision, "tp_comm_overlap": tp > 1,
                "overlap_grad_reduce": True, "overlap_param_gather": True}
    if precision == "fp8":
        training.update(FP8_RECIPES[str(row["precision"]).upper()])
    if model in DISPATCHER:
        training["moe_token_dispatcher_type"] = DISPATCHER[model]
    if model in A2A_OVERLAP:
        training["overlap_moe_expert_parallel_comm"] = True
    if model in RECOMPUTE:
        training.update({"recompute_granularity": "selective", "recompute_modules": RECOMPUTE[model]})
    # A row's own recipe settings (held-out files) go over the model's defaults above.
    par.update(row.get("recipe", {}).get("parallelism", {}))
    training.update(row.get("recipe", {}).get("training", {}))
    cluster, cluster_gpus = cluster_of(row.get("system", "DGX-H100"), gpus)
    par["global_batch_size"] *= cluster_gpus // gpus  # more replicas, the same micro-batches per replica
    return {"schema": "fmsim.scenario/1", "name": f"{model}-{gpus}gpu",
            "cluster": cluster, "model": row.get("model_config", model), "parallelism": par, "training": training}


def cluster_of(system, gpus):
    """The row's system and its GPU count: DGX H100 or B200 nodes of 8 GPUs on NDR InfiniBand (the row's
    GPUs), or one GB200 NVL72 domain (72 GPUs, for rows of fewer)."""
    fabric = {"topology": "rail-optimized", "nodes_per_leaf": 32, "oversubscription": 1.0}
    if system == "DGX-H100":
        return {"base": os.path.join(ROOT, "topologies", "dgx-h100-8node-ib.json"), "nodes": gpus // 8}, gpus
    if system == "DGX-B200":
        return {"name": "dgx-b200-ib", "instance_type": "dgx-b200", "nodes": gpus // 8, "fabric": fabric}, gpus
    if system == "DGX-GB200" and gpus <= 72 and 72 % gpus == 0:
        return {"name": "dgx-gb200-nvl72", "ultraserver_type": "dgx-gb200-nvl72", "ultraservers": 1, "fabric": fabric}, 72
    sys.exit(f"no cluster for a {gpus}-GPU row on {system}")


def main():
    args, measurements = arguments(__doc__)
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        for case_id, row in rows_of(measurements):
            scenario = scenario_of(row)
            path = os.path.join(tmp, scenario["name"] + ".json")
            with open(path, "w") as f:
                json.dump(scenario, f)
            proc = subprocess.run([args.fmsim, "run", path, "--json", "-", "--allow-oom"], capture_output=True, text=True)
            if proc.returncode != 0:
                sys.exit(f"fmsim failed on {case_id} {row['model']}: {proc.stderr}")
            out = json.loads(proc.stdout)
            # Rows that give only model TFLOP/s/GPU are compared on it (fmsim counts Megatron's FLOPs).
            by_tokens = "tokens_per_s_per_gpu" in row
            measured = float(row["tokens_per_s_per_gpu"]) if by_tokens else float(row["model_tflops_per_gpu"])
            predicted = out["tokens_per_s_per_gpu"] if by_tokens else out["model_tflops_per_gpu"]
            results.append({"case": case_id, "model": row["model"] + (f" ({row['system']})" if "system" in row else ""), "gpus": as_int(row["gpus"]), "precision": row["precision"],
                            "layout": f"TP{as_int(row.get('tp'))} PP{as_int(row.get('pp'))} CP{as_int(row.get('cp'))} "
                                      f"VP{as_int(row.get('vp'))} EP{as_int(row.get('ep'))}"
                                      + (" FSDP" if as_int(row.get('fsdp'), 0) > 0 else ""),
                            "measured_tokens_per_s_per_gpu": measured if by_tokens else None,
                            "predicted_tokens_per_s_per_gpu": out["tokens_per_s_per_gpu"],
                            "measured_tflops": float(row.get("model_tflops_per_gpu", 0)),
                            "predicted_tflops": out["model_tflops_per_gpu"], "error": predicted / measured - 1,
                            "oom": out["oom"], "wall_s": out["simulation"]["wall_s"]})
    header = "| model | GPUs | precision | layout | measured tok/s/GPU | fmsim tok/s/GPU | error | measured TFLOP/s | fmsim TFLOP/s |"
    lines = [header, "|" + "---|" * 9]
    for r in results:
        measured = "-" if r["measured_tokens_per_s_per_gpu"] is None else f"{r['measured_tokens_per_s_per_gpu']:.0f}"
        lines.append(f"| {r['model']} | {r['gpus']} | {r['precision']} | {r['layout']} | {measured} | "
                     f"{r['predicted_tokens_per_s_per_gpu']:.0f} | {100 * r['error']:+.1f} % | {r['measured_tflops']:.0f} | "
                     f"{r['predicted_tflops']:.0f}{' (OOM)' if r['oom'] else ''} |")
    mean_abs = sum(abs(r["error"]) for r in results) / len(results)
    lines.append("")
    lines.append(f"Mean absolute error over {len(results)} rows: {100 * mean_abs:.1f} %.")
    print("\n".join(lines))
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
