#!/usr/bin/env /usr/bin/python3
"""Chakra traces at scale: a data-parallel step written the way Chakra's tools write it
(tests/cli/chakra_fixture.py: per rank a metadata node, 32 forward and 32 backward compute nodes with measured
durations, a CPU op, a ring send/receive, a 64 MiB gradient all-reduce and a barrier), for 64 to 1,024
ranks on p5.48xlarge (8 H100 each), loaded and replayed by `fmsim run SCENARIO --trace PREFIX` (every rank
simulated). Target (issue 30): 1,024 ranks load and replay in <= 5 s. Also fmsim's own Chakra output of
Llama-3-8B on 16 GPUs (every kernel, about 7,300 nodes per rank). Prints a table and writes
benchmarks/results/chakra_replay.json. Runs on Debian's Python (python3-protobuf for the fixture)."""
import os
import subprocess
import sys
import tempfile

from bench_support import ROOT, measure, parser, write_results

sys.path.insert(0, os.path.join(ROOT, "tests", "cli"))
import chakra_fixture  # noqa: E402

SCENARIO = os.path.join(ROOT, "configs", "training", "llama3-8b-p5.json")


def main():
    args = parser(__doc__, "chakra_replay").parse_args()
    tmp = tempfile.mkdtemp(prefix="fmsim-chakra-bench-")
    pb = chakra_fixture.load_schema(ROOT, tmp)
    rows = []
    print(f"{'trace':>28} {'ranks':>6} {'nodes':>8} {'MB':>6} {'step s':>8} {'wall s':>7} {'peak MiB':>8}")
    cases = [("fixture", ranks) for ranks in (64, 256, 1024)] + [("fmsim llama3-8b", 16)]
    for kind, ranks in cases:
        prefix = os.path.join(tmp, f"{kind.split()[0]}-{ranks}")
        if kind == "fixture":
            chakra_fixture.write_trace(pb, prefix, ranks, layers=32, fwd_us=2500, bwd_us=5000, grad_bytes=64 << 20, p2p_bytes=1 << 20)
            sets = [f"cluster.nodes={ranks // 8}", f"parallelism.global_batch_size={ranks}"]
        else:
            subprocess.run([args.fmsim, "trace", SCENARIO, "--format", "chakra", "--out", prefix], check=True, capture_output=True)
            sets = []
        size = sum(os.path.getsize(os.path.join(tmp, f)) for f in os.listdir(tmp) if f.startswith(os.path.basename(prefix) + "."))
        command = [args.fmsim, "run", SCENARIO, "--trace", prefix, "--json", "-"]
        for s in sets:
            command += ["--set", s]
        wall, rss, doc = measure(command)
        row = {"trace": kind, "ranks": ranks, "nodes": doc["simulation"]["trace_nodes"], "bytes": size, "step_time_s": doc["step_time_s"],
               "wall_s": wall, "peak_rss_bytes": rss, "load_average_1min": os.getloadavg()[0]}
        rows.append(row)
        print(f"{kind:>28} {ranks:>6} {row['nodes']:>8} {size / 1e6:>6.1f} {row['step_time_s']:>8.3f} {wall:>7.2f} {rss / 2**20:>8.0f}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
