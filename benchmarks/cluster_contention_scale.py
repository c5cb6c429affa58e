#!/usr/bin/env python3
"""fmsim cluster with contention at scale: the 30-day trace of 10,000 jobs (scripts/make_job_trace.py, seed 2,
1-256 node jobs) on 2,048 p5.48xlarge whose leaf uplinks are 2:1 oversubscribed, every job a training scenario
(Llama-3-8B data-parallel up to 4 nodes, Llama-3-70B TP8 above; global batch scaled with the job so a step
takes about the same time at every size; steps from the trace's duration). Target (issue 28): <= 60 s on this
machine, contention included. Rows: topology-aware and spread placement with the fast contention model
(random phases), and spread with the aligned model (every job's cross-leaf transfers at once: the upper
bound). Prints a table and writes benchmarks/results/cluster_contention_scale.json."""
import json
import os
import subprocess
import sys
import tempfile

from bench_support import ROOT, measure, parser, write_results

# Approximate fast-fidelity steps of the two scenarios (fmsim run, 2026-11-27): they turn the trace's
# durations into step counts, so that the jobs run about as long as the trace says.
STEP_S = {"llama3-8b": 0.7, "llama3-70b": 9.0}


def scenario_files(tmp, cluster):
    files = {}
    for nodes in (1, 2, 4, 8, 16, 32, 64, 128, 256):
        model, tp, per_dp = ("llama3-8b", 1, 2) if nodes <= 4 else ("llama3-70b", 8, 16)
        path = os.path.join(tmp, f"{model}-{nodes}n.json")
        json.dump({"schema": "fmsim.scenario/1", "name": f"{model}-{nodes}n", "cluster": {"base": cluster},
                   "model": model,
                   "parallelism": {"tensor_model_parallel_size": tp, "pipeline_model_parallel_size": 1, "micro_batch_size": 1,
                                   "global_batch_size": per_dp * 8 * nodes // tp},
                   "training": {"seq_length": 4096, "precision": "bf16", "overlap_grad_reduce": True, "overlap_param_gather": True}},
                  open(path, "w"))
        files[nodes] = (path, STEP_S[model])
    return files


def main():
    args = parser(__doc__, "cluster_contention_scale").parse_args()
    tmp = tempfile.mkdtemp(prefix="fmsim-contention-bench-")
    cluster = os.path.join(tmp, "p5-2048node-os2.json")
    json.dump({"name": "p5-2048node-os2", "description": "2,048 x p5.48xlarge in leaf groups of 16, leaf uplinks 2:1",
               "instance_type": "p5.48xlarge", "nodes": 2048,
               "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 16, "oversubscription": 2.0}}, open(cluster, "w"))
    files = scenario_files(tmp, cluster)
    generated = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_job_trace.py"), "--jobs", "10000", "--days", "30",
                                "--max-nodes", "256", "--seed", "2"], capture_output=True, text=True, check=True).stdout
    trace = os.path.join(tmp, "jobs-10000-30.jsonl")
    with open(trace, "w") as f:
        for line in generated.splitlines():
            job = json.loads(line)
            minutes = float(job.pop("duration")[:-3])
            job["scenario"], step_s = files[job["nodes"]]
            job["steps"] = max(1, int(minutes * 60 / step_s))
            f.write(json.dumps(job) + "\n")
    rows = []
    print(f"{'placement':>9} {'model':>8} {'neighbourhoods':>14} {'replays':>8} {'contention GPU-h':>16} {'utilization':>11} {'wall s':>7} {'peak MiB':>8}")
    for placement, model in (("topology", "fast"), ("spread", "fast"), ("spread", "aligned")):
        wall, rss, doc = measure([args.fmsim, "cluster", cluster, trace, "--placement", placement, "--contention", "--contention-model", model,
                                  "--json", "-"])
        c = doc["contention"]
        row = {"jobs": 10000, "days": 30, "nodes": 2048, "oversubscription": 2.0, "placement": placement, "model": model,
               "neighbourhoods": c["neighbourhoods"], "step_replays": c["step_replays"], "contention_gpu_hours": c["gpu_hours"],
               "utilization": doc["utilization"], "wall_s": wall, "peak_rss_bytes": rss, "load_average_1min": os.getloadavg()[0]}
        rows.append(row)
        print(f"{placement:>9} {model:>8} {row['neighbourhoods']:>14} {row['step_replays']:>8} {row['contention_gpu_hours']:>16.0f} "
              f"{100 * row['utilization']:>10.1f}% {wall:>7.1f} {rss / 2**20:>8.0f}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
