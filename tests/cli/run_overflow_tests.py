#!/usr/bin/env python3
"""Integer overflow found by reading the sources (docs/robustness.md): one micro-batch's tokens and the
byte counts of the hybrid models' norms were int products that wrapped at long sequences.
Usage: run_overflow_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, expect_bad_input, run, run_tests, test

TMP = tempfile.mkdtemp(prefix="fmsim-overflow-tests-")
LLAMA = os.path.join(CONFIGS, "training", "llama3-8b-p5.json")
NANO = os.path.join(CONFIGS, "training", "nemotron-3-nano-p5en.json")


@test
def micro_batch_tokens_beyond_int_are_refused():
    # 65536 x 65536 tokens wrapped to 0: exit 0 with a step of 0.16 s and an MFU of 267,000,000 %.
    out = os.path.join(TMP, "never.json")
    expect_bad_input(["run", LLAMA, "--set", "parallelism.micro_batch_size=65536", "--set", "parallelism.global_batch_size=1048576",
                      "--set", "training.seq_length=65536", "--allow-oom", "--json", out],
                     ["/parallelism/micro_batch_size = 65536", "4294967296 tokens per micro-batch"], out)


@test
def hybrid_norm_bytes_do_not_wrap_at_long_sequences():
    # 2 x 524,288 tokens x 2,688 (hidden) x 2 bytes: the int product 2 x tokens x hidden wrapped, leaving
    # the Mamba and MoE layers' norms with no bytes (negative) or a quarter of them.
    out = os.path.join(TMP, "nano.json")
    proc = run("trace", NANO, "--set", "training.seq_length=524288", "--set", "parallelism.global_batch_size=16", "--out", out)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        nodes = json.load(f)["nodes"]
    tokens, hidden = 524288, 2688
    expected = {"norm": 2 * tokens * hidden * 2, "residual": 3 * tokens * hidden * 2, "norm.bwd": 4 * tokens * hidden * 2}
    for name, size in expected.items():
        found = [n.get("tensor_size") for n in nodes if n["name"] == name]
        assert found, name
        wrong = sorted({s for s in found if s != size}, key=str)
        assert not wrong, f"{name}: {len(found)} nodes, expected {size} bytes each, also saw {wrong}"


if __name__ == "__main__":
    run_tests()
