#!/usr/bin/env python3
"""What `fmsim collective --fidelity full` costs against what it says it will cost before it starts:
peak memory of the process tree (sampled from /proc every 0.2 s) and wall time, for ring all_reduce and
pairwise alltoall at growing GPU counts (p5.48xlarge, rail-optimized, 16 nodes per leaf group). A run
longer than --limit-s is stopped there: memory is reached in the first steps (every actor and every comm
of the send window exist from the start), so its peak is still the run's. Prints a table, writes JSON.

Usage: benchmarks/full_fidelity_cost.py [--fmsim build/fmsim] [--limit-s 90]
Target (issue #22): within 24 GiB up to 1,024 GPUs, and refused with the estimate where it would not fit."""
import json
import os
import platform
import re
import subprocess
import tempfile
import time

from bench_support import parser

CASES = [(128, "all_reduce"), (256, "all_reduce"), (1024, "all_reduce"),
         (128, "alltoall"), (256, "alltoall"), (512, "alltoall"), (1024, "alltoall"), (4096, "alltoall")]


def tree_rss_bytes(pid):
    """Resident memory of a process and its children (the simulation runs in a forked child)."""
    total = 0
    pids = [pid]
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            pids += [int(p) for p in f.read().split()]
    except OSError:
        pass
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


def main():
    command_line = parser(__doc__, "full_fidelity_cost")
    command_line.add_argument("--limit-s", type=float, default=90.0)
    args = command_line.parse_args()
    results = []
    print(f"{'gpus':>5} {'op':>10} {'est. time':>10} {'est. memory':>12} {'wall_s':>8} {'peak_MiB':>9}  outcome")
    with tempfile.TemporaryDirectory() as d:
        for gpus, op in CASES:
            cluster = os.path.join(d, f"p5-{gpus}.json")
            with open(cluster, "w") as f:
                json.dump({"instance_type": "p5.48xlarge", "nodes": gpus // 8,
                           "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 16}}, f)
            command = [args.fmsim, "-v", "collective", cluster, "--op", op, "-b", "1G", "-e", "1G", "--fidelity", "full"]
            if op == "all_reduce":
                command += ["--algo", "ring", "--proto", "Simple"]
            start = time.perf_counter()
            proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            peak = 0
            stopped = False
            while proc.poll() is None:
                peak = max(peak, tree_rss_bytes(proc.pid))
                if time.perf_counter() - start > args.limit_s:
                    proc.kill()
                    stopped = True
                    break
                time.sleep(0.2)
            stderr = proc.communicate()[1]
            wall = time.perf_counter() - start
            estimate = re.search(r"messages, about (.+?) and (.+?) \(estimate\)", stderr)
            refused = re.search(r"error: (--fidelity full .*)", stderr)
            outcome = ("refused: " + refused.group(1)[:60] + "...") if refused else (
                f"stopped at {args.limit_s:.0f} s" if stopped else f"exit {proc.returncode}")
            entry = {"gpus": gpus, "op": op, "estimated_time": estimate.group(1) if estimate else None,
                     "estimated_memory": estimate.group(2) if estimate else None, "wall_s": wall,
                     "peak_rss_bytes": peak, "stopped_at_limit": stopped, "refused": bool(refused),
                     "exit_code": None if stopped else proc.returncode}
            results.append(entry)
            print(f"{gpus:>5} {op:>10} {entry['estimated_time'] or '-':>10} {entry['estimated_memory'] or '-':>12} "
                  f"{wall:>8.1f} {peak / 2**20:>9.1f}  {outcome}", flush=True)
    os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
    doc = {"schema": "fmsim.benchmark.full_fidelity_cost/1", "date": time.strftime("%Y-%m-%d"),
           "machine": f"{platform.node()} {platform.machine()} {os.cpu_count()} cores", "limit_s": args.limit_s,
           "results": results}
    with open(args.out, "w") as f:
        json.dump(doc, f, indent=2)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
