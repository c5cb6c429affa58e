#!/usr/bin/env python3
"""`fmsim sweep` and `fmsim merge` end by naming the best point: the ok line with the best value of the
sweep's metric (the command's default, or the sweep file's "best"), checked against the lines themselves;
a bad "best" or --best exits 2 before anything is written.
Usage: run_sweep_best_tests.py FMSIM SOURCE_DIR"""
import json
import os
import re
import subprocess
import tempfile

from cli_support import CONFIGS, FMSIM, expect_bad_input, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-sweep-best-tests-")
LLAMA = os.path.abspath(os.path.join(CONFIGS, "training", "llama3-8b-p5.json"))


def sweep_file(name, best=None):
    doc = {"name": name, "command": "run", "scenario": LLAMA,
           "set": ["model.num_hidden_layers=4", "parallelism.global_batch_size=16", "cluster.nodes=1"],
           "grid": {"parallelism.micro_batch_size": [1, 2], "parallelism.tensor_model_parallel_size": [1, 2, 3]}}
    if best is not None:
        doc["best"] = best
    return write(TMP, name + ".json", json.dumps(doc))


def run_sweep(path, out, *extra):
    proc = subprocess.run([FMSIM, "sweep", path, "--out", out, "--jobs", "2", *extra], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        lines = [json.loads(l) for l in f if l.strip()]
    named = [l for l in proc.stderr.splitlines() if "best of" in l]
    assert len(named) == 1, proc.stderr
    return lines, named[0]


@test
def a_metric_no_result_has_is_said_so():
    path = sweep_file("missing", {"metric": "memory.no_such_bytes"})
    proc = subprocess.run([FMSIM, "sweep", path, "--out", os.path.join(TMP, "missing.jsonl"), "--jobs", "2"],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    assert "no best point by memory.no_such_bytes (max)" in proc.stderr, proc.stderr


def index_named(text):
    return int(re.search(r": #(\d+) ", text).group(1))


@test
def the_default_metric_picks_the_most_tokens_per_gpu():
    lines, named = run_sweep(sweep_file("default"), os.path.join(TMP, "default.jsonl"))
    ok = [l for l in lines if l["status"] == "ok"]
    assert len(ok) == 4 and len(lines) == 6  # TP 3 does not divide the heads: invalid points are not ranked
    best = max(ok, key=lambda l: l["result"]["tokens_per_s_per_gpu"])
    assert index_named(named) == best["index"], named
    assert "tokens_per_s_per_gpu (max)" in named and "best of 4 points" in named, named


@test
def the_sweep_file_names_its_own_metric_and_goal():
    lines, named = run_sweep(sweep_file("step", {"metric": "step_time_s", "goal": "min"}), os.path.join(TMP, "step.jsonl"))
    ok = [l for l in lines if l["status"] == "ok"]
    assert index_named(named) == min(ok, key=lambda l: l["result"]["step_time_s"])["index"], named
    # A dotted path into a nested result.
    lines, named = run_sweep(sweep_file("mem", {"metric": "memory.activations_bytes", "goal": "min"}), os.path.join(TMP, "mem.jsonl"))
    ok = [l for l in lines if l["status"] == "ok"]
    assert index_named(named) == min(ok, key=lambda l: (l["result"]["memory"]["activations_bytes"], l["index"]))["index"], named


@test
def merge_names_the_best_of_all_shards():
    path = sweep_file("sharded")
    shards = []
    for i in range(2):
        out = os.path.join(TMP, f"shard{i}.jsonl")
        run_sweep(path, out, "--shard-index", str(i), "--shard-count", "2")
        shards.append(out)
    proc = run("merge", *shards, "--out", os.path.join(TMP, "merged.jsonl"))
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(TMP, "merged.jsonl")) as f:
        merged = [json.loads(l) for l in f if l.strip()]
    ok = [l for l in merged if l["status"] == "ok"]
    named = [l for l in proc.stderr.splitlines() if "best of" in l]
    assert named and index_named(named[0]) == max(ok, key=lambda l: l["result"]["tokens_per_s_per_gpu"])["index"], proc.stderr
    proc = run("merge", *shards, "--out", os.path.join(TMP, "merged2.jsonl"), "--best", "step_time_s:min")
    named = [l for l in proc.stderr.splitlines() if "best of" in l]
    assert named and index_named(named[0]) == min(ok, key=lambda l: l["result"]["step_time_s"])["index"], proc.stderr


@test
def bad_best_settings_exit_2_before_writing():
    out = os.path.join(TMP, "bad.jsonl")
    expect_bad_input(["sweep", sweep_file("bad_goal", {"metric": "step_time_s", "goal": "lowest"}), "--out", out],
                     ["best", "goal", "lowest"], out)
    expect_bad_input(["sweep", sweep_file("bad_key", {"metric": "step_time_s", "order": "min"}), "--out", out],
                     ["best", "order"], out)
    merged = os.path.join(TMP, "bad-merge.jsonl")
    expect_bad_input(["merge", os.path.join(TMP, "default.jsonl"), "--out", merged, "--best", "step_time_s:lowest"],
                     ["--best", "step_time_s:lowest"], merged)


if __name__ == "__main__":
    run_tests()
