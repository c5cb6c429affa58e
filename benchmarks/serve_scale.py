#!/usr/bin/env python3
"""Wall time and peak memory of `fmsim serve` with 100,000 requests across 16 replicas of 8 GPUs
(issue #6: <= 10 s on the 2-core development machine), unified and disaggregated.

Uses configs/serving/llama3.3-70b-p5en.json on 16 p5en nodes: 16 replicas of TP8 at 150 requests/s, and
the disaggregated variant with 8 prefill and 8 decode replicas of TP8 (KV caches move over EFA as engine
flows). Prints a table and writes benchmarks/results/serve_scale.json.
Usage: benchmarks/serve_scale.py [--fmsim build/fmsim]"""
import os

from bench_support import ROOT, fmsim_command, measure, parser, write_results

UNIFIED = os.path.join(ROOT, "configs", "serving", "llama3.3-70b-p5en.json")
DISAGG = os.path.join(ROOT, "configs", "serving", "llama3.3-70b-p5en-disaggregated.json")
COMMON = ["cluster.nodes=16", "serving.tensor_parallel_size=8", "workload.requests=100000", "workload.rate=150/s"]
CASES = [("unified, 16 x TP8", UNIFIED, COMMON + ["serving.replicas=16"]),
         ("disaggregated, 8 + 8 x TP8", DISAGG, COMMON + ["serving.disaggregation.prefill.replicas=8",
                                                          "serving.disaggregation.decode.replicas=8"])]


def main():
    args = parser(__doc__, "serve_scale").parse_args()
    rows = []
    print(f"{'case':<28} {'requests':>9} {'GPUs':>5} {'wall s':>7} {'RSS MiB':>8} {'out tok/s':>10} {'TTFT p99':>9} {'TPOT p99':>9}")
    for name, scenario, sets in CASES:
        wall, rss, out = measure(fmsim_command(args.fmsim, "serve", scenario, sets))
        rows.append({"case": name, "requests": out["requests"], "gpus": out["cluster"]["gpus"], "wall_s": wall, "rss_bytes": rss,
                     "output_tokens_per_s": out["output_tokens_per_s"], "ttft_p99_s": out["ttft_s"]["p99"],
                     "tpot_p99_s": out["tpot_s"]["p99"]})
        print(f"{name:<28} {out['requests']:>9} {out['cluster']['gpus']:>5} {wall:>7.2f} {rss / 2**20:>8.0f} "
              f"{out['output_tokens_per_s']:>10.0f} {out['ttft_s']['p99'] * 1e3:>7.0f}ms {out['tpot_s']['p99'] * 1e3:>7.1f}ms")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
