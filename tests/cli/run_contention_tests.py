#!/usr/bin/env python3
"""`fmsim contention CLUSTER --job SCENARIO@NODES ...`: a job alone steps as `fmsim run --fidelity full` does on
the same nodes; jobs under separate leaf switches never slow each other; jobs scattered over the leaves of a 2:1
oversubscribed fabric slow each other through the leaf uplinks they share, and the same placement on a
non-blocking twin of the fabric does not (more bandwidth never slows a step); a short job repeats through a
long one; the result validates against its schema; bad placements exit 2 naming the job and node with no
output file. Usage: run_contention_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, validate_schema, write

TMP = tempfile.mkdtemp(prefix="fmsim-contention-tests-")
OS2 = os.path.join(TOPO, "p5-32node-os2.json")
DDP = os.path.join(CONFIGS, "training", "llama3-8b-ddp-p5-os2.json")
SCATTERED = [f"{DDP}@{k},{8 + k},{16 + k},{24 + k}" for k in range(8)]  # each job on one node of every leaf
PACKED = [f"{DDP}@{4 * k}-{4 * k + 3}" for k in range(8)]                # each job under one leaf switch


def jobs_args(jobs):
    return [a for j in jobs for a in ("--job", j)]


def validate(doc):
    validate_schema(doc, "contention.schema.json")


@test
def a_job_alone_steps_as_fmsim_run_does_at_full_fidelity():
    doc = run_json("contention", OS2, "--job", f"{DDP}@0-3")
    one = run_json("run", DDP, "--set", "cluster.nodes=4", "--fidelity", "full")
    alone = doc["jobs"][0]["alone_step_s"]
    assert abs(alone - one["step_time_s"]) <= 1e-9 * alone, (alone, one["step_time_s"])
    assert doc["jobs"][0]["shared_step_s"] == alone and doc["shared_links"] == []
    validate(doc)


@test
def jobs_under_their_own_leaf_switches_do_not_slow_each_other():
    doc = run_json("contention", OS2, *jobs_args(PACKED))
    for job in doc["jobs"]:
        assert abs(job["slowdown"]) < 1e-9, job
    assert doc["shared_links"] == [], doc["shared_links"][:2]
    validate(doc)


@test
def scattered_jobs_slow_each_other_on_oversubscribed_uplinks_and_not_on_a_non_blocking_twin():
    doc = run_json("contention", OS2, *jobs_args(SCATTERED))
    for job in doc["jobs"]:
        assert job["slowdown"] > 0.02, job
        assert job["steps_replayed"] == 1
    names = [l["name"] for l in doc["shared_links"]]
    assert names and all(n.startswith("leaf") for n in names), names[:4]
    assert doc["shared_links"][0]["jobs"] == list(range(1, 9)), doc["shared_links"][0]
    utilization = [l["utilization"] for l in doc["shared_links"]]
    assert utilization == sorted(utilization, reverse=True)
    validate(doc)
    spec = json.load(open(OS2))
    spec["fabric"]["oversubscription"] = 1.0
    twin = write(TMP, "p5-32node-nonblocking.json", json.dumps(spec))
    free = run_json("contention", twin, *jobs_args(SCATTERED))
    for job, scattered in zip(free["jobs"], doc["jobs"]):
        assert abs(job["slowdown"]) < 1e-9, job
        assert job["shared_step_s"] <= scattered["shared_step_s"], (job, scattered)
    text = run("contention", OS2, *jobs_args(SCATTERED[:2])).stdout
    assert "slowdown" in text and "leaf" in text, text


@test
def a_shorter_job_repeats_through_the_longest_step():
    long_job = os.path.join(CONFIGS, "training", "llama3-8b-p5.json")  # FSDP, seq 8192: a longer step
    doc = run_json("contention", OS2, "--job", f"{long_job}@0,8", "--job", f"{DDP}@1,9,17,25")
    short, long_ = doc["jobs"][1], doc["jobs"][0]
    assert long_["alone_step_s"] > short["alone_step_s"]
    expected = -(-long_["alone_step_s"] // short["alone_step_s"])
    assert short["steps_replayed"] == expected and long_["steps_replayed"] == 1, (short, long_)
    assert short["shared_step_s"] >= short["alone_step_s"] * (1 - 1e-9) and long_["shared_step_s"] >= long_["alone_step_s"] * (1 - 1e-9)
    capped = run_json("contention", OS2, "--job", f"{long_job}@0,8", "--job", f"{DDP}@1,9,17,25", "--max-steps", "1")
    assert capped["jobs"][1]["steps_replayed"] == 1


@test
def bad_placements_exit_2_naming_the_job_and_node():
    out = os.path.join(TMP, "bad.json")
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@0-3", "--job", f"{DDP}@3-6", "--json", out], ["--job", "node 3", "job 1"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@30-33", "--json", out], ["--job", "'30-33' is not one", "0 to 31"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@5-2", "--json", out], ["--job", "backwards"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}", "--json", out], ["--job", "SCENARIO@NODES"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@1,1", "--json", out], ["node 1", "twice"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@x", "--json", out], ["--job", "'x'"], out)
    for nodes in ("+3", " 3", "-3", "3-"):
        expect_bad_input(["contention", OS2, "--job", f"{DDP}@{nodes}", "--json", out], ["--job", f"'{nodes}' is not one"], out)
    expect_bad_input(["contention", OS2, "--job", f"{DDP}@0-3", "--max-steps", "0", "--json", out], ["--max-steps", "1 to 1000"], out)
    tp16 = os.path.join(CONFIGS, "training", "llama3.1-405b-p5.json")
    expect_bad_input(["contention", OS2, "--job", f"{tp16}@0", "--json", out], ["job 1", "not a multiple"], out)
    expect_bad_input(["contention", OS2, "--job", f"{os.path.join(TMP, 'missing.json')}@0", "--json", out], ["missing.json"], out)


run_tests()
