"""End-to-end tests of fine-tuning workloads (SFT, LoRA), multi-token prediction and pipeline layouts:
`fmsim run`, `trace` (and its replay), `sweep` and `report` on the shipped scenarios, and the bad inputs that
exit 2 with one line naming the key. Usage: run_finetune_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, FMSIM, expect_bad_input, run, run_json, run_tests, test, write

TRAINING = os.path.join(CONFIGS, "training")
SFT = os.path.join(TRAINING, "llama3-70b-sft-p5.json")
LORA = os.path.join(TRAINING, "llama3-70b-lora-p5.json")
DEEPSEEK = os.path.join(TRAINING, "deepseek-v3-p5en.json")
TMP = tempfile.mkdtemp(prefix="fmsim-finetune-tests-")


@test
def lora_trains_only_the_adapters():
    lora = run_json("run", LORA)
    sft = run_json("run", LORA, "--set", "training.workload=sft", "--unset", "training.lora", "--allow-oom")
    assert lora["derived"]["workload"] == "lora" and sft["derived"]["workload"] == "sft"
    peak, full = lora["memory"], sft["memory"]
    # Rank-16 adapters on linear_qkv of 20 layers per GPU at TP2: 2.9M parameters, BF16 gradients.
    assert peak["gradients_bytes"] < 1e-3 * full["gradients_bytes"], (peak, full)
    assert peak["optimizer_bytes"] < 1e-3 * full["optimizer_bytes"], (peak, full)
    assert peak["activations_bytes"] < full["activations_bytes"]
    # No weight-gradient GEMMs: faster than SFT on the same rows, reported FLOPs 2/3 of the GEMMs.
    assert lora["step_time_s"] < 0.85 * sft["step_time_s"], (lora["step_time_s"], sft["step_time_s"])
    flops_per_token = lora["model_tflops_per_gpu"] * 1e12 / lora["tokens_per_s_per_gpu"]
    assert 2.70e11 < flops_per_token < 2.85e11, flops_per_token  # the published row: 735 / 2643 = 278 GFLOP


@test
def sft_counts_rows_as_the_26_06_table():
    out = run_json("run", SFT)
    flops_per_token = out["model_tflops_per_gpu"] * 1e12 / out["tokens_per_s_per_gpu"]
    assert abs(flops_per_token / (710e12 / 1638) - 1) < 0.002, flops_per_token  # 433 GFLOP per token
    per_sequence = run_json("run", SFT, "--set", "training.packing.flops_attention=per_sequence")
    assert per_sequence["step_time_s"] == out["step_time_s"]  # only the reported FLOPs change
    assert per_sequence["model_tflops_per_gpu"] < out["model_tflops_per_gpu"]
    # Packed short sequences attend less than whole rows: faster than pretraining on the same rows.
    pretrain = run_json("run", SFT, "--set", "training.workload=pretrain", "--unset", "training.packing")
    assert out["step_time_s"] < pretrain["step_time_s"], (out["step_time_s"], pretrain["step_time_s"])


@test
def trace_replays_and_sweep_and_report_run():
    trace = os.path.join(TMP, "lora-trace.json")
    proc = run("trace", LORA, "--out", trace)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as f:
        names = {n["name"] for n in json.load(f)["nodes"]}
    assert "lora.qkv.a.wgrad" in names and "qkv.dgrad" in names and "qkv.wgrad" not in names, sorted(names)[:20]
    replayed = run_json("run", "--trace", trace)
    direct = run_json("run", LORA)
    assert abs(replayed["step_time_s"] / direct["step_time_s"] - 1) < 1e-9
    sweep = write(TMP, "lora-sweep.json", json.dumps({
        "schema": "fmsim.sweep/1", "name": "lora-rank", "command": "run", "scenario": os.path.abspath(LORA),
        "grid": {"training.lora.rank": [8, 64], "training.lora.target_modules": [["linear_qkv"], ["linear_qkv", "linear_fc1"]]}}))
    out = os.path.join(TMP, "lora-sweep.jsonl")
    proc = run("-q", "sweep", sweep, "--out", out, "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        points = [json.loads(line) for line in f if line.strip()]
    assert len(points) == 4 and all(p["status"] == "ok" for p in points), points
    result = os.path.join(TMP, "sft.json")
    assert run("run", SFT, "--json", result).returncode == 0
    html = os.path.join(TMP, "sft.html")
    proc = run("report", result, "--html", html)
    assert proc.returncode == 0 and os.path.getsize(html) > 1000, proc.stderr


@test
def deepseek_runs_with_its_mtp_layer():
    out = run_json("run", DEEPSEEK)
    flops_per_token = out["model_tflops_per_gpu"] * 1e12 / out["tokens_per_s_per_gpu"]
    # Megatron's count with MTP: the published DeepSeek-V3 rows' 1,292 TFLOP/s at 4,969 tokens/s.
    assert abs(flops_per_token / (1292e12 / 4969) - 1) < 0.003, flops_per_token
    without = run_json("run", DEEPSEEK, "--set", "training.mtp_num_layers=0",
                       "--set", "parallelism.pipeline_model_parallel_layout=Et|(tt|)*30L")
    assert without["step_time_s"] < out["step_time_s"]
    # A standalone MTP stage before a loss-only stage, as MLM's own example.
    standalone = run_json("run", DEEPSEEK, "--set", "parallelism.pipeline_model_parallel_layout=Et*2|(tt|)*29,tm|L")
    assert standalone["step_time_s"] > 0


@test
def bad_fine_tuning_and_layouts_exit_2():
    out = os.path.join(TMP, "never.json")
    cases = [
        (LORA, ["training.lora.rank=0"], ["/training/lora/rank", "found 0"]),
        (LORA, ["training.lora.target_modules=[\"linear_q\"]"], ["/training/lora/target_modules", "linear_q"]),
        (SFT, ["model.base=mixtral-8x7b", "training.workload=lora", "training.lora={\"target_modules\": [\"linear_fc1\"]}"],
         ["linear_fc1", "mixture-of-experts"]),
        (DEEPSEEK, ["training.workload=lora", "training.lora={\"target_modules\": [\"linear_qkv\"]}"], ["linear_qkv", "latent"]),
        (SFT, ["training.packing.packing_efficiency=1.5"], ["/training/packing/packing_efficiency", "1.5", "(0, 1]"]),
        (SFT, ["training.packing.packing_efficiency=0"], ["/training/packing/packing_efficiency", "(0, 1]"]),
        (SFT, ["training.workload=pretrain"], ["/training/packing", "unless workload"]),
        (DEEPSEEK, ["parallelism.pipeline_model_parallel_layout=Et|(tt|)*30L"], ["pipeline_model_parallel_layout", "MTP", "'m'"]),
        (DEEPSEEK, ["parallelism.pipeline_model_parallel_layout=Etm|(tt|)*30L"], ["decoder layers 't' must come before"]),
        (DEEPSEEK, ["parallelism.pipeline_model_parallel_layout=t|(tt|)*30mLE"], ["'E' must appear exactly once"]),
        (DEEPSEEK, ["parallelism.account_for_loss_in_pipeline_split=true"], ["pipeline_model_parallel_layout", "account_for"]),
        (SFT, ["model.sliding_window=0"], ["sliding_window", "0"]),
    ]
    for scenario, sets, fragments in cases:
        args = ["run", scenario]
        for s in sets:
            args += ["--set", s]
        expect_bad_input(args + ["--json", out], fragments, out)


if __name__ == "__main__":
    run_tests()
