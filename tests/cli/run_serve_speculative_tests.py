#!/usr/bin/env python3
"""End-to-end tests of speculative decoding in `fmsim serve` (issue 26 item 4): expected tokens per step
against its closed form (i.i.d. and per-position acceptance), TPOT at low load = step time / expected
tokens, the verify and draft costs, the draft's KV in the block pool, MTP heads, throughput, and bad input.
Usage: run_serve_speculative_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import SOURCE, TOPO, expect_bad_input, run, run_json, run_tests, test, write

P5 = os.path.join(TOPO, "p5-2node.json")
P5EN = os.path.join(TOPO, "p5en-128node.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-speculative-tests-")
BASE = {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 4}
ONE = {"arrival": "offline", "requests": 1, "input_tokens": 1000, "output_tokens": 1201}


def scenario(name, speculative=None, workload=ONE, model="llama3.3-70b", cluster=P5, serving=BASE):
    serving = dict(serving)
    if speculative is not None:
        serving["speculative"] = speculative
    doc = {"name": name, "cluster": {"base": cluster, "nodes": 1}, "model": model, "serving": serving, "workload": workload}
    return write(TMP, name + ".json", json.dumps(doc))


def serve(*args):
    return run_json("serve", *args)


def eagle(a, k=3):
    return {"method": "eagle", "num_speculative_tokens": k, "acceptance_rate": a}


@test
def expected_tokens_per_step_closed_form():
    # i.i.d. acceptance a over k drafts: E = (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023).
    for a, k in ((0.7, 3), (0.5, 1), (0.9, 5), (0.0, 4), (1.0, 2)):
        doc = serve(scenario(f"iid-{a}-{k}", eagle(a, k)))
        expected = k + 1 if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)
        spec = doc["pools"][0]["speculative"]
        assert abs(spec["expected_tokens_per_step"] - expected) < 1e-12, (spec, expected)
        # Measured over a 1,200-token output: within the last step's rounding.
        assert abs(doc["speculative_tokens_per_step"] / expected - 1) < 0.01, (doc["speculative_tokens_per_step"], expected)
    # Per-position rates (vLLM's metrics: drafts whose first i tokens were all accepted): E = 1 + sum p_i.
    doc = serve(scenario("positions", {"method": "eagle", "num_speculative_tokens": 3, "acceptance_rate": [0.8, 0.5, 0.2]}))
    assert abs(doc["pools"][0]["speculative"]["expected_tokens_per_step"] - 2.5) < 1e-12
    assert abs(doc["speculative_tokens_per_step"] - 2.5) < 0.01, doc["speculative_tokens_per_step"]


@test
def tpot_at_low_load_is_the_step_time_over_the_expected_tokens():
    plain = serve(scenario("plain"))["tpot_s"]["mean"]
    # Acceptance 0: every step costs the same (k drafts + a verify over k + 1 rows) and gains one token.
    step = serve(scenario("a0", eagle(0.0)))["tpot_s"]["mean"]
    assert plain < step < 1.5 * plain, (plain, step)
    for a in (0.5, 0.8):
        e = (1 - a ** 4) / (1 - a)
        tpot = serve(scenario(f"a{a}", eagle(a)))["tpot_s"]["mean"]
        assert abs(tpot * e / step - 1) < 0.01, (a, tpot, step, e)
    # A whole draft model costs more per step than a one-layer EAGLE head.
    draft = serve(scenario("draft0", {"method": "draft", "num_speculative_tokens": 3, "acceptance_rate": 0.0,
                                      "draft_model": "llama3.1-8b"}))["tpot_s"]["mean"]
    assert draft > step, (draft, step)


@test
def draft_kv_shares_the_block_pool():
    plain = serve(scenario("kv-plain"))["pools"][0]
    draft = serve(scenario("kv-draft", {"method": "draft", "num_speculative_tokens": 2, "acceptance_rate": 0.6,
                                        "draft_model": "llama3.1-8b"}))["pools"][0]
    # Llama-3.1-8B at TP4 in FP8: 32 layers x K and V x 2 KV heads per GPU x 128 x 1 B = 16 KiB per token.
    assert draft["speculative"]["draft_kv_bytes_per_token_per_gpu"] == 32 * 2 * 2 * 128 * 1
    assert draft["memory_per_gpu"]["kv_bytes_per_token"] == plain["memory_per_gpu"]["kv_bytes_per_token"] + 16384
    # The draft's weights leave less for the KV cache, which holds target + draft per token.
    assert abs(draft["memory_per_gpu"]["weights_bytes"] - plain["memory_per_gpu"]["weights_bytes"] -
               draft["speculative"]["draft_weights_bytes_per_gpu"]) < 1
    expected_tokens = draft["memory_per_gpu"]["kv_cache_bytes"] // draft["memory_per_gpu"]["kv_bytes_per_token"]
    assert abs(draft["kv_capacity_tokens_per_replica"] - expected_tokens) <= draft["block_size"], draft
    assert draft["kv_capacity_tokens_per_replica"] < plain["kv_capacity_tokens_per_replica"]


@test
def mtp_heads_of_deepseek_v3():
    spec = {"method": "mtp", "num_speculative_tokens": 1, "acceptance_rate": 0.8}
    serving = dict(BASE, tensor_parallel_size=8)
    work = dict(ONE, output_tokens=301)
    doc = serve(scenario("mtp", spec, work, "deepseek-v3", P5EN, serving))
    plain = serve(scenario("mtp-plain", None, work, "deepseek-v3", P5EN, serving))
    pool = doc["pools"][0]["speculative"]
    assert pool["expected_tokens_per_step"] == 1.8 and pool["draft_kv_bytes_per_token_per_gpu"] == 576, pool  # one MLA layer, FP8
    assert doc["tpot_s"]["mean"] < plain["tpot_s"]["mean"], (doc["tpot_s"], plain["tpot_s"])


@test
def throughput_rises_with_acceptance():
    work = {"arrival": "offline", "requests": 64, "input_tokens": 500, "output_tokens": 400}
    plain = serve(scenario("tp-plain", None, work))["output_tokens_per_s"]
    low = serve(scenario("tp-low", eagle(0.1), work))["output_tokens_per_s"]
    high = serve(scenario("tp-high", eagle(0.8), work))["output_tokens_per_s"]
    assert low < plain < high, (low, plain, high)


@test
def speculative_results_validate_against_the_schema():
    import jsonschema
    with open(os.path.join(SOURCE, "docs", "schema", "serve.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    shipped = os.path.join(SOURCE, "configs", "serving", "llama3.3-70b-p5en-eagle.json")
    for doc in (serve(scenario("schema", eagle(0.7))), serve(shipped, "--set", "workload.requests=300")):
        errors = [f"/{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]
        assert not errors, errors[:5]
        assert doc["pools"][0]["speculative"]["method"] == "eagle"


@test
def text_summary_names_expected_and_measured_tokens():
    text = run("serve", scenario("text", eagle(0.7))).stdout
    assert "speculative decoding (eagle, k = 3): 2.533 tokens per decode step expected" in text, text


@test
def bad_speculative_input_exits_2():
    out = os.path.join(TMP, "never.json")
    expect_bad_input(["serve", scenario("a-high", eagle(1.2)), "--json", out], ["acceptance_rate", "1.2", "[0, 1]"], out)
    expect_bad_input(["serve", scenario("a-neg", eagle(-0.1)), "--json", out], ["acceptance_rate", "-0.1"], out)
    expect_bad_input(["serve", scenario("k0", eagle(0.5, 0)), "--json", out], ["num_speculative_tokens", "k < 1"], out)
    expect_bad_input(["serve", scenario("no-draft", {"method": "draft", "num_speculative_tokens": 2, "acceptance_rate": 0.5}),
                      "--json", out], ["draft_model", "method \"draft\""], out)
    expect_bad_input(["serve", scenario("mtp-llama", {"method": "mtp", "num_speculative_tokens": 1, "acceptance_rate": 0.5}),
                      "--json", out], ["multi-token-prediction", "llama3.3-70b"], out)
    expect_bad_input(["serve", scenario("list-len", {"method": "eagle", "num_speculative_tokens": 3, "acceptance_rate": [0.5, 0.4]}),
                      "--json", out], ["acceptance_rate", "3 = num_speculative_tokens"], out)
    expect_bad_input(["serve", scenario("list-up", {"method": "eagle", "num_speculative_tokens": 2, "acceptance_rate": [0.4, 0.5]}),
                      "--json", out], ["acceptance_rate", "do not increase"], out)
    expect_bad_input(["serve", scenario("list-bad", {"method": "eagle", "num_speculative_tokens": 2, "acceptance_rate": [0.4, 1.5]}),
                      "--json", out], ["acceptance_rate", "1.5"], out)
    expect_bad_input(["serve", scenario("eagle-draft", dict(eagle(0.5), draft_model="llama3.1-8b")), "--json", out],
                     ["draft_model", "EAGLE head"], out)
    expect_bad_input(["serve", scenario("vocab", {"method": "draft", "num_speculative_tokens": 2, "acceptance_rate": 0.5,
                                                  "draft_model": "llama2-7b"}), "--json", out], ["draft_model", "vocabulary"], out)
    expect_bad_input(["serve", scenario("method", {"method": "medusa", "num_speculative_tokens": 2, "acceptance_rate": 0.5}),
                      "--json", out], ["method", "medusa"], out)
    expect_bad_input(["serve", scenario("a-missing", {"method": "eagle", "num_speculative_tokens": 2}), "--json", out],
                     ["acceptance_rate"], out)


run_tests()
