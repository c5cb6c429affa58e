#!/usr/bin/env python3
"""End-to-end tests of the serving engine's behaviour (issue 26): queueing at low load against its closed
form, per-iteration host time moving TPOT by exactly its amount, the overlap scheduler hiding it,
streaming costs only where tokens are streamed, CUDA-graph padding, the validation script covering every
inference case, and bad engine options. Usage: run_serve_engine_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

from cli_support import FMSIM, SOURCE, TOPO, expect_bad_input, run_json, run_tests, test, write

P5 = os.path.join(TOPO, "p5-2node.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-engine-tests-")


def scenario(name, serving, workload, model="llama3.1-8b"):
    doc = {"name": name, "cluster": {"base": P5, "nodes": 1}, "model": model, "serving": serving, "workload": workload}
    return write(TMP, name + ".json", json.dumps(doc))


def serve(path, *extra):
    return run_json("serve", path, *extra)


FP8 = {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 1}


@test
def low_load_ttft_is_one_iteration_plus_the_mean_residual():
    # One-token outputs: every request is one prefill iteration, weight-bound (32-token prompts), so an
    # iteration lasts S whether it carries one prompt or two. Poisson arrivals see time averages: a
    # request that arrives while the replica is busy (probability U, its busy fraction) waits for the
    # rest of the running iteration, S / 2 on average. Closed form: mean TTFT = S (1 + U / 2).
    work = {"input_tokens": 32, "output_tokens": 1}
    single = serve(scenario("single", FP8, {"arrival": "offline", "requests": 1, **work}))
    s = single["ttft_s"]["mean"]
    for rate in (10, 30):
        doc = serve(scenario(f"low-{rate}", FP8, {"arrival": "poisson", "rate": f"{rate}/s", "requests": 20000, **work}))
        u = doc["replicas"][0]["busy_fraction"]
        assert 0.02 < u < 0.15, u
        expected = s * (1 + u / 2)
        assert abs(doc["ttft_s"]["mean"] / expected - 1) < 0.01, (rate, doc["ttft_s"]["mean"], expected, u)
        # Without the waiting term the mean would be S: the test can tell them apart.
        assert doc["ttft_s"]["mean"] > s * (1 + u / 4), (doc["ttft_s"]["mean"], s, u)


@test
def host_time_per_sequence_moves_tpot_by_its_amount_unless_overlapped():
    work = {"arrival": "offline", "requests": 1, "input_tokens": 100, "output_tokens": 200}
    base = dict(FP8, iteration_overhead="0s", cuda_graph_batch_sizes=[])
    tpot = lambda **extra: serve(scenario("h-" + "-".join(f"{k}{v}" for k, v in extra.items()), dict(base, **extra), work))["tpot_s"]["mean"]
    gpu = tpot()
    # One sequence per iteration: the serial host time adds exactly itself to every decode step.
    assert abs(tpot(host_time_per_sequence="1ms", overlap_scheduler=False) - gpu - 1e-3) < 1e-6
    # Overlapped and shorter than the GPU step: hidden.
    assert abs(tpot(host_time_per_sequence="100us", overlap_scheduler=True) - gpu) < 1e-9
    # Overlapped and longer than the GPU step: it paces the engine.
    assert abs(tpot(host_time_per_sequence="50ms", overlap_scheduler=True) - 50e-3) < 1e-9


@test
def streaming_costs_a_response_per_token():
    work = {"requests": 1, "input_tokens": 100, "output_tokens": 200}
    base = dict(FP8, iteration_overhead="0s", cuda_graph_batch_sizes=[], response_time_per_token="2ms", overlap_scheduler=False)
    streamed = serve(scenario("stream-on", base, {"arrival": "poisson", "rate": "1/s", **work}))
    batch = serve(scenario("stream-off", base, {"arrival": "offline", **work}))
    forced = serve(scenario("stream-forced", dict(base, stream_tokens=True), {"arrival": "offline", **work}))
    # Online clients stream: every decode step pays a 2 ms response; off-line only the last one does.
    assert abs(streamed["tpot_s"]["mean"] - batch["tpot_s"]["mean"] - 2e-3 * 198 / 199) < 1e-6, (streamed["tpot_s"], batch["tpot_s"])
    assert abs(forced["tpot_s"]["mean"] - streamed["tpot_s"]["mean"]) < 1e-9


@test
def cuda_graph_padding_slows_a_compute_bound_decode_batch():
    # 300 sequences of Llama-3.1-8B decoding together: padded to 512 the GEMMs do 70 % more rows.
    work = {"arrival": "offline", "requests": 300, "input_tokens": 64, "output_tokens": 64}
    base = dict(FP8, max_num_seqs=512)
    padded = serve(scenario("pad-on", dict(base, cuda_graph_padding=True, cuda_graph_batch_sizes=[1, 2, 4, 8, 512]), work))
    exact = serve(scenario("pad-off", dict(base, cuda_graph_padding=False), work))
    assert padded["tpot_s"]["p50"] > exact["tpot_s"]["p50"] * 1.05, (padded["tpot_s"], exact["tpot_s"])
    assert padded["output_tokens_per_s"] < exact["output_tokens_per_s"]


@test
def validation_script_lists_every_inference_case():
    measurements = os.path.join(SOURCE, "..", "shared", "calibration", "measurements.json")
    if not os.path.exists(measurements):
        print("  (no ../shared/calibration beside the source tree: nothing to check)")
        return
    out = os.path.join(TMP, "validation.json")
    proc = subprocess.run([sys.executable, os.path.join(SOURCE, "benchmarks", "calibration", "validate_serving.py"),
                           "--fmsim", FMSIM, "--measurements", measurements, "--json", out], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        doc = json.load(f)
    with open(measurements) as f:
        cases = {c["id"] for c in json.load(f) if c.get("category") == "inference"}
    seen = ({r["case"] for r in doc["offline"]} | {r["case"] for r in doc["server"]} | {r["case"] for r in doc["iteration"]} |
            {r["case"] for r in doc["not_run"]})
    assert cases <= seen, sorted(cases - seen)
    for r in doc["not_run"]:
        assert r["reason"], r
    for g in doc["groups"]:
        if g["n"]:
            assert {"mae", "signed", "worst"} <= set(g), g


@test
def bad_engine_options_exit_2():
    out = os.path.join(TMP, "never.json")
    work = {"arrival": "offline", "requests": 1, "input_tokens": 10, "output_tokens": 10}
    for key, value, fragments in (("cuda_graph_batch_sizes", [4, -1], ["/serving/cuda_graph_batch_sizes", "-1"]),
                                  ("kv_cache_free_gpu_memory_fraction", 0, ["/serving/kv_cache_free_gpu_memory_fraction", "(0, 1]"]),
                                  ("engine", "sglang", ["/serving/engine", "sglang"]),
                                  ("response_time_per_token", "fast", ["/serving/response_time_per_token"])):
        path = scenario(f"bad-{key}", dict(FP8, **{key: value}), work)
        expect_bad_input(["serve", path, "--json", out], fragments, out)
    # MoE backends: an unknown name, and TRTLLM-Gen's Blackwell kernels on an H100.
    path = scenario("bad-moe-backend", dict(FP8, moe_backend="marlin"), work, model="qwen3-30b-a3b")
    expect_bad_input(["serve", path, "--json", out], ["/serving/moe_backend", "marlin", "cutlass"], out)
    path = scenario("bad-trtllm-gen", dict(FP8, engine="tensorrt_llm", moe_backend="trtllm_gen"), work, model="qwen3-30b-a3b")
    expect_bad_input(["serve", path, "--json", out], ["moe_backend", "trtllm_gen", "Blackwell", "H100"], out)


@test
def moe_backend_defaults_follow_the_engine_and_slow_a_weight_bound_decode():
    # Qwen3-30B-A3B at batch 1 on one H100: 48 MoE blocks each pay the backend's fixed cost (80 us for
    # TensorRT-LLM's CUTLASS kernels, 31 us for vLLM's Triton one) on top of the ideal grouped GEMM, less
    # the launches fmsim prices apart (router GEMM and GEMMs 3 us each, three memory passes 2 us each).
    work = {"arrival": "offline", "requests": 1, "input_tokens": 64, "output_tokens": 64}
    tpot = {}
    for engine, backend in (("tensorrt_llm", None), ("tensorrt_llm", "grouped_gemm"), ("vllm", None), ("vllm", "grouped_gemm")):
        serving = dict(FP8, engine=engine, cuda_graph_batch_sizes=[], iteration_overhead="0s")
        if backend:
            serving["moe_backend"] = backend
        doc = serve(scenario(f"moe-{engine}-{backend}", serving, work, model="qwen3-30b-a3b"))
        pool = doc["pools"][0]
        assert pool["moe_backend"] == (backend or {"tensorrt_llm": "cutlass", "vllm": "triton"}[engine]), pool["moe_backend"]
        tpot[(engine, backend)] = doc["tpot_s"]["mean"]
    # The summary names the kernels and their figures.
    text = subprocess.run([FMSIM, "serve", scenario("moe-tensorrt_llm-None", dict(FP8, engine="tensorrt_llm", cuda_graph_batch_sizes=[],
                                                                                  iteration_overhead="0s"), work, model="qwen3-30b-a3b")],
                          capture_output=True, text=True)
    assert text.returncode == 0 and "MoE kernels cutlass: 80 us fixed per MoE block, experts' weights at 0.80 of HBM" in text.stdout, text.stdout
    assert tpot[("tensorrt_llm", None)] - tpot[("tensorrt_llm", "grouped_gemm")] >= 48 * (80e-6 - 15e-6), tpot
    assert tpot[("vllm", None)] - tpot[("vllm", "grouped_gemm")] >= 48 * (31e-6 - 15e-6), tpot


if __name__ == "__main__":
    run_tests()
