#!/usr/bin/env python3
"""The shipped training scenarios (RL post-training ones included): one for every model preset, each runs and fits in memory, and the
DeepSeek-V3 one is the layout docs/validation.md validates.
Usage: run_scenario_tests.py FMSIM SOURCE_DIR"""
import json
import os

from cli_support import CONFIGS, run_json, run_tests, test

MODELS = os.path.join(CONFIGS, "models")
TRAINING = os.path.join(CONFIGS, "training")


def scenarios():
    for name in sorted(os.listdir(TRAINING)):
        if name.endswith(".json"):
            with open(os.path.join(TRAINING, name)) as f:
                yield name, json.load(f)


RESULTS = {}


def result(name):
    """`fmsim run` of a shipped training scenario, run once per test process."""
    if name not in RESULTS:
        RESULTS[name] = run_json("run", os.path.join(TRAINING, name))
    return RESULTS[name]


def model_name(scenario):
    model = scenario["model"]
    return model if isinstance(model, str) else model.get("base")


@test
def every_preset_has_a_training_scenario():
    presets = {name[:-len(".json")] for name in os.listdir(MODELS) if name.endswith(".json")}
    covered = {model_name(s) for _, s in scenarios()}
    assert presets - covered == set(), f"presets without a scenario in configs/training: {sorted(presets - covered)}"


@test
def every_training_scenario_runs_and_fits():
    for name, scenario in scenarios():
        out = result(name)
        if scenario["training"].get("workload") == "rl":
            # RL post-training: one iteration (fmsim.rl/1), every phase timed; the update's fit is checked
            # by fmsim run itself (it refuses an update that does not fit, exit 2).
            assert out["schema"] == "fmsim.rl/1" and out["iteration_s"] > 0, name
            assert all(out["breakdown_s"][k] > 0 for k in ("generation", "forward", "update")), (name, out["breakdown_s"])
            assert out["roles"]["trainer"]["memory_bytes_per_gpu"] > 0, name
            continue
        assert out["oom"] is False, f"{name}: {out['hbm_peak_bytes'] / 2**30:.1f} GiB over HBM"
        # MFU against the peak of the scenario's own precision stays below 1 (against the BF16 peak an FP4 run
        # passes 1: FP4's dense peak is 4 to 6 times BF16's).
        assert out["step_time_s"] > 0 and 0 < out["mfu_precision_peak"] < 1, \
            f"{name}: {out['step_time_s']} s, MFU {out['mfu_precision_peak']} of the precision's peak"


@test
def deepseek_v3_is_the_validated_recipe():
    path = os.path.join(TRAINING, "deepseek-v3-p5en.json")
    with open(path) as f:
        scenario = json.load(f)
    par, training = scenario["parallelism"], scenario["training"]
    # Megatron-Bridge's DeepSeek-V3 H100 recipe as benchmarks/calibration/validate_training.py runs it.
    assert (par["tensor_model_parallel_size"], par["pipeline_model_parallel_size"],
            par["virtual_pipeline_model_parallel_size"], par["expert_model_parallel_size"]) == (2, 8, 4, 64), par
    assert par["pipeline_model_parallel_layout"] == "Et|(tt|)*30mL", par
    assert training["moe_token_dispatcher_type"] == "flex", training
    assert training["recompute_granularity"] == "selective", training
    assert sorted(training["recompute_modules"]) == ["mla_up_proj", "mlp"], training
    out = result("deepseek-v3-p5en.json")
    assert out["oom"] is False and out["derived"]["gpus"] == 1024, out["derived"]
    assert out["hbm_peak_bytes"] < out["hbm_capacity_bytes"]
    # The published FP8 row at this layout on 1,024 H100s ran 1,297 tokens/s/GPU; H200s are no slower.
    assert 1000 < out["tokens_per_s_per_gpu"] < 2500, out["tokens_per_s_per_gpu"]


if __name__ == "__main__":
    run_tests()
