#!/usr/bin/env python3
"""fmsim search at scale: Llama-3.1-405B on p5 / p5en / p6-b200 up to 16,384 GPUs (configs/search/llama3.1-405b-aws.json):
candidates enumerated and ranked by the analytic tier and its time, then the best 20 re-simulated with contention and their
time, and the analytic tier's step time against the simulated one for those 20. Targets (issue 27): >= 10,000 candidates
ranked in <= 10 s, top 20 re-simulated in <= 60 s more, on the 2-core machine. Prints a table and writes
benchmarks/results/search_scale.json. Wall times depend on the machine's load: the CPU time (user + sys) is printed beside them."""
import os
import resource
import subprocess
import tempfile
import json
import time

from bench_support import ROOT, parser, write_results

SPEC = os.path.join(ROOT, "configs", "search", "llama3.1-405b-aws.json")


def search(fmsim, resimulate, jobs):
    best = os.path.join(tempfile.mkdtemp(prefix="fmsim-search-bench-"), "best.json")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([fmsim, "-q", "search", SPEC, "--json", "-", "--best", best, "--resimulate", str(resimulate), "--jobs", str(jobs)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, json.loads(proc.stdout)


def main():
    p = parser(__doc__, "search_scale")
    p.add_argument("--resimulate", type=int, default=20)
    p.add_argument("--jobs", type=int, default=2)
    args = p.parse_args()
    rank_wall, rank_cpu, ranked = search(args.fmsim, 0, args.jobs)
    full_wall, full_cpu, full = search(args.fmsim, args.resimulate, args.jobs)
    errors = [r["analytic_step_time_s"] / r["step_time_s"] - 1 for r in full["top"] if r["simulated"]]
    rows = [{
        "spec": os.path.relpath(SPEC, ROOT),
        "enumerated": ranked["enumerated"],
        "ranked": ranked["ranked"],
        "rank_wall_s": ranked["rank_wall_s"],
        "rank_process_wall_s": rank_wall,
        "rank_process_cpu_s": rank_cpu,
        "resimulated": full["resimulated"],
        "resimulate_wall_s": full["resimulate_wall_s"],
        "resimulate_cpu_s": full_cpu - rank_cpu,
        "jobs": args.jobs,
        "analytic_vs_simulated_min": min(errors) if errors else None,
        "analytic_vs_simulated_max": max(errors) if errors else None,
        "analytic_vs_simulated_mean_abs": sum(abs(e) for e in errors) / len(errors) if errors else None,
        "best": full["top"][0]["layout"] + " on " + str(full["top"][0]["nodes"]) + " x " + full["top"][0]["instance_type"],
        "best_step_time_s": full["top"][0]["step_time_s"],
        "load_average_1min": os.getloadavg()[0],
    }]
    r = rows[0]
    print(f"{'enumerated':>10} {'ranked':>7} {'rank s':>7} {'(cpu s)':>8} {'resim':>5} {'resim s':>8} {'(cpu s)':>8} {'analytic-sim':>16}  best")
    print(f"{r['enumerated']:>10} {r['ranked']:>7} {r['rank_wall_s']:>7.2f} {r['rank_process_cpu_s']:>8.2f} {r['resimulated']:>5} "
          f"{r['resimulate_wall_s']:>8.1f} {r['resimulate_cpu_s']:>8.1f} {100 * (r['analytic_vs_simulated_min'] or 0):>+6.1f}..{100 * (r['analytic_vs_simulated_max'] or 0):+.1f} %  "
          f"{r['best']}")
    print(f"(load average {r['load_average_1min']:.1f} on {os.cpu_count()} cores)")
    write_results(args.out, rows)
    print(json.dumps(rows[0]))


main()
