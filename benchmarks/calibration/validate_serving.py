#!/usr/bin/env python3
"""Predicted vs measured serving throughput for every inference row of ../shared/calibration.

Each row becomes an offline scenario (all requests queued at t = 0) on the system it was measured on:
- inf-trtllm-llama-3.1-8b-h100-tp1-fp8: one H100 (p5.48xlarge node, one replica of TP1), Llama-3.1-8B
  FP8 with an FP8 KV cache, fixed input/output lengths and the row's request count; TensorRT-LLM's
  admission (guaranteed_no_evict, its default), 95 % of HBM (the row's kv_cache_free_gpu_mem_fraction),
  max_num_tokens 8192 (trtllm-bench's default) and a batch limit of 2048.
- inf-mlperf41-llama2-70b-h100x8-offline-99.9: 8 x H100 as 4 replicas of TP2 (NVIDIA's H100 layout for
  this benchmark), FP8 weights and KV, 24,576 samples. The OpenOrca lengths are approximated as lognormal
  (sigma 0.8, capped at 1,024): output mean 290 tokens (the row's tokens/s over samples/s), input mean
  300 tokens (an estimate: the dataset's prompt statistics are not in the calibration set).
Prints a table and the mean absolute error; --markdown FILE writes the table for docs/validation.md,
--json FILE the raw rows.
Usage: benchmarks/calibration/validate_serving.py [--fmsim build/fmsim] [--measurements PATH]"""
import json
import os
import subprocess
import sys
import tempfile

from calibration_support import arguments

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
P5 = os.path.join(ROOT, "topologies", "p5-2node.json")


def trtllm_scenarios(case):
    for row in case["measured"]["rows"]:
        yield row["isl_osl"], row["total_output_tokens_per_s"], {
            "name": f"trtllm-llama3.1-8b-{row['isl_osl'].replace('/', '-')}",
            "cluster": {"base": P5, "nodes": 1},
            "model": "llama3.1-8b",
            "serving": {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 1,
                        "max_num_seqs": 2048, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.95,
                        "scheduler_policy": "guaranteed_no_evict"},
            "workload": {"arrival": "offline", "requests": row["num_requests"],
                         "input_tokens": row["input_len"], "output_tokens": row["output_len"]}}


def mlperf_scenarios(case):
    measured = case["measured"]
    output_mean = round(measured["tokens_per_s"] / measured["samples_per_s"])
    yield "offline, 8 x H100", measured["tokens_per_s"], {
        "name": "mlperf-llama2-70b-offline",
        "cluster": {"base": P5, "nodes": 1},
        "model": "llama2-70b",
        "serving": {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 4, "tensor_parallel_size": 2,
                    "max_num_seqs": 1024, "max_num_batched_tokens": 8192, "gpu_memory_utilization": 0.95,
                    "scheduler_policy": "guaranteed_no_evict"},
        "workload": {"arrival": "offline", "requests": 24576,
                     "input_tokens": {"distribution": "lognormal", "mean": 300, "sigma": 0.8, "max": 1024},
                     "output_tokens": {"distribution": "lognormal", "mean": output_mean, "sigma": 0.8, "max": 1024}}}


BUILDERS = {"inf-trtllm-llama-3.1-8b-h100-tp1-fp8": trtllm_scenarios,
            "inf-mlperf41-llama2-70b-h100x8-offline-99.9": mlperf_scenarios}


def predict(fmsim, scenario):
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        proc = subprocess.run([fmsim, "serve", path, "--json", "-"], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        raise SystemExit(f"fmsim serve failed for {scenario['name']}: {proc.stderr.strip()}")
    return json.loads(proc.stdout)


def main():
    args, measurements = arguments(__doc__)
    results = []
    for case in measurements:
        if case["category"] != "inference":
            continue
        builder = BUILDERS.get(case["id"])
        if builder is None:
            print(f"skipping {case['id']}: no scenario builder for it", file=sys.stderr)
            continue
        for label, measured, scenario in builder(case):
            doc = predict(args.fmsim, scenario)
            predicted = doc["output_tokens_per_s"]
            results.append({"case": case["id"], "row": label, "model": scenario["model"],
                            "layout": f"{scenario['serving']['replicas']} x TP{scenario['serving']['tensor_parallel_size']}",
                            "measured_output_tokens_per_s": measured, "fmsim_output_tokens_per_s": predicted,
                            "error": predicted / measured - 1, "preemptions": doc["preemptions"],
                            "kv_peak": doc["kv_cache_utilization"]["peak"]})
    header = "| case | row | model | layout | measured out tok/s | fmsim out tok/s | error |"
    lines = [header, "|---|---|---|---|---|---|---|"]
    for r in results:
        lines.append(f"| {r['case']} | {r['row']} | {r['model']} | {r['layout']} | {r['measured_output_tokens_per_s']:.0f} | "
                     f"{r['fmsim_output_tokens_per_s']:.0f} | {100 * r['error']:+.1f} % |")
    mean_abs = sum(abs(r["error"]) for r in results) / max(1, len(results))
    lines.append("")
    lines.append(f"Mean absolute error over {len(results)} rows: {100 * mean_abs:.1f} %.")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": results, "mean_abs_error": mean_abs}, f, indent=1)


if __name__ == "__main__":
    main()
