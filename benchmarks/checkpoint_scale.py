#!/usr/bin/env python3
"""Wall time and peak memory of `fmsim checkpoint` (all five strategies: one training step, then a save and
a restore each on the engine, then the failure Monte Carlo) for Llama-3.1-405B at 2,048 and 16,384 GPUs.

Uses configs/training/llama3.1-405b-p5-2048.json; the 16,384-GPU case sets 2,048 nodes and a 480 TiB
PERSISTENT_2-1000 file system. Prints a table and writes benchmarks/results/checkpoint_scale.json.
Usage: benchmarks/checkpoint_scale.py [--fmsim build/fmsim]"""
import os

from bench_support import ROOT, fmsim_command, measure, parser, write_results

SCENARIO = os.path.join(ROOT, "configs", "training", "llama3.1-405b-p5-2048.json")
CASES = [(2048, []),
         (16384, ["cluster.nodes=2048", "cluster.storage.fsx_lustre.capacity=480TiB",
                  "cluster.storage.fsx_lustre.deployment_type=PERSISTENT_2-1000"])]


def main():
    args = parser(__doc__, "checkpoint_scale").parse_args()
    rows = []
    print(f"{'GPUs':>6} {'wall s':>7} {'RSS MiB':>8} {'TB':>6}  " + "  ".join(f"{s:>14}" for s in
                                                                         ["fsx save", "s3 save", "nvme+fsx save", "nvme+s3 save", "peer save"]))
    for gpus, sets in CASES:
        wall, rss, out = measure(fmsim_command(args.fmsim, "checkpoint", SCENARIO, sets))
        saves = {row["strategy"]: row.get("save_time_s") for row in out["strategies"]}
        rows.append({"gpus": gpus, "wall_s": wall, "rss_bytes": rss, "checkpoint_bytes": out["checkpoint_bytes"],
                     "save_time_s": saves})
        print(f"{gpus:>6} {wall:>7.2f} {rss / 2**20:>8.0f} {out['checkpoint_bytes'] / 1e12:>6.2f}  " +
              "  ".join(f"{saves[s]:>12.2f} s" for s in ["fsx", "s3", "nvme+fsx", "nvme+s3", "peer"]))
    write_results(args.out, rows)

if __name__ == "__main__":
    main()
