#!/usr/bin/env python3
"""Runs fmsim on the fine-tuning rows of ../shared/calibration (SFT and LoRA: Megatron-Bridge 26.06 and
NeMo 24.07) and prints predicted against measured tokens/s/GPU and model TFLOP/s/GPU.

The recipes behind the rows (docs/model.md, "Fine-tuning"):
- Megatron-Bridge 26.06 (src/megatron/bridge/perf_recipes/llama/*/llama3.py @ 067f987d): Llama-3-70B, SQuAD
  packed into rows of seq_length padded to full length; SFT FP8-CS; LoRA dim 16, alpha 32 on linear_qkv.
  The 26.06 SFT table counts model FLOPs over whole rows (flops_attention "per_row").
- NeMo 24.07 (NVIDIA/NeMo megatron_gpt_finetuning_config.yaml): LoRA adapter_dim 32, alpha 32 on
  attention_qkv; SQuAD packed to 4096; FP8 is Transformer Engine's delayed scaling.
SQuAD's sequence lengths are an estimate (mean 180 tokens, std 60, rows 99 % full), not a measured figure.

Usage: validate_finetune.py FMSIM [MEASUREMENTS]"""
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKING = {"mean_sequence_length": 180, "sequence_length_std": 60, "packing_efficiency": 0.99}
FP8 = {"FP8-CS": {"fp8_recipe": "tensorwise", "first_last_layers_bf16": True, "fp8_param_gather": True},
       "MXFP8": {"fp8_recipe": "mxfp8"}, "DELAYED": {"fp8_recipe": "delayed"}}
MODELS = {"LLAMA3_70B": "llama3-70b", "LLAMA2-7B": "llama2-7b", "LLAMA2-13B": "llama2-13b", "LLAMA2-70B": "llama2-70b"}
FABRIC = {"topology": "rail-optimized", "nodes_per_leaf": 32, "oversubscription": 1.0}


def cluster_of(system, gpus):
    """The row's system; an 8-GPU row on an NVL72 rack runs 9 replicas (the global batch scales)."""
    if system == "DGX-H100":
        return {"base": os.path.join(ROOT, "topologies", "dgx-h100-8node-ib.json"), "nodes": gpus // 8}, 1
    if system == "DGX-GB200":
        return {"name": "dgx-gb200-nvl72", "ultraserver_type": "dgx-gb200-nvl72", "ultraservers": 1, "fabric": FABRIC}, 72 // gpus
    if system == "DGX-GB300":
        return {"base": os.path.join(ROOT, "topologies", "dgx-gb300-nvl72-4rack-ib.json"), "ultraservers": 1}, 72 // gpus
    raise SystemExit(f"no cluster for {system}")


def rows(measurements):
    for case in measurements:
        if case["id"].startswith("train-mbridge-26.06-") and ("-sft-" in case["id"] or "-lora-" in case["id"]):
            for row in case["measured"]["rows"]:
                task = "sft" if "-sft-" in case["id"] else "lora"
                precision = "FP8-CS" if row["precision"] == "FP8" else row["precision"]
                lora = {"rank": 16, "alpha": 32, "target_modules": ["linear_qkv"]}
                yield case["id"], row, task, precision, lora, task == "sft"
        elif case["id"] == "train-nemo2407-h100-fp8-llama2-finetune":
            for row in case["measured"]["rows"]:
                row = dict(row, system="DGX-H100", seq_len=4096)
                lora = {"rank": 32, "alpha": 32, "target_modules": ["linear_qkv"]}
                yield case["id"], row, row["task"].lower(), "DELAYED", lora, False


def scenario(row, task, precision, lora, per_row):
    tp, pp, vp = int(row["tp"]), int(row["pp"]), int(row.get("vp", 1) if str(row.get("vp", 1)).isdigit() else 1)
    cluster, replicas = cluster_of(row["system"], int(row["gpus"]))
    par = {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": pp, "sequence_parallel": tp > 1,
           "micro_batch_size": int(row["mbs"]), "global_batch_size": int(row["gbs"]) * replicas}
    if vp > 1:
        par["virtual_pipeline_model_parallel_size"] = vp
    training = {"workload": task, "seq_length": int(row["seq_len"]), "precision": "fp8", "tp_comm_overlap": tp > 1,
                "packing": dict(PACKING, flops_attention="per_row" if per_row else "per_sequence"), **FP8[precision]}
    if task == "lora":
        training["lora"] = lora
    return {"schema": "fmsim.scenario/1", "name": f"{row['model']}-{task}", "cluster": cluster,
            "model": MODELS[row["model"]], "parallelism": par, "training": training}


def main():
    fmsim = sys.argv[1]
    path = sys.argv[2] if len(sys.argv) > 2 else os.path.join(ROOT, "..", "shared", "calibration", "measurements.json")
    with open(path) as f:
        measurements = json.load(f)
    print("| row | model | task | GPUs | precision | layout | measured tok/s/GPU | fmsim | error | measured TFLOP/s | fmsim |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for case_id, row, task, precision, lora, per_row in rows(measurements):
            doc = scenario(row, task, precision, lora, per_row)
            file = os.path.join(d, "s.json")
            with open(file, "w") as f:
                json.dump(doc, f)
            proc = subprocess.run([fmsim, "run", file, "--json", "-", "--allow-oom"], capture_output=True, text=True)
            layout = f"TP{row['tp']} PP{row['pp']} VP{row.get('vp', 1)}"
            if proc.returncode != 0:
                print(f"| {case_id} | {row['model']} | {task} | {row['gpus']} | {precision} | {layout} | "
                      f"{row['tokens_per_s_per_gpu']} | error: {proc.stderr.strip()[:80]} | | | |")
                continue
            out = json.loads(proc.stdout)
            error = out["tokens_per_s_per_gpu"] / row["tokens_per_s_per_gpu"] - 1
            oom = " (OOM)" if out["oom"] else ""
            print(f"| {case_id} | {row['model']} | {task} | {row['gpus']} | {precision} | {layout} | {row['tokens_per_s_per_gpu']} | "
                  f"{out['tokens_per_s_per_gpu']:.0f}{oom} | {100 * error:+.1f} % | {row['model_tflops_per_gpu']} | "
                  f"{out['model_tflops_per_gpu']:.0f} |")


if __name__ == "__main__":
    main()
