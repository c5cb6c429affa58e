#!/usr/bin/env python3
"""End-to-end tests of multi-token prediction in hybrid models (Nemotron 3 Super's 2 depths of "*E"):
the run counts Megatron's hybrid FLOPs with the MTP layers, the trace holds each depth's layers, NVFP4
with the recipe's last 14 layers in BF16 runs, and MTP depths without an MTP pattern exit 2.
Usage: run_hybrid_mtp_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, expect_bad_input, run, run_json, run_tests, test

TMP = tempfile.mkdtemp(prefix="fmsim-hybrid-mtp-tests-")
SUPER = os.path.join(CONFIGS, "training", "nemotron-3-super-p6-b200.json")
NANO = os.path.join(CONFIGS, "training", "nemotron-3-nano-p5en.json")
# Megatron-Bridge's count for Super at 8K with its 2 MTP depths: 815 model TFLOP/s/GPU at 9,623
# tokens/s/GPU (calibration train-mbridge-26.04-pretrain-gb300, Nemotron_3_Super NVFP4).
SUPER_FLOPS_PER_TOKEN = 815e12 / 9623


@test
def super_with_two_mtp_depths_counts_flops_as_megatron():
    doc = run_json("run", SUPER)
    assert doc["tokens_per_s_per_gpu"] > 0
    assert not doc["oom"], doc.get("memory")
    per_token = doc["model_flops_per_step"] / doc["tokens_per_step"]
    assert abs(per_token / SUPER_FLOPS_PER_TOKEN - 1) < 0.005, per_token
    # One depth fewer: the "*E" layers and one logits GEMM less, so fewer FLOPs and a shorter step.
    one = run_json("run", SUPER, "--set", "training.mtp_num_layers=1")
    assert one["model_flops_per_step"] < doc["model_flops_per_step"]
    assert one["step_time_s"] < doc["step_time_s"]


@test
def trace_holds_each_depths_pattern_layers():
    trace = os.path.join(TMP, "super-trace.json")
    proc = run("trace", SUPER, "--set", "cluster.nodes=1", "--set", "parallelism.expert_model_parallel_size=8",
               "--set", "model.num_hidden_layers=8", "--set", "model.hybrid_override_pattern=MEM*EMEM",
               "--set", "parallelism.global_batch_size=8", "--out", trace)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as f:
        nodes = [n for n in json.load(f)["nodes"] if n["rank"] == 0]
    names = [n["name"] for n in nodes]
    for name in ("mtp0.eh_proj", "mtp1.eh_proj", "mtp0.logits", "mtp1.logits.dgrad"):
        assert name in names, name
    # Decoder: 1 attention and 3 MoE layers; each of the 2 depths adds one of each.
    assert names.count("attn.fwd") == 1 + 2, names.count("attn.fwd")
    assert names.count("moe.dispatch") == 3 + 2, names.count("moe.dispatch")


@test
def nvfp4_with_the_last_14_layers_in_bf16_runs():
    # Megatron-Bridge nemotron_3_super_bf16_with_nvfp4_mixed: NVFP4, first_last_layers_bf16, last 14 in BF16, first 0.
    # The DGX-B200 NVFP4 row's layout: TP2 with sequence parallelism.
    fp4_args = ["run", SUPER, "--set", "training.precision=fp4", "--unset", "training.fp8_recipe",
                "--set", "training.fp4_recipe=nvfp4", "--set", "parallelism.tensor_model_parallel_size=2",
                "--set", "parallelism.sequence_parallel=true"]
    mixed = run_json(*fp4_args, "--set", "training.first_last_layers_bf16=true",
                     "--set", "training.num_layers_at_start_in_bf16=0", "--set", "training.num_layers_at_end_in_bf16=14")
    fp4 = run_json(*fp4_args)
    assert not mixed["oom"]
    assert mixed["step_time_s"] > fp4["step_time_s"]  # 14 of 88 layers (and the MTP layers) in BF16
    assert mixed["model_flops_per_step"] == fp4["model_flops_per_step"]


@test
def mtp_depths_without_an_mtp_pattern_exit_2():
    out = os.path.join(TMP, "bad-mtp.json")
    expect_bad_input(["run", NANO, "--set", "training.mtp_num_layers=1", "--json", out],
                     ["nemotron-3-nano-p5en.json", "/training/mtp_num_layers = 1",
                      "a hybrid model's MTP depths run the layers of its MTP pattern", "mtp_hybrid_override_pattern"], out)


if __name__ == "__main__":
    run_tests()
