#!/usr/bin/env python3
"""fmsim RL post-training at scale: one GRPO iteration of Llama-3.3-70B (configs/training/grpo-llama3.3-70b-p5en.json)
on 16 to 128 p5en.48xlarge (128 to 1,024 H200), with the prompts per iteration scaled with the GPUs (512 per 16
nodes, 16 responses each: up to 65,536 samples), colocated and disaggregated (a quarter of the nodes generating,
staleness 1). Target (issue 29): one iteration of a 70B model on 1,024 GPUs in <= 10 s. Prints a table and writes
benchmarks/results/rl_iteration.json (wall time and peak memory of each `fmsim run`)."""
import os

from bench_support import ROOT, fmsim_command, measure, parser, write_results

SCENARIO = os.path.join(ROOT, "configs", "training", "grpo-llama3.3-70b-p5en.json")


def main():
    args = parser(__doc__, "rl_iteration").parse_args()
    rows = []
    print(f"{'GPUs':>5} {'placement':>13} {'samples':>8} {'iteration s':>11} {'samples/s':>9} {'wall s':>7} {'peak MiB':>8}")
    for nodes in (16, 64, 128):
        for placement in ("colocated", "disaggregated"):
            sets = [f"cluster.nodes={nodes}", f"rl.prompts_per_iteration={512 * nodes // 16}"]
            if placement == "disaggregated":
                sets += ["rl.placement=disaggregated", f"rl.rollout.nodes={nodes // 4}", "rl.staleness=1", "rl.offload=false"]
            wall, rss, doc = measure(fmsim_command(args.fmsim, "run", SCENARIO, sets))
            row = {"gpus": nodes * 8, "placement": placement, "samples": doc["samples"], "iteration_s": doc["iteration_s"],
                   "samples_per_s": doc["samples_per_s"], "wall_s": wall, "peak_rss_bytes": rss, "load_average_1min": os.getloadavg()[0]}
            rows.append(row)
            print(f"{row['gpus']:>5} {placement:>13} {row['samples']:>8} {row['iteration_s']:>11.1f} {row['samples_per_s']:>9.1f} "
                  f"{wall:>7.2f} {rss / 2**20:>8.0f}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
