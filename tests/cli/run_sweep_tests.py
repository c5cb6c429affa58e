#!/usr/bin/env python3
"""End-to-end tests of `fmsim sweep` and `fmsim merge`: a 200-point grid split into 4 shards merges to the
unsharded result, a killed shard resumes to the same lines, invalid points are kept with their reason,
shard defaults from Slurm and Kubernetes, progress on stderr unless -q, bad input exits 2. Usage: run_sweep_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import tempfile
import time

from cli_support import CONFIGS, FMSIM, expect_bad_input, run, run_tests, test, write

SWEEP = os.path.join(CONFIGS, "sweeps", "llama3.3-70b-p5en-serving.json")
TMP = tempfile.mkdtemp(prefix="fmsim-sweep-tests-")
FULL = os.path.join(TMP, "full.jsonl")


def lines(path):
    with open(path) as f:
        return sorted((json.loads(l) for l in f if l.strip()), key=lambda d: d["index"])


def sweep(*args, env=None, verbose=False):
    proc = subprocess.run([FMSIM, *(["-v"] if verbose else []), "sweep", SWEEP, *args], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


@test
def unsharded_sweep_covers_every_point_and_keeps_invalid_ones():
    sweep("--out", FULL, "--jobs", "2")
    full = lines(FULL)
    assert [d["index"] for d in full] == list(range(200))
    invalid = [d for d in full if d["status"] == "invalid"]
    assert len(invalid) == 50 and all(d["point"]["serving.tensor_parallel_size"] == 3 for d in invalid)
    assert "does not divide the 64 attention heads" in invalid[0]["reason"]
    ok = [d for d in full if d["status"] == "ok"]
    assert all("requests_per_s" in d["result"] for d in ok)
    # The grid's first key varies slowest, the last fastest.
    assert full[0]["point"] == {"serving.tensor_parallel_size": 2, "serving.replicas": 1, "workload.rate": "5/s"}
    assert full[1]["point"]["workload.rate"] == "10/s" and full[25]["point"]["serving.replicas"] == 2


@test
def four_shards_merge_to_the_unsharded_result():
    shards = []
    for i in range(4):
        path = os.path.join(TMP, f"shard{i}.jsonl")
        sweep("--shard-index", str(i), "--shard-count", "4", "--out", path, "--jobs", "2")
        shards.append(path)
        assert all(d["index"] % 4 == i for d in lines(path))
    merged = os.path.join(TMP, "merged.jsonl")
    proc = run("merge", *shards, "--out", merged)
    assert proc.returncode == 0, proc.stderr
    assert lines(merged) == lines(FULL)


@test
def a_killed_shard_resumes_without_redoing_or_losing_points():
    path = os.path.join(TMP, "killed.jsonl")
    child = subprocess.Popen([FMSIM, "sweep", SWEEP, "--shard-index", "1", "--shard-count", "2", "--out", path, "--jobs", "1"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 60
    while time.time() < deadline and (not os.path.exists(path) or len(open(path).readlines()) < 5):
        time.sleep(0.05)
    child.kill()
    child.wait()
    before = len(lines(path))
    assert 5 <= before < 100, before
    with open(path, "a") as f:
        f.write('{"index": 999, "point": {"serving.tens')  # a line cut short by the kill
    proc = sweep("--shard-index", "1", "--shard-count", "2", "--out", path, "--jobs", "2", verbose=True)
    assert f"{before} already done" in proc.stderr, proc.stderr
    resumed = lines(path)
    assert resumed == [d for d in lines(FULL) if d["index"] % 2 == 1]


@test
def shard_defaults_come_from_slurm_and_kubernetes():
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="3", SLURM_ARRAY_TASK_MIN="1", SLURM_ARRAY_TASK_COUNT="4")
    path = os.path.join(TMP, "slurm.jsonl")
    sweep("--out", path, env=env)
    assert [d["index"] for d in lines(path)] == list(range(2, 200, 4))
    out = os.path.join(TMP, "never.jsonl")
    env = dict(os.environ, JOB_COMPLETION_INDEX="1")
    proc = subprocess.run([FMSIM, "sweep", SWEEP, "--out", out], capture_output=True, text=True, env=env)
    assert proc.returncode == 2 and "--shard-count" in proc.stderr, proc.stderr
    path = os.path.join(TMP, "k8s.jsonl")
    sweep("--out", path, "--shard-count", "8", env=env)
    assert [d["index"] for d in lines(path)] == list(range(1, 200, 8))


@test
def progress_goes_to_stderr_unless_quiet():
    # A 4-point shard: the progress lines (points done, rate, ETA) show without -v; -q silences them,
    # and neither changes what goes to the output.
    shard = ["--shard-index", "0", "--shard-count", "50", "--jobs", "1", "--out", "-"]
    shown = subprocess.run([FMSIM, "sweep", SWEEP, *shard], capture_output=True, text=True, timeout=600)
    assert shown.returncode == 0, shown.stderr
    assert "sweep: 4/4 points" in shown.stderr and "ETA" in shown.stderr, shown.stderr
    quiet = subprocess.run([FMSIM, "-q", "sweep", SWEEP, *shard], capture_output=True, text=True, timeout=600)
    assert quiet.returncode == 0 and quiet.stderr == "", quiet.stderr
    assert len(quiet.stdout.splitlines()) == len(shown.stdout.splitlines()) == 4


@test
def bad_sweeps_exit_2():
    out = os.path.join(TMP, "never.jsonl")
    scenario = os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"))
    empty = write(TMP, "empty.json", json.dumps({"command": "serve", "scenario": scenario}))
    expect_bad_input(["sweep", empty, "--out", out], ["empty.json", "no points"], out)
    not_list = write(TMP, "not-list.json", json.dumps({"command": "serve", "scenario": scenario, "grid": {"serving.replicas": 2}}))
    expect_bad_input(["sweep", not_list, "--out", out], ["/grid/serving.replicas", "list"], out)
    typo = write(TMP, "typo.json", json.dumps({"command": "serve", "scenario": scenario, "grids": {}}))
    expect_bad_input(["sweep", typo, "--out", out], ["grids"], out)
    expect_bad_input(["sweep", SWEEP, "--shard-index", "4", "--shard-count", "4", "--out", out], ["--shard-index 4"], out)
    broken = write(TMP, "broken.jsonl", '{"index": 0}\nnot json\n')
    expect_bad_input(["merge", broken, "--out", out], ["broken.jsonl:2"], out)


run_tests()
