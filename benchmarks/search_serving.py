#!/usr/bin/env python3
"""fmsim serving search at scale: Llama-3.3-70B in FP8 on p4de, p5, p5en and p6-b200 (4 instance types), every
tensor-parallel size, up to 4 nodes each (configs/search/llama3.3-70b-serving.json): the fewest replicas of each layout
that meet the SLOs at 40 requests/s, by doubling and bisection over fmsim serve runs. Target (issue 27): <= 30 s on the
2-core machine. Prints a table and writes benchmarks/results/search_serving.json; the CPU time (user + sys) is printed
beside the wall time, which depends on the machine's load."""
import json
import os
import resource
import subprocess
import tempfile
import time

from bench_support import ROOT, parser, write_results

SPEC = os.path.join(ROOT, "configs", "search", "llama3.3-70b-serving.json")


def main():
    p = parser(__doc__, "search_serving")
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    best = os.path.join(tempfile.mkdtemp(prefix="fmsim-serve-search-bench-"), "best.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([args.fmsim, "-q", "search", SPEC, "--json", "-", "--best", best, "--jobs", str(args.jobs)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    doc = json.loads(proc.stdout)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    top = doc["candidates"][0]
    row = {"spec": os.path.relpath(SPEC, ROOT), "instance_types": len({c["instance_type"] for c in doc["candidates"]}),
           "layouts": doc["layouts"], "feasible": sum(1 for c in doc["candidates"] if c["feasible"]),
           "simulations": doc["simulations"], "wall_s": wall, "cpu_s": cpu, "jobs": args.jobs,
           "best": f"TP{top['tensor_parallel_size']} x {top['replicas']} replicas on {top['nodes']} x {top['instance_type']}",
           "best_usd_per_hour": top["usd_per_hour"], "load_average_1min": os.getloadavg()[0]}
    print(f"{'types':>5} {'layouts':>7} {'meet SLO':>8} {'serve runs':>10} {'wall s':>7} {'cpu s':>7}  best")
    print(f"{row['instance_types']:>5} {row['layouts']:>7} {row['feasible']:>8} {row['simulations']:>10} {wall:>7.1f} {cpu:>7.1f}  "
          f"{row['best']} ({row['best_usd_per_hour']:.2f} $/h)")
    write_results(args.out, [row])


if __name__ == "__main__":
    main()
