#!/usr/bin/env python3
"""End-to-end tests of hybrid Mamba/attention models (Nemotron 3): run, trace and replay, sweep and
report on the shipped scenario, Megatron's FLOP count in the result, and bad patterns, layouts and
unmodelled uses refused with exit 2 and the reason.
Usage: run_hybrid_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-hybrid-tests-")
NANO = os.path.join(CONFIGS, "training", "nemotron-3-nano-p5en.json")
# Megatron-Bridge's count for Nemotron 3 Nano at 8K: 839 model TFLOP/s/GPU at 37,664 tokens/s/GPU
# (calibration train-mbridge-26.02.01-pretrain-gb300).
NANO_FLOPS_PER_TOKEN = 839e12 / 37664


@test
def nano_runs_fits_and_counts_flops_as_megatron():
    doc = run_json("run", NANO)
    assert doc["tokens_per_s_per_gpu"] > 0
    assert not doc["oom"]
    per_token = doc["model_flops_per_step"] / doc["tokens_per_step"]
    assert abs(per_token / NANO_FLOPS_PER_TOKEN - 1) < 1e-3, per_token
    assert doc["tokens_per_step"] == 1024 * 8192


@test
def trace_has_mamba_kernels_and_replays_to_the_same_step():
    trace = os.path.join(TMP, "nano-trace.json")
    proc = run("trace", NANO, "--out", trace)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as f:
        nodes = json.load(f)["nodes"]
    names = {n["name"] for n in nodes}
    for kernel in ("mamba.in_proj", "mamba.conv1d", "ssd.chunk_scan", "ssd.bwd.dx", "mamba.out_proj.wgrad", "moe.dispatch", "attn.fwd"):
        assert kernel in names, kernel
    direct = run_json("run", NANO)["step_time_s"]
    replayed = run_json("run", NANO, "--trace", trace)["step_time_s"]
    assert abs(replayed / direct - 1) < 1e-9, (direct, replayed)


@test
def context_parallel_adds_the_mamba_all_to_alls():
    trace = os.path.join(TMP, "nano-cp2.json")
    proc = run("trace", NANO, "--set", "parallelism.context_parallel_size=2", "--out", trace)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as f:
        names = {n["name"] for n in json.load(f)["nodes"]}
    assert {"mamba.cp.a2a_in", "mamba.cp.a2a_out", "mamba.cp.a2a_in.bwd"} <= names


@test
def sweep_and_report_work_on_the_hybrid_scenario():
    out = os.path.join(TMP, "sweep.jsonl")
    proc = run("-q", "sweep", os.path.join(CONFIGS, "sweeps", "nemotron-3-nano-p5en-parallelism.json"), "--out", out)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        points = [json.loads(line) for line in f]
    assert len(points) == 12 and all(p["status"] == "ok" for p in points), [p.get("error") for p in points]
    result = os.path.join(TMP, "nano-run.json")
    assert run("run", NANO, "--json", result).returncode == 0
    html = os.path.join(TMP, "nano.html")
    proc = run("report", result, "--html", html)
    assert proc.returncode == 0, proc.stderr
    assert "nemotron-3-nano" in open(html).read()


@test
def unknown_pattern_letter_exits_2():
    out = os.path.join(TMP, "bad1.json")
    pattern = "MEMEX*EMEMEM*EMEMEM*EMEMEM*EMEMEM*EMEMEMEM*EMEMEMEME"
    expect_bad_input(["run", NANO, "--set", f"model.hybrid_override_pattern={pattern}", "--json", out],
                     ["nemotron-3-nano-p5en.json", "/model: /hybrid_override_pattern", "letter 'X' at position 4", "M = Mamba-2"], out)


@test
def pattern_of_the_wrong_length_exits_2():
    out = os.path.join(TMP, "bad2.json")
    expect_bad_input(["run", NANO, "--set", "model.num_hidden_layers=50", "--json", out],
                     ["/hybrid_override_pattern", "has 52 layers but num_hidden_layers is 50"], out)


@test
def tensor_parallel_not_dividing_the_mamba_heads_exits_2():
    out = os.path.join(TMP, "bad3.json")
    expect_bad_input(["run", NANO, "--set", "model.mamba_num_heads=51", "--set", "model.n_groups=3",
                      "--set", "parallelism.tensor_model_parallel_size=2", "--json", out],
                     ["nemotron-3-nano-p5en.json", "/parallelism/tensor_model_parallel_size = 2",
                      "51 Mamba heads (mamba_num_heads)"], out)


@test
def unmodelled_architectures_exit_2_with_the_reason():
    out = os.path.join(TMP, "bad4.json")
    dsa = write(TMP, "dsv32.json", json.dumps({"model_type": "deepseek_v32", "hidden_size": 7168, "num_hidden_layers": 61,
                                               "num_attention_heads": 128, "vocab_size": 129280, "index_topk": 2048}))
    expect_bad_input(["run", NANO, "--set", f"model={dsa}", "--json", out],
                     ["dsv32.json", "/index_topk = 2048", "lightning indexer", "not modelled"], out)
    nxt = write(TMP, "qwen3next.json", json.dumps({"model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 48,
                                                   "num_attention_heads": 16, "vocab_size": 151936, "linear_num_value_heads": 32}))
    expect_bad_input(["run", NANO, "--set", f"model={nxt}", "--json", out],
                     ["qwen3next.json", "/linear_num_value_heads = 32", "gated-delta", "not modelled"], out)


@test
def serving_a_hybrid_model_exits_2():
    out = os.path.join(TMP, "serve.json")
    expect_bad_input(["serve", os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"), "--set", "model=nemotron-3-nano",
                      "--json", out], ["hybrid Mamba/attention model", "not modelled"], out)


if __name__ == "__main__":
    run_tests()
