#!/usr/bin/env python3
"""Writes a synthetic job trace for `fmsim cluster` (JSON Lines): Poisson arrivals over DAYS days, job
sizes from a mix typical of a shared training cluster (many 1-4 node jobs, some 8-32, a few 64-256 node
pre-training runs), lognormal durations, two queues. Deterministic for a seed.
Usage: make_job_trace.py --jobs N --days D --max-nodes M [--seed S] > jobs.jsonl"""
import argparse
import json
import math
import random


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=500)
    p.add_argument("--days", type=float, default=7)
    p.add_argument("--max-nodes", type=int, default=16)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    rng = random.Random(args.seed)
    sizes = [(1, 0.35), (2, 0.2), (4, 0.15), (8, 0.12), (16, 0.08), (32, 0.05), (64, 0.03), (128, 0.015), (256, 0.005)]
    sizes = [(n, w) for n, w in sizes if n <= args.max_nodes]
    total = sum(w for _, w in sizes)
    rate = args.jobs / (args.days * 86400)
    t = 0.0
    for i in range(args.jobs):
        t += rng.expovariate(rate)
        x, nodes = rng.random() * total, sizes[-1][0]
        for n, w in sizes:
            if x < w:
                nodes = n
                break
            x -= w
        # Larger jobs run longer: median 30 min for one node, growing with the square root of the size.
        hours = min(14 * 24.0, rng.lognormvariate(math.log(0.5 * math.sqrt(nodes)), 1.0))
        job = {"id": f"job-{i + 1}", "submit": round(t, 1), "nodes": nodes, "duration": f"{hours * 60:.1f}min",
               "queue": "pretrain" if nodes >= 32 else "research", "checkpoint_interval": "30min"}
        print(json.dumps(job))


if __name__ == "__main__":
    main()
