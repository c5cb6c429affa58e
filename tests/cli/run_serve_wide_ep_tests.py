#!/usr/bin/env python3
"""End-to-end tests of serving across nodes and of one-batch iterations (issue 26): `fmsim serve
--iteration` (text, JSON against its schema, parts adding up, the rate it reports, bad batches), the
shipped wide expert-parallel DeepSeek-V3 scenario (replicas spanning nodes, steady at its rate), and the
per-part iteration time every serving result now carries. Usage: run_serve_wide_ep_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, validate_schema, write

WIDE_EP = os.path.join(CONFIGS, "serving", "deepseek-v3-p5en-wide-ep.json")
SCENARIO = os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-wide-ep-tests-")
PARTS = ["gemm", "attention", "memory_ops", "communication", "sampling", "draft", "kv_load", "host"]


@test
def iteration_probes_report_time_parts_and_rate():
    doc = run_json("serve", WIDE_EP, "--iteration", "decode:8192@2000", "--iteration", "prefill:65536@4096")
    validate_schema(doc, "serve-iteration.schema.json")
    assert doc["schema"] == "fmsim.serve-iteration/1"
    rows = {r["kind"]: r for r in doc["iterations"]}
    # A decode batch runs on the decode pool only, a prefill batch on the prefill pool only.
    assert set(rows) == {"decode", "prefill"} and len(doc["iterations"]) == 2, doc["iterations"]
    assert rows["decode"]["pool"] == "decode" and rows["prefill"]["pool"] == "prefill"
    for r in doc["iterations"]:
        assert abs(sum(r["parts_s"].values()) / r["iteration_s"] - 1) < 1e-9, r
        assert abs(r["tokens_per_s"] * r["iteration_s"] / r["tokens"] - 1) < 1e-9, r
        assert abs(r["tokens_per_s"] / r["gpus_per_replica"] / r["tokens_per_s_per_gpu"] - 1) < 1e-9, r
    assert rows["decode"]["gpus_per_replica"] == 32 and rows["decode"]["context_tokens"] == 2000
    assert rows["prefill"]["sequences"] == 16 and rows["prefill"]["prompt_tokens"] == 4096
    text = run("serve", WIDE_EP, "--iteration", "decode:8192@2000")
    assert text.returncode == 0 and "decode:8192@2000 (decode, TP32 PP1 EP)" in text.stdout and "communication" in text.stdout, text.stdout
    # A longer context reads more KV: never a faster iteration.
    longer = run_json("serve", WIDE_EP, "--iteration", "decode:8192@8000")["iterations"][0]
    assert longer["iteration_s"] > rows["decode"]["iteration_s"]
    assert longer["parts_s"]["attention"] > rows["decode"]["parts_s"]["attention"]


@test
def bad_iteration_batches_exit_2():
    out = os.path.join(TMP, "bad.json")
    for batch, fragment in (("decode", "expected decode:SEQUENCES@CONTEXT_TOKENS"), ("decode:0@10", "whole numbers from 1"),
                            ("sample:8@8", "unknown kind"), ("decode:8@1.5", "whole numbers"),
                            ("decode:9000@100", "max_num_seqs = 8192"), ("prefill:70000@100", "max_num_batched_tokens = 65536")):
        expect_bad_input(["serve", WIDE_EP, "--iteration", batch, "--json", out], ["--iteration", fragment], out)
    expect_bad_input(["serve", WIDE_EP, "--iteration", "decode:8@8", "--sweep-rate", "--json", out], ["--iteration", "--sweep-rate"], out)
    expect_bad_input(["serve", WIDE_EP, "--iteration", "decode:8@8", "--allow-oom", "--json", out], ["--iteration", "--allow-oom"], out)
    # 65,536 one-token prompts are more sequences than the prefill pool schedules at once.
    expect_bad_input(["serve", WIDE_EP, "--iteration", "prefill:65536@1", "--json", out], ["65536 prompts", "max_num_seqs = 512"], out)
    eagle = os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en-eagle.json")
    expect_bad_input(["serve", eagle, "--iteration", "decode:8@8", "--json", out], ["--iteration", "speculative"], out)


@test
def wide_ep_scenario_spans_nodes_and_keeps_up_with_its_rate():
    doc = run_json("serve", WIDE_EP)
    validate_schema(doc, "serve.schema.json")
    pools = {p["role"]: p for p in doc["pools"]}
    assert pools["prefill"]["tensor_parallel_size"] == 16 and pools["decode"]["tensor_parallel_size"] == 32
    assert pools["decode"]["num_redundant_experts"] == 32 and pools["decode"]["two_batch_overlap"] is True
    assert doc["cluster"]["nodes_used"] == 6, doc["cluster"]
    assert doc["steady_state"]["steady"], doc["steady_state"]
    assert doc["completed"] == doc["requests"]
    # Without two-batch overlap the decode pool's iterations expose their all-to-alls: more communication time.
    plain = run_json("serve", WIDE_EP, "--set", "serving.two_batch_overlap=false")
    share = lambda d: {p["role"]: p["iteration_time"]["parts_s"]["communication"] / p["iteration_time"]["busy_s"] for p in d["pools"]}
    assert share(plain)["decode"] > share(doc)["decode"], (share(plain), share(doc))


@test
def every_serving_result_splits_busy_time_by_part():
    doc = run_json("serve", SCENARIO)
    for pool in doc["pools"]:
        t = pool["iteration_time"]
        assert set(t["parts_s"]) == set(PARTS), t
        assert t["busy_s"] > 0 and abs(sum(t["parts_s"].values()) / t["busy_s"] - 1) < 1e-6, t
    # The pool's busy time is its replicas' busy fractions over the run.
    busy = sum(r["busy_fraction"] for r in doc["replicas"]) * doc["duration_s"]
    assert abs(busy / doc["pools"][0]["iteration_time"]["busy_s"] - 1) < 1e-6
    text = run("serve", SCENARIO)
    assert text.returncode == 0 and "iteration time (unified): gemm" in text.stdout, text.stdout


if __name__ == "__main__":
    run_tests()
