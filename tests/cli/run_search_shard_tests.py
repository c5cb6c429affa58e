#!/usr/bin/env python3
"""`fmsim search` sharded like sweeps: each shard (--shard-index/--shard-count, or a Slurm array task or an
Indexed Job's index) re-simulates its share of the best candidates and writes its result with a "shard"
section; `--merge` joins the shards into the table, JSON and best scenario the unsharded search gives.
Bad shard sets exit 2 naming the file and key. Usage: run_search_shard_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import tempfile

from cli_support import CONFIGS, FMSIM, expect_bad_input, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-search-shard-tests-")
SPEC = os.path.abspath(os.path.join(CONFIGS, "search", "llama3-70b-p5-128.json"))


def search(*args, env=None):
    proc = subprocess.run([FMSIM, "-q", "search", SPEC, "--resimulate", "5", "--jobs", "2", *args], capture_output=True,
                          text=True, env=env, cwd=TMP, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return proc


def load(name):
    with open(os.path.join(TMP, name)) as f:
        return json.load(f) if name.endswith(".json") else f.read()


def rows(doc):
    return [(t["instance_type"], t["nodes"], t["layout"], t["simulated"], t["step_time_s"]) for t in doc["top"]]


@test
def two_shards_merge_to_the_unsharded_search():
    search("--json", "full.json", "--best", "full-best.json")
    for i in range(2):
        search("--json", f"s{i}.json", "--shard-index", str(i), "--shard-count", "2")
    shards = [load("s0.json"), load("s1.json")]
    # Candidates 0, 2, 4 of the best five on shard 0; 1, 3 on shard 1; no best file from a shard.
    assert [len(s["shard"]["resimulated"]) for s in shards] == [3, 2], [s["shard"] for s in shards]
    assert all(s["best_scenario_file"] is None for s in shards)
    search("--merge", os.path.join(TMP, "s0.json"), os.path.join(TMP, "s1.json"), "--json", "merged.json", "--best", "merged-best.json")
    full, merged = load("full.json"), load("merged.json")
    assert rows(full) == rows(merged), (rows(full)[:3], rows(merged)[:3])
    assert merged["resimulated"] == full["resimulated"] == 5
    assert load("full-best.json") == load("merged-best.json")


@test
def slurm_array_tasks_name_the_shard():
    env = dict(os.environ, SLURM_ARRAY_TASK_ID="1", SLURM_ARRAY_TASK_MIN="0", SLURM_ARRAY_TASK_COUNT="3")
    search("--json", "slurm1.json", env=env)
    assert load("slurm1.json")["shard"]["index"] == 1 and load("slurm1.json")["shard"]["count"] == 3


@test
def bad_shard_sets_exit_2():
    out = os.path.join(TMP, "bad-merge.json")
    expect_bad_input(["search", SPEC, "--merge", os.path.join(TMP, "full.json"), "--json", out], ["full.json", "shard"], out)
    expect_bad_input(["search", SPEC, "--merge", os.path.join(TMP, "s0.json"), os.path.join(TMP, "s0.json"), "--json", out],
                     ["s0.json", "given twice"], out)
    other = dict(load("s1.json"), name="another-search")
    path = write(TMP, "other.json", json.dumps(other))
    expect_bad_input(["search", SPEC, "--merge", os.path.join(TMP, "s0.json"), path, "--json", out], ["other.json", "name", "another-search"], out)
    expect_bad_input(["search", SPEC, "--shard-index", "2", "--shard-count", "2", "--json", out], ["--shard-index 2"], out)
    expect_bad_input(["search", SPEC, "--merge", os.path.join(TMP, "s0.json"), "--shard-index", "0", "--json", out], ["--merge"], out)


if __name__ == "__main__":
    run_tests()
