#!/usr/bin/env python3
"""fmsim cluster at scale: synthetic job traces (scripts/make_job_trace.py: Poisson arrivals, 1-256 node jobs,
lognormal durations) on 2,048 p5.48xlarge (16,384 H100) with node failures at Llama 3's rate, every policy.
Target (issue 28): a 30-day trace of 10,000 jobs on a 2,048-node cluster in <= 60 s. Also Kueue admission
(two ClusterQueues of 8,192 GPUs in one cohort, reclaim by preemption) on the 14-day trace. Prints a table
and writes benchmarks/results/cluster_scale.json (wall time and peak memory of each `fmsim cluster`)."""
import json
import os
import subprocess
import sys
import tempfile

from bench_support import ROOT, measure, parser, write_results


def kueue_file(tmp):
    """Two ClusterQueues of 8,192 GPUs each in one cohort (the generator's queues: research, pretrain)."""
    path = os.path.join(tmp, "kueue.yaml")
    docs = []
    for name in ("research", "pretrain"):
        docs.append(f"kind: ClusterQueue\nmetadata:\n  name: {name}\nspec:\n  cohort: all\n  resourceGroups:\n"
                    f"  - flavors:\n    - name: h100\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: 8192\n"
                    f"  preemption:\n    reclaimWithinCohort: Any\n")
    with open(path, "w") as f:
        f.write("---\n".join(docs))
    return path


def main():
    args = parser(__doc__, "cluster_scale").parse_args()
    tmp = tempfile.mkdtemp(prefix="fmsim-cluster-bench-")
    cluster = os.path.join(tmp, "p5-2048node.json")
    json.dump({"name": "p5-2048node", "description": "2,048 x p5.48xlarge in leaf groups of 16", "instance_type": "p5.48xlarge",
               "nodes": 2048, "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 16, "oversubscription": 1.0}}, open(cluster, "w"))
    rows = []
    print(f"{'jobs':>6} {'days':>5} {'policy':>9} {'utilization':>11} {'mean wait':>10} {'events':>8} {'wall s':>7} {'peak MiB':>8}")
    for jobs, days in ((10000, 30), (10000, 14), (50000, 30)):
        trace = os.path.join(tmp, f"jobs-{jobs}-{days}.jsonl")
        with open(trace, "w") as f:
            subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_job_trace.py"), "--jobs", str(jobs), "--days", str(days),
                            "--max-nodes", "256", "--seed", "2"], stdout=f, check=True)
        for policy in ("fifo", "backfill") + (("kueue",) if (jobs, days) == (10000, 14) else ()):
            extra = ["--kueue", kueue_file(tmp)] if policy == "kueue" else ["--policy", policy]
            wall, rss, doc = measure([args.fmsim, "cluster", cluster, trace, *extra, "--node-failures-per-node-hour", "0.0003",
                                      "--json", "-"])
            row = {"jobs": jobs, "days": days, "nodes": 2048, "policy": policy, "utilization": doc["utilization"],
                   "mean_wait_s": doc["wait_s"]["mean"], "events": doc["simulation"]["events"], "wall_s": wall, "peak_rss_bytes": rss,
                   "load_average_1min": os.getloadavg()[0]}
            rows.append(row)
            print(f"{jobs:>6} {days:>5} {policy:>9} {100 * row['utilization']:>10.1f}% {row['mean_wait_s'] / 3600:>9.1f}h "
                  f"{row['events']:>8} {wall:>7.2f} {rss / 2**20:>8.0f}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
