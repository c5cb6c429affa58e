#!/usr/bin/env python3
"""training.recipe end to end: the shipped scenario that names a recipe, the scenario's keys over the
recipe's, the variant by GPU and release, the recipe's settings echoed in the result, and bad references
(exit 2, one line naming the recipe, what was asked and the variants that exist)."""
import json
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, write

SCENARIO = os.path.join(CONFIGS, "training", "qwen3-30b-a3b-p5-recipe.json")


@test
def shipped_scenario_takes_the_recipe_variant_for_its_gpu_and_release():
    out = run_json("run", SCENARIO)
    s = out["scenario"]
    # 26.02.01's H100 FP8-CS configuration: PP1 EP16, global batch 1024, HybridEP.
    assert s["training"]["recipe"] == "megatron-bridge/qwen3-30b-a3b@26.02.01"
    assert s["parallelism"]["expert_model_parallel_size"] == 16, s["parallelism"]
    assert s["parallelism"]["global_batch_size"] == 1024
    assert s["training"]["moe_token_dispatcher_type"] == "flex"
    assert s["training"]["moe_flex_dispatcher_backend"] == "hybridep"
    assert s["training"]["fp8_param_gather"] is True  # from the FP8-CS preset
    # 26.02: DeepEP with the EP all-to-all overlap at PP2 VP12 EP8 (commit 4a6450755 changed it).
    old = run_json("run", SCENARIO, "--set", "training.recipe=megatron-bridge/qwen3-30b-a3b@26.02")["scenario"]
    assert old["parallelism"]["pipeline_model_parallel_size"] == 2 and old["parallelism"]["virtual_pipeline_model_parallel_size"] == 12
    assert old["training"]["moe_flex_dispatcher_backend"] == "deepep"
    assert old["training"]["overlap_moe_expert_parallel_comm"] is True


@test
def the_run_names_its_recipe_release_and_variant():
    out = run_json("run", SCENARIO)
    r = out["derived"]["recipe"]
    assert r["reference"] == "megatron-bridge/qwen3-30b-a3b@26.02.01" and r["release"] == "26.02.01", r
    assert "H100" in r["variant"], r
    text = run("run", SCENARIO).stdout
    line = next(l for l in text.splitlines() if l.strip().startswith("recipe"))
    assert "megatron-bridge/qwen3-30b-a3b@26.02.01" in line and "release 26.02.01" in line and r["variant"] in line, line
    # The CUDA-graph settings of the recipe are modelled now (training.cuda_graph_impl / cuda_graph_scope).
    assert "cuda_graph_impl" not in r["not_modelled"], r


@test
def scenario_keys_win_and_the_step_changes_with_them():
    base = run_json("run", SCENARIO)
    mine = run_json("run", SCENARIO, "--set", "training.moe_token_dispatcher_type=alltoall",
                    "--set", "training.moe_flex_dispatcher_backend=null")
    assert mine["scenario"]["training"]["moe_token_dispatcher_type"] == "alltoall"
    assert "moe_flex_dispatcher_backend" not in mine["scenario"]["training"]
    assert mine["step_time_s"] != base["step_time_s"]
    # Without the recipe the scenario runs the defaults: no EP, one micro-batch per GPU.
    plain = run_json("run", SCENARIO, "--set", "training.recipe=null", "--set", "parallelism.global_batch_size=16",
                     "--allow-oom")
    assert plain["scenario"]["parallelism"] == {"global_batch_size": 16}


@test
def the_gpu_picks_the_variant():
    with tempfile.TemporaryDirectory() as tmp:
        path = write(tmp, "b200.json", json.dumps({
            "cluster": {"base": os.path.join(TOPO, "p6-b200-64node.json"), "nodes": 1}, "model": "qwen3-30b-a3b",
            "training": {"recipe": "megatron-bridge/qwen3-30b-a3b@26.02.01", "precision": "fp8", "fp8_recipe": "mxfp8"}}))
        s = run_json("run", path)["scenario"]
        # B200 MXFP8 at 26.02.01 (commit 0ec1df783): HybridEP, micro-batch 4, EP8 on one node.
        assert s["parallelism"]["micro_batch_size"] == 4 and s["parallelism"]["expert_model_parallel_size"] == 8
        assert s["training"]["moe_flex_dispatcher_backend"] == "hybridep"


@test
def bad_references_are_one_line_errors():
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "out.json")
        expect_bad_input(["run", SCENARIO, "--set", "training.recipe=megatron-bridge/gpt-5", "--json", out],
                         ["/training/recipe", "'megatron-bridge/gpt-5'", "no such recipe", "known recipes:",
                          "megatron-bridge/deepseek-v3"], out)
        expect_bad_input(["run", SCENARIO, "--set", "training.recipe=megatron-bridge/qwen3-30b-a3b@25.01", "--json", out],
                         ["no release '25.01'", "26.02.01"], out)
        # A recipe without a catch-all variant: what was asked and the variants that exist.
        recipe = write(tmp, "only-b200.json", json.dumps({
            "schema": "fmsim.recipe/1",
            "releases": [{"release": "1", "source": {"repository": "r", "ref": "v1", "files": ["f.py"]}}],
            "precisions": {"presets": {"MXFP8": {"precision": "fp8", "fp8_recipe": "mxfp8"}}},
            "variants": [{"name": "B200 MXFP8", "when": {"gpu": "B200", "precision": "MXFP8"}}]}))
        expect_bad_input(["run", SCENARIO, "--set", f"training.recipe={recipe}@1", "--json", out],
                         ["only-b200.json", "no variant", "GPU H100-SXM", "precision \"fp8\"", "'B200 MXFP8' (B200, MXFP8)"], out)
        broken = write(tmp, "broken.json", json.dumps({"schema": "fmsim.recipe/1", "releases": [{"release": "1"}],
                                                       "variants": [{"name": "x"}]}))
        expect_bad_input(["run", SCENARIO, "--set", f"training.recipe={broken}", "--json", out],
                         ["broken.json", "/releases/0/source"], out)
        # A malformed parallelism section is named as such, not as an unknown 'recipe' key.
        bad_par = write(tmp, "bad-par.json", json.dumps({"cluster": {"base": os.path.join(TOPO, "p5-2node.json")},
                                                         "model": "qwen3-30b-a3b", "parallelism": "PP2",
                                                         "training": {"recipe": "megatron-bridge/qwen3-30b-a3b"}}))
        proc = run("run", bad_par)
        assert proc.returncode == 2 and "/parallelism" in proc.stderr and "recipe" not in proc.stderr.split(":")[-1], proc.stderr
        proc = run("run", SCENARIO, "--set", "training.recipe=7")
        assert proc.returncode == 2 and "expected a recipe name" in proc.stderr, proc.stderr


if __name__ == "__main__":
    run_tests()
