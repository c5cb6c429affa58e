#!/usr/bin/env python3
"""Wall time and peak RSS of `fmsim collective` for one 1 GiB collective at growing GPU counts
(p5.48xlarge clusters, rail-optimized, 16 nodes per leaf group). Prints a table and writes JSON.

Usage: benchmarks/collective_scale.py [--fmsim build/fmsim] [--out benchmarks/results/collective_scale.json]
Targets (issue #3): all_reduce of 1 GiB over 1,024 GPUs <= 1 s, over 16,384 GPUs <= 5 s, RSS <= 1 GiB.
Target (issue #22): alltoall over 65,536 GPUs <= 5 s (full fidelity's memory up to 1,024 GPUs:
benchmarks/full_fidelity_cost.py)."""
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

from bench_support import parser

GPU_COUNTS = [16, 128, 1024, 16384, 32768, 65536]
OPS = ["all_reduce", "all_gather", "alltoall"]


def run_once(fmsim, cluster, op, fidelity):
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    start = time.perf_counter()
    proc = subprocess.run([fmsim, "collective", cluster, "--op", op, "-b", "1G", "-e", "1G", "--fidelity", fidelity,
                           "--json", "-"], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        sys.exit(f"fmsim failed: {proc.stderr}")
    peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    row = json.loads(proc.stdout)["rows"][0]
    return wall, peak_kb, before, row


def main():
    command_line = parser(__doc__, "collective_scale")
    command_line.add_argument("--full-up-to", type=int, default=256, help="also time --fidelity full up to this many GPUs")
    args = command_line.parse_args()
    results = []
    print(f"{'gpus':>6} {'op':>11} {'fidelity':>8} {'wall_s':>8} {'peak_rss_MiB':>13} {'busbw_GBps':>11}  algorithm")
    with tempfile.TemporaryDirectory() as d:
        for gpus in GPU_COUNTS:
            nodes = gpus // 8
            cluster = os.path.join(d, f"p5-{nodes}.json")
            with open(cluster, "w") as f:
                json.dump({"instance_type": "p5.48xlarge", "nodes": nodes,
                           "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 16}}, f)
            for op in OPS:
                fidelities = ["fast"] + (["full"] if gpus <= args.full_up_to else [])
                for fidelity in fidelities:
                    # Each run is its own process: ru_maxrss of children is the largest so far, so run
                    # the measurement in a fresh interpreter to read this run's peak alone.
                    code = ("import resource,subprocess,time,sys;s=time.perf_counter();"
                            "p=subprocess.run(sys.argv[1:],capture_output=True,text=True);"
                            "print(time.perf_counter()-s, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, p.returncode);"
                            "print(p.stdout)")
                    cmd = [sys.executable, "-c", code, args.fmsim, "collective", cluster, "--op", op, "-b", "1G", "-e", "1G",
                           "--fidelity", fidelity, "--json", "-"]
                    if fidelity == "full" and op != "alltoall":
                        cmd += ["--algo", "ring", "--proto", "Simple"]
                    out = subprocess.run(cmd, capture_output=True, text=True).stdout
                    first, rest = out.split("\n", 1)
                    wall, peak_kb, rc = first.split()
                    if rc != "0":
                        sys.exit(f"fmsim failed for {gpus} GPUs {op} {fidelity}")
                    row = json.loads(rest)["rows"][0]
                    entry = {"gpus": gpus, "op": op, "fidelity": fidelity, "size_bytes": row["size_bytes"],
                             "wall_s": float(wall), "peak_rss_bytes": int(peak_kb) * 1024,
                             "busbw_GBps": row["busbw_GBps"], "algorithm": row["algorithm"] + "/" + row["protocol"]}
                    results.append(entry)
                    print(f"{gpus:>6} {op:>11} {fidelity:>8} {entry['wall_s']:>8.3f} {int(peak_kb) / 1024:>13.1f} "
                          f"{entry['busbw_GBps']:>11.2f}  {entry['algorithm']}")
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    doc = {"schema": "fmsim.benchmark.collective_scale/1", "date": time.strftime("%Y-%m-%d"),
           "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores", "results": results}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
