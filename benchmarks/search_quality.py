#!/usr/bin/env python3
"""fmsim search's quality: on problems small enough to simulate every candidate, the search's pick (the analytic tier's best
--resimulate candidates, re-simulated) against the exhaustive best by simulation (every survivor re-simulated). Target
(issue 27): within 2 %. Prints a table and writes benchmarks/results/search_quality.json. Problems: the shipped
configs/search/llama3-70b-p5-128.json (70B on 128 H100), and the same on 256 H100 / p5en (smaller spaces, --problems to pick)."""
import json
import os
import subprocess
import tempfile

from bench_support import ROOT, parser, write_results

BASE = os.path.join(ROOT, "configs", "search", "llama3-70b-p5-128.json")


def problems():
    with open(BASE) as f:
        base = json.load(f)
    yield "70b-p5-128", BASE
    tmp = tempfile.mkdtemp(prefix="fmsim-search-quality-")
    for name, topology, nodes in (("70b-p5-256", "p5-16node.json", 32), ("70b-p5en-128", "p5en-128node.json", 16)):
        doc = dict(base, name=name)
        doc["scenario"] = os.path.join(ROOT, "configs", "training", "llama3-70b-p5.json")
        doc["clusters"] = [{"topology": os.path.join(ROOT, "topologies", topology), "nodes": [nodes]}]
        doc["space"] = dict(base["space"], recompute_granularity=["none", "selective"], micro_batch_size=[1])
        path = os.path.join(tmp, name + ".json")
        with open(path, "w") as f:
            json.dump(doc, f)
        yield name, path


def search(fmsim, spec, resimulate):
    best = os.path.join(tempfile.mkdtemp(prefix="fmsim-search-quality-"), "best.json")
    proc = subprocess.run([fmsim, "-q", "search", spec, "--json", "-", "--best", best, "--resimulate", str(resimulate), "--top", "100000",
                           "--jobs", "2"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    return json.loads(proc.stdout)


def main():
    p = parser(__doc__, "search_quality")
    p.add_argument("--resimulate", type=int, default=10, help="candidates the search re-simulates (its pick is the best of them)")
    p.add_argument("--problems", type=int, default=3)
    args = p.parse_args()
    rows = []
    print(f"{'problem':<14} {'ranked':>6} {'pick step s':>11} {'best step s':>11} {'gap':>7} {'best analytic rank':>18}  pick / exhaustive best")
    for name, spec in list(problems())[:args.problems]:
        exhaustive = search(args.fmsim, spec, 10000)
        picked = search(args.fmsim, spec, args.resimulate)
        best = min(exhaustive["top"], key=lambda r: r["step_time_s"])
        by_analytic = sorted(exhaustive["top"], key=lambda r: r["analytic_step_time_s"])
        best_analytic_rank = 1 + [r["layout"] for r in by_analytic].index(best["layout"])
        errors = [r["analytic_step_time_s"] / r["step_time_s"] - 1 for r in exhaustive["top"]]
        pick = picked["top"][0]
        row = {"problem": name, "ranked": exhaustive["ranked"], "resimulated_by_search": args.resimulate,
               "pick": pick["layout"], "pick_step_time_s": pick["step_time_s"], "best": best["layout"], "best_step_time_s": best["step_time_s"],
               "gap": pick["step_time_s"] / best["step_time_s"] - 1, "best_rank_by_analytic_tier": best_analytic_rank,
               "analytic_vs_simulated_min": min(errors), "analytic_vs_simulated_max": max(errors),
               "analytic_vs_simulated_mean_abs": sum(abs(e) for e in errors) / len(errors)}
        rows.append(row)
        print(f"{name:<14} {row['ranked']:>6} {row['pick_step_time_s']:>11.3f} {row['best_step_time_s']:>11.3f} {100 * row['gap']:>6.2f}% "
              f"{best_analytic_rank:>18}  {row['pick']} / {row['best']}  (analytic-sim {100 * row['analytic_vs_simulated_min']:+.1f}..{100 * row['analytic_vs_simulated_max']:+.1f} %)",
              flush=True)
    write_results(args.out, rows)
    print(json.dumps(rows))


main()
