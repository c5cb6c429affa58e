#!/usr/bin/env python3
"""End-to-end tests of serving a hybrid Mamba/attention model (Nemotron 3 Nano): the shipped scenario runs
steady and its result follows the schema with the Mamba state per sequence; the state's blocks bound how
many sequences run at once (a KV pool that holds three sequences' states runs the same requests about as
slowly as three at a time); one iteration's parts; a request that cannot hold its state is refused, and so
are the layouts hybrid serving does not model. Usage: run_serve_hybrid_tests.py FMSIM SOURCE_DIR"""
import json
import math
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, validate_schema, write

NANO = os.path.join(CONFIGS, "serving", "nemotron-3-nano-p5en.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-hybrid-tests-")


def one_gpu(name, **serving):
    doc = {"name": name, "cluster": {"base": os.path.join(TOPO, "p5en-128node.json"), "nodes": 1}, "model": "nemotron-3-nano",
           "serving": {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 1, **serving},
           "workload": {"arrival": "offline", "requests": 48, "input_tokens": 100, "output_tokens": 100}}
    return write(TMP, name + ".json", json.dumps(doc))


@test
def shipped_nano_scenario_runs_steady_with_its_state_reported():
    doc = run_json("serve", NANO)
    validate_schema(doc, "serve.schema.json")
    assert doc["completed"] == doc["requests"] == 4000
    pool = doc["pools"][0]
    state = pool["memory_per_gpu"]["mamba_state_bytes_per_sequence"]
    # 23 Mamba layers at TP 2: conv state (6,144 / 2 channels x 3, BF16) + SSM state (32 heads x 64 x 128, BF16)
    assert abs(state - 23 * (3072 * 3 * 2 + 32 * 64 * 128 * 2)) < 1, state
    kv_token = pool["memory_per_gpu"]["kv_bytes_per_token"]
    assert kv_token == 6 * 2 * 1 * 128 * 1, kv_token  # 6 attention layers, 1 KV head per GPU, FP8
    assert pool["state_blocks_per_sequence"] == math.ceil(state / (kv_token * pool["block_size"]))
    assert doc["steady_state"]["steady"], doc["steady_state"]
    text = run("serve", NANO)
    assert text.returncode == 0 and "Mamba state 12.48 MB per sequence and GPU" in text.stdout, text.stdout


@test
def the_state_blocks_bound_the_sequences_that_run_at_once():
    free = run_json("serve", one_gpu("free"))
    state_blocks = free["pools"][0]["state_blocks_per_sequence"]
    per_sequence = state_blocks + math.ceil(200 / 16)  # its state and its 200 tokens of KV
    three = run_json("serve", one_gpu("three", num_gpu_blocks_override=3 * per_sequence))
    one = run_json("serve", one_gpu("one", num_gpu_blocks_override=per_sequence))
    assert three["completed"] == one["completed"] == 48
    # 48 requests, all at once when memory allows, else three (or one) at a time.
    assert three["duration_s"] > 6 * free["duration_s"], (three["duration_s"], free["duration_s"])
    assert one["duration_s"] > 1.8 * three["duration_s"], (one["duration_s"], three["duration_s"])
    # Without the state the same pool would hold 3 x 521 / 13 = 120 such sequences: the state is what binds.
    out = os.path.join(TMP, "too-small-result.json")
    expect_bad_input(["serve", one_gpu("too-small", num_gpu_blocks_override=state_blocks), "--json", out],
                     ["needs 200 tokens of KV cache and its Mamba state"], out)


@test
def an_iteration_counts_the_scan_and_the_state_update_as_sequence_mixing():
    doc = run_json("serve", NANO, "--iteration", "decode:256@2000", "--iteration", "decode:256@8000", "--iteration", "prefill:8192@2000")
    validate_schema(doc, "serve-iteration.schema.json")
    short, long_, prefill = doc["iterations"]
    # Longer contexts read more KV, in the 6 attention layers only: attention grows by far less than 4x.
    assert long_["parts_s"]["attention"] > short["parts_s"]["attention"]
    assert long_["parts_s"]["attention"] < 2 * short["parts_s"]["attention"], (long_, short)
    assert prefill["parts_s"]["attention"] > 0 and prefill["prompt_tokens"] == 2000


@test
def unmodelled_hybrid_layouts_are_refused():
    out = os.path.join(TMP, "bad-result.json")
    for serving, fragment in (({"pipeline_parallel_size": 2}, "pipeline_parallel_size > 1 is not modelled"),
                              ({"enable_prefix_caching": True}, "a Mamba layer's state is per sequence"),
                              ({"tensor_parallel_size": 2, "data_parallel_attention": True, "enable_expert_parallel": True},
                               "data_parallel_attention is not modelled"),
                              ({"mamba_ssm_cache_dtype": "int8"}, "mamba_ssm_cache_dtype")):
        expect_bad_input(["serve", one_gpu("bad", **serving), "--json", out], [fragment], out)


if __name__ == "__main__":
    run_tests()
