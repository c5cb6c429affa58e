#!/usr/bin/env python3
"""End-to-end tests of training.framework (configs/stacks): a scenario names its stack and release, the run
reports the stack's display name, the stack's mechanisms move the step, and a bad name, release or value
exits 2 with one line naming the file, the key and the value and listing what is known.
Usage: run_framework_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, expect_bad_input, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-framework-tests-")
LLAMA = os.path.join(CONFIGS, "training", "llama3-8b-p5.json")
SMALL = ["--set", "cluster.nodes=1", "--set", "model.num_hidden_layers=4", "--set", "parallelism.global_batch_size=8"]
STACKS = ["deepspeed", "megascale", "megatron-bridge", "megatron-core", "megatron-lm", "nemo", "torchtitan"]


def small(*extra):
    return run_json("run", LLAMA, *SMALL, *extra)


@test
def default_is_current_megatron_core_and_unchanged():
    plain = small()
    named = small("--set", "training.framework=megatron-core@current")
    assert plain["derived"]["framework"] == "Megatron-Core current", plain["derived"]
    assert named["derived"]["framework"] == plain["derived"]["framework"], named["derived"]
    assert named["step_time_s"] == plain["step_time_s"]
    # Megatron-Bridge releases run the same mechanisms.
    bridge = small("--set", "training.framework=megatron-bridge@26.02")
    assert bridge["derived"]["framework"] == "Megatron-Bridge 26.02"
    assert bridge["step_time_s"] == plain["step_time_s"]


@test
def torchtitan_names_its_release_and_is_slower_than_megatron():
    plain = small()
    titan = small("--set", "training.framework=torchtitan")
    assert titan["derived"]["framework"] == "torchtitan 2025-03", titan["derived"]
    # FlashAttention-2, unfused norms / RoPE / SwiGLU / loss, FSDP2 copies, FP32 gradient reduction.
    assert titan["step_time_s"] > 1.1 * plain["step_time_s"], (titan["step_time_s"], plain["step_time_s"])
    # torch.compile fuses the element-wise chains back: faster, still slower than Megatron-Core (FA2).
    compiled = small("--set", "training.framework=torchtitan@2025-03", "--set", "training.torch_compile=true")
    assert plain["step_time_s"] < compiled["step_time_s"] < titan["step_time_s"]


@test
def megatron_lm_2021_defaults_apply_unless_the_scenario_sets_them():
    # The stack's default sharding (no_shard: no distributed optimizer in 2021) applies where the scenario
    # sets none; the scenario's own setting wins.
    lm = small("--set", "training.framework=megatron-lm@2021", "--unset", "parallelism.data_parallel_sharding_strategy")
    assert lm["derived"]["framework"] == "Megatron-LM 2021"
    own = small("--set", "training.framework=megatron-lm@2021", "--set", "parallelism.data_parallel_sharding_strategy=optim")
    plain_optim = small("--set", "parallelism.data_parallel_sharding_strategy=optim")
    assert lm["memory"]["optimizer_bytes"] > own["memory"]["optimizer_bytes"], (lm["memory"], own["memory"])
    assert own["memory"]["optimizer_bytes"] == plain_optim["memory"]["optimizer_bytes"]


@test
def unknown_stack_exits_2_listing_the_known_stacks():
    out = os.path.join(TMP, "unknown.json")
    expect_bad_input(["run", LLAMA, "--set", "training.framework=pytorch-lightning", "--json", out],
                     ["llama3-8b-p5.json", "/training/framework", "pytorch-lightning", "known stacks: " + ", ".join(STACKS)], out)


@test
def unknown_release_exits_2_listing_the_releases():
    out = os.path.join(TMP, "release.json")
    expect_bad_input(["run", LLAMA, "--set", "training.framework=torchtitan@2019-01", "--json", out],
                     ["llama3-8b-p5.json", "/training/framework", "torchtitan@2019-01", "torchtitan.json",
                      "no release '2019-01'", "known releases: 2025-03"], out)


@test
def non_string_and_path_like_values_exit_2():
    out = os.path.join(TMP, "value.json")
    expect_bad_input(["run", LLAMA, "--set", "training.framework=3", "--json", out],
                     ["/training/framework", "found 3", "expected a stack name"], out)
    expect_bad_input(["run", LLAMA, "--set", "training.framework=../models/llama3-8b", "--json", out],
                     ["/training/framework", "../models/llama3-8b", "known stacks"], out)
    expect_bad_input(["run", LLAMA, "--set", "training.framework=torchtitan@", "--json", out],
                     ["/training/framework", "expected a release after '@'"], out)
    expect_bad_input(["run", LLAMA, "--set", "training.torch_compile=yes", "--json", out],
                     ["/training/torch_compile", "yes"], out)


@test
def unfused_attention_refuses_context_parallelism():
    out = os.path.join(TMP, "cp.json")
    expect_bad_input(["run", LLAMA, *SMALL, "--set", "parallelism.context_parallel_size=2",
                      "--set", "training.framework=megatron-lm@2021", "--json", out],
                     ["/parallelism/context_parallel_size = 2", "Megatron-LM 2021", "unfused attention"], out)


@test
def a_malformed_stack_file_exits_2_naming_it():
    stacks = os.path.join(TMP, "stacks")
    os.makedirs(stacks, exist_ok=True)
    write(stacks, "mine.json", json.dumps({"name": "mine", "default_release": "1", "releases": {"1": {
        "source": "test", "attention": "sparse"}}}))
    out = os.path.join(TMP, "malformed.json")
    env = dict(os.environ, FMSIM_STACKS_DIR=stacks)
    old = os.environ.copy()
    os.environ.update(env)
    try:
        expect_bad_input(["run", LLAMA, "--set", "training.framework=mine", "--json", out],
                         ["mine.json", "/releases/1/attention", "sparse", "fused"], out)
    finally:
        os.environ.clear()
        os.environ.update(old)


if __name__ == "__main__":
    run_tests()
