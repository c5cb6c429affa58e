#!/usr/bin/env python3
"""Wall time and peak memory of `fmsim run` for one training step at 64, 1,024, 16,384 and ~100k GPUs.

64 GPUs: configs/training/llama3-70b-p5.json. Larger: Llama-3.1-405B on p5.48xlarge, TP8 PP16, seq 8192,
16 micro-batches per pipeline (global batch 2,048 at 16,384 GPUs, the issue's target). Prints a table and
writes benchmarks/results/training_scale.json. Usage: benchmarks/training_scale.py [--fmsim build/fmsim]"""
import json
import os
import tempfile

from bench_support import ROOT, measure, parser, write_results



def scenario_405b(gpus):
    dp = gpus // 128
    return {"name": f"llama3.1-405b-{gpus}", "cluster": {"base": os.path.join(ROOT, "topologies", "p5-16node.json"),
                                                         "nodes": gpus // 8, "fabric": {"nodes_per_leaf": 32}},
            "model": "llama3.1-405b",
            "parallelism": {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 16, "sequence_parallel": True,
                            "micro_batch_size": 1, "global_batch_size": 16 * dp,
                            "account_for_embedding_in_pipeline_split": True, "account_for_loss_in_pipeline_split": True},
            "training": {"seq_length": 8192, "precision": "bf16", "tp_comm_overlap": True}}


def measure_run(fmsim, path):
    return measure([fmsim, "run", path, "--json", "-", "--allow-oom"])


def main():
    args = parser(__doc__, "training_scale").parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(64, os.path.join(ROOT, "configs", "training", "llama3-70b-p5.json"))]
        for gpus in [1024, 16384, 100352]:
            path = os.path.join(tmp, f"s{gpus}.json")
            with open(path, "w") as f:
                json.dump(scenario_405b(gpus), f)
            cases.append((gpus, path))
        print(f"{'GPUs':>8} {'model':>16} {'wall s':>8} {'RSS MiB':>8} {'step s':>8} {'tasks':>8} {'ranks':>6}")
        for gpus, path in cases:
            wall, rss, out = measure_run(args.fmsim, path)
            row = {"gpus": gpus, "model": out["model"]["name"], "wall_s": wall, "rss_bytes": rss,
                   "step_time_s": out["step_time_s"], "tasks": out["simulation"]["tasks"],
                   "simulated_ranks": out["simulation"]["simulated_ranks"], "trace_nodes": out["simulation"]["trace_nodes"]}
            rows.append(row)
            print(f"{gpus:>8} {row['model']:>16} {wall:>8.2f} {rss / 2**20:>8.0f} {row['step_time_s']:>8.2f} "
                  f"{row['tasks']:>8} {row['simulated_ranks']:>6}")
    write_results(args.out, rows)

if __name__ == "__main__":
    main()
