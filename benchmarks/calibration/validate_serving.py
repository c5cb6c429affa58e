#!/usr/bin/env python3
"""Predicted vs measured serving for EVERY inference case of ../shared/calibration, grouped.

Each case becomes one or more `fmsim serve` scenarios on the system it was measured on; a case fmsim
cannot express is listed with the reason (never skipped silently). Groups:
- offline throughput (all requests queued at t = 0), per GPU and model class (dense, MoE): the
  TensorRT-LLM perf-overview tables (inf-trtllm-*), MLPerf v4.1 Llama-2-70B offline, Azure ND GB200 v6;
- server latency: MLPerf v4.1 Llama-2-70B server runs, Poisson arrivals at the published scheduled
  rate, TTFT and TPOT p50/p99 (and the completed throughput);
- cases not expressible (listed with the reason).
Per group: n, mean absolute error, signed mean error, worst row.

How the rows are configured (the engine as the benchmark ran it, not fitted):
- TensorRT-LLM perf-overview rows (trtllm-bench throughput, PyTorch backend): one replica of the row's TP,
  the checkpoint's precision (FP8 / NVFP4) with an FP8 KV cache, kv_cache_free_gpu_mem_fraction 0.95 (the
  page's setting), guaranteed_no_evict admission (TensorRT-LLM's default capacity scheduler), and
  max_batch_size / max_num_tokens as trtllm-bench derives them from the row's ISL/OSL
  (tensorrt_llm/bench/build/tuning.py: calc_engine_setting + finetune_setting, reproduced below). MoE
  rows with TP > 1 run tensor-parallel attention with the experts spread over the TP ranks (trtllm-bench
  --ep), as NVIDIA's own perf-test configuration for Llama-4 Scout and Maverick sets them
  (tests/integration/defs/perf/pytorch_model_config.py: the page's CUDA-graph list, no attention DP). The
  layout the published rows ran is not certain: the page's MoE llm_options.yml nests `enable_attention_dp:
  true` inside `cuda_graph_config`, a strict pydantic model (StrictBaseModel, extra="forbid") that refuses
  the key, so that file as printed would not load at all, and its review (pull request #7848) calls the
  indentation a mistake, i.e. attention DP was meant. docs/validation.md gives both layouts' errors.
- MLPerf v4.1 Llama-2-70B (NVIDIA closed submission, configs/llama2-70b/{Offline,Server}/__init__.py of
  mlcommons/inference_results_v4.1): H100 8 x 80 GB as 4 x TP2 (gpu_batch_size 896 offline, 1024 server),
  H200 as 8 x TP1 (batch 896), kvcache_free_gpu_mem_frac 0.90, FP8 weights and KV. OpenOrca lengths are
  approximated as lognormal (sigma 0.8, capped at 1,024): output mean 290 tokens (the offline row's
  tokens/s over samples/s), input mean 300 tokens (an estimate: the dataset's prompt statistics are not
  in the calibration set; a larger mean would need more FLOPs than the H100s' measured GEMM peak allows).
- SGLang's large-scale expert parallelism for DeepSeek-V3 on H100 over InfiniBand (LMSYS blog 2025-05-05,
  inf-sglang-deepseek-v3-h100-*): one replica spanning the nodes measured, FP8, attention data-parallel
  on every rank, experts over all ranks with 32 redundant experts (the blog's EPLB example: 288 experts,
  which EP 72 needs), two-batch overlap, DeepEP (domain-aware dispatch, FP8 dispatch and BF16 combine).
  Each published row is one iteration at its batch (`fmsim serve --iteration`): prefill 16,384 prompt
  tokens per GPU (the blog's profile batch) of 1K, 2K or 4K prompts; decode 256 sequences per GPU at
  2,000 tokens of KV. The measured prefill rows ran with SGLang's default expert placement, which the
  blog puts 15-18 % below a perfectly balanced one (50,302 vs 59,337 tokens/s per node at 4K); fmsim's
  routing is balanced. The simulated-MTP and DeepSeek-profile rows are other systems or emulations and
  are not run.
- Azure ND GB200 v6 (TensorRT-LLM, FP8, 1,000 requests): Llama-3.1-8B TP1 and Llama-3-70B TP4 on GB200,
  same engine settings as the perf-overview rows; the table does not say whether its "throughput" is
  output or total tokens: compared as output tokens/s, in a group of its own (not in the targets).
Usage: benchmarks/calibration/validate_serving.py [--fmsim build/fmsim] [--measurements PATH]
       [--markdown FILE] [--json FILE]"""
import json
import math
import os
import re
import subprocess
import sys
import tempfile

from calibration_support import arguments

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOPOLOGIES = os.path.join(ROOT, "topologies")
MODELS = os.path.join(ROOT, "configs", "models")

# GPU named in a case's setup -> (topology file, GPU memory in GiB as the engine sees it, generation).
GPUS = {
    "GB200": ("p6e-gb200-4x72.json", 186e9 / 2**30, "Blackwell"),
    "B200": ("p6-b200-64node.json", 180e9 / 2**30, "Blackwell"),
    "H200": ("p5en-128node.json", 141e9 / 2**30, "Hopper"),
    "H100": ("dgx-h100-8node-ib.json", 80e9 / 2**30, "Hopper"),
}

# Calibration model names -> fmsim presets (configs/models) or a config written here.
PRESETS = {"llama-3.1-8b": "llama3.1-8b", "llama-3.3-70b": "llama3.3-70b", "llama-3.1-405b": "llama3.1-405b",
           "qwen3-30b-a3b": "qwen3-30b-a3b", "llama2-70b": "llama2-70b", "llama3-70b": "llama3-70b"}
# Llama-4-Scout-17B-16E: the text_config of meta-llama/Llama-4-Scout-17B-16E-Instruct's config.json,
# flattened (every layer MoE: interleave_moe_layer_step 1; 16 routed experts, top-1, plus one shared
# expert of intermediate_size, as Llama4TextMoe in transformers builds it).
SCOUT = {"_name_or_path": "meta-llama/Llama-4-Scout-17B-16E-Instruct", "model_type": "llama4_text",
         "hidden_size": 5120, "intermediate_size": 8192, "moe_intermediate_size": 8192,
         "shared_expert_intermediate_size": 8192, "num_hidden_layers": 48, "num_attention_heads": 40,
         "num_key_value_heads": 8, "head_dim": 128, "num_local_experts": 16, "num_experts_per_tok": 1,
         "vocab_size": 202048, "hidden_act": "silu", "tie_word_embeddings": False}


class NotExpressible(Exception):
    """A case this script cannot turn into a scenario (unknown GPU or model): listed, not skipped."""


def gpu_of(text):
    for name in GPUS:  # GB200 before B200
        if name in text:
            return name
    raise NotExpressible(f"no GPU fmsim's catalog maps to {text!r}")


def model_config(name, temp_dir):
    if name == "llama-4-scout":
        path = os.path.join(temp_dir, "llama-4-scout.json")
        with open(path, "w") as f:
            json.dump(SCOUT, f)
        return path, SCOUT
    if name not in PRESETS:
        raise NotExpressible(f"no fmsim model preset for {name!r} (add one to PRESETS)")
    preset = PRESETS[name]
    with open(os.path.join(MODELS, preset + ".json")) as f:
        return preset, json.load(f)


def param_count(hf):
    """Parameters as trtllm-bench's ModelConfig counts them (embedding, LM head, layers)."""
    h, layers, vocab = hf["hidden_size"], hf["num_hidden_layers"], hf["vocab_size"]
    heads, kv = hf["num_attention_heads"], hf.get("num_key_value_heads", hf["num_attention_heads"])
    d = hf.get("head_dim", h // heads)
    attention = h * d * (2 * heads + 2 * kv)
    experts = hf.get("num_local_experts", hf.get("num_experts", 0))
    if experts:
        mlp = 3 * h * (experts * hf["moe_intermediate_size"] + hf.get("shared_expert_intermediate_size", 0)) + h * experts
    else:
        mlp = 3 * h * hf["intermediate_size"]
    return layers * (attention + mlp) + vocab * h * (1 if hf.get("tie_word_embeddings") else 2)


def trtllm_bench_limits(hf, gpu_gib, tp, weight_bytes, isl, osl, fraction=0.95):
    """max_batch_size, max_num_tokens as trtllm-bench picks them (tuning.py, calc_engine_setting and
    finetune_setting with optimistic tuning, PP 1)."""
    heads, kv = hf["num_attention_heads"], hf.get("num_key_value_heads", hf["num_attention_heads"])
    d = hf.get("head_dim", hf["hidden_size"] // heads)
    byte_per_token = 2 * hf["num_hidden_layers"] * max(tp, kv) * d * 1.0 / 2**30  # FP8 KV
    available = gpu_gib * tp - param_count(hf) * weight_bytes / 2**30
    requests = available * fraction / (byte_per_token * (isl + osl))
    raw_bs = min(requests, 4096)
    raw_token = min(raw_bs * (1 + isl / osl), 32768)
    if raw_bs < 256:
        bs = max(64, 32 * math.ceil(raw_bs / 32))
    elif raw_bs < 1024:
        bs = 128 * math.ceil(raw_bs / 128)
    else:
        bs = 256 * math.ceil(raw_bs / 256)
    if raw_token < 4096:
        tokens = max(2048, 256 * math.ceil(raw_token / 256))
    elif raw_token < 8192:
        tokens = 512 * math.ceil(raw_token / 512)
    else:
        tokens = 1024 * math.ceil(raw_token / 1024)
    return bs, max(tokens, bs)


# perf-overview.md's llm_options.yml: cuda_graph_config enable_padding true with these batch sizes.
PERF_OVERVIEW_GRAPHS = [1, 2, 4, 8, 16, 32, 64, 128, 256, 384, 512, 1024, 2048, 4096, 8192]


def cluster_for(gpu):
    base = os.path.join(TOPOLOGIES, GPUS[gpu][0])
    return {"base": base, "ultraservers": 1} if gpu == "GB200" else {"base": base, "nodes": 1}


def trtllm_engine(hf, gpu, tp, precision, isl, osl):
    weight_bytes = 0.5 if precision == "fp4" else 1.0
    bs, tokens = trtllm_bench_limits(hf, GPUS[gpu][1], tp, weight_bytes, isl, osl)
    moe = bool(hf.get("num_local_experts", hf.get("num_experts", 0)))
    serving = {"engine": "tensorrt_llm", "precision": precision, "kv_cache_dtype": "fp8", "replicas": 1,
               "tensor_parallel_size": tp, "max_num_seqs": bs, "max_num_batched_tokens": tokens,
               "kv_cache_free_gpu_memory_fraction": 0.95,
               "cuda_graph_padding": True, "cuda_graph_batch_sizes": PERF_OVERVIEW_GRAPHS}
    if moe and tp > 1:
        serving["enable_expert_parallel"] = True
    return serving


def offline(name, gpu, model, serving, requests, isl, osl):
    return {"name": name, "cluster": cluster_for(gpu), "model": model, "gpu": gpu,
            "serving": serving,
            "workload": {"arrival": "offline", "requests": requests, "input_tokens": isl, "output_tokens": osl}}


def trtllm_rows(case, temp_dir):
    setup = case["setup"]
    gpu = gpu_of(setup["gpu"])
    model, hf = model_config(setup["model"], temp_dir)
    precision = setup["precision"].lower()
    tp = setup["tp"]
    for row in case["measured"]["rows"]:
        isl, osl = row["input_len"], row["output_len"]
        serving = trtllm_engine(hf, gpu, tp, precision, isl, osl)
        scenario = offline(f"{case['id']}-{isl}-{osl}", gpu, model, serving, row["num_requests"], isl, osl)
        yield row["isl_osl"], row["total_output_tokens_per_s"], scenario, hf


def azure_rows(case, temp_dir):
    for key, model_name, tp in (("llama3_1_8b_tp1", "llama-3.1-8b", 1), ("llama3_70b_tp4", "llama3-70b", 4)):
        model, hf = model_config(model_name, temp_dir)
        for isl, osl, measured in case["measured"][key]:
            serving = trtllm_engine(hf, "GB200", tp, "fp8", isl, osl)
            scenario = offline(f"azure-gb200-{model}-{isl}-{osl}", "GB200", model, serving, 1000, isl, osl)
            yield f"{model} TP{tp} {isl}/{osl}", measured, scenario, hf


def capped_lognormal_mean(target, sigma, cap):
    """The lognormal mean whose draws, capped at `cap` (as fmsim caps them), average `target`:
    E[min(X, c)] = m Phi((ln c - mu - s^2) / s) + c (1 - Phi((ln c - mu) / s)), mu = ln m - s^2 / 2."""
    phi = lambda x: 0.5 * (1 + math.erf(x / math.sqrt(2)))
    def capped(m):
        mu = math.log(m) - sigma * sigma / 2
        return m * phi((math.log(cap) - mu - sigma * sigma) / sigma) + cap * (1 - phi((math.log(cap) - mu) / sigma))
    lo, hi = target, 4 * target
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if capped(mid) < target else (lo, mid)
    return round(lo)


def openorca_lengths(output_mean):
    # Means after the 1,024-token cap: 300 in, the measured output mean out.
    return ({"distribution": "lognormal", "mean": capped_lognormal_mean(300, 0.8, 1024), "sigma": 0.8, "max": 1024},
            {"distribution": "lognormal", "mean": capped_lognormal_mean(output_mean, 0.8, 1024), "sigma": 0.8, "max": 1024})

MLPERF_OUTPUT_MEAN = round(24524.9 / 84.4792)  # inf-mlperf41-llama2-70b-h100x8-offline-99.9: tokens/s over samples/s

# NVIDIA's MLPerf v4.1 Llama-2-70B layouts (configs/llama2-70b/{Offline,Server}/__init__.py).
MLPERF_LAYOUT = {("H100", "offline"): (4, 2, 896), ("H100", "server"): (4, 2, 1024),
                 ("H200", "offline"): (8, 1, 896), ("H200", "server"): (8, 1, 896)}


# Host time per sequence of the C++ executor (no Python loop over the batch): an estimate, a seventh of
# the PyTorch backend's (kTrtllmHostPerSequence_s); no calibration row isolates it.
MLPERF_HOST_PER_SEQUENCE = "5us"


def mlperf_serving(gpu, scenario_kind):
    replicas, tp, batch = MLPERF_LAYOUT[(gpu, scenario_kind)]
    # v4.1 ran TensorRT-LLM's engine (TensorRT) backend through its C++ executor: no overlap scheduler
    # (a PyTorch-backend feature), CUDA graphs captured per batch size without padding. Admission as
    # MAX_UTILIZATION: the measured requests in flight (836 per H100 replica, 450 per H200 one: Little's
    # law on the server rows) are more than GUARANTEED_NO_EVICT could admit while reserving MLPerf's
    # 1,024-token output limit for each (the KV cache holds ~1,300-token reservations for about 280 of them).
    return {"engine": "tensorrt_llm", "precision": "fp8", "kv_cache_dtype": "fp8", "replicas": replicas,
            "tensor_parallel_size": tp, "max_num_seqs": batch, "max_num_batched_tokens": 8192,
            "kv_cache_free_gpu_memory_fraction": 0.90, "overlap_scheduler": False, "cuda_graph_padding": False,
            "host_time_per_sequence": MLPERF_HOST_PER_SEQUENCE, "scheduler_policy": "max_utilization"}


def mlperf_offline_rows(case, temp_dir):
    gpu = gpu_of(case["setup"]["system"])
    isl, osl = openorca_lengths(MLPERF_OUTPUT_MEAN)
    scenario = offline("mlperf-llama2-70b-offline", gpu, "llama2-70b", mlperf_serving(gpu, "offline"), 24576, isl, osl)
    _, hf = model_config("llama2-70b", temp_dir)
    yield f"offline, 8 x {gpu}", case["measured"]["tokens_per_s"], scenario, hf


def mlperf_server_scenario(case):
    gpu = gpu_of(case["setup"]["system"])
    measured = case["measured"]
    rate = measured.get("scheduled_samples_per_s") or float(re.search(r"target_qps (\d+(\.\d+)?)", case["setup"]["scenario"]).group(1))
    isl, osl = openorca_lengths(MLPERF_OUTPUT_MEAN)
    return gpu, rate, {"name": f"mlperf-llama2-70b-server-{gpu}", "cluster": cluster_for(gpu),
                       "model": "llama2-70b", "serving": mlperf_serving(gpu, "server"),
                       "workload": {"arrival": "poisson", "rate": f"{rate}/s", "requests": 24576,
                                    "input_tokens": isl, "output_tokens": osl, "seed": 1}}


# Cases fmsim cannot express, with the reason.
NOT_EXPRESSIBLE = {
    "inf-dynamo-efa-kv-transfer-ttft": "prose approximations (TTFT ~1 s on EFA, ~98 s on a TCP fallback, UCX on EFA "
                                       "~1-3 GB/s): no request count, rate or layout to replay, and the TCP/UCX "
                                       "fallback transports are not modelled",
}


def sglang_wide_ep_rows(case, temp_dir):
    """("iteration", label, measured tokens/s per node, scenario, --iteration batch) per published row."""
    m = case["measured"]
    prefill = "prefill" in case["id"]
    nodes = case["setup"]["prefill_nodes"] if prefill else 9
    gpus = 8 * nodes
    # SGLang's DeepEP + DeepGEMM grouped GEMMs (the blog's setup): the grouped GEMM at dense efficiency.
    serving = {"precision": "fp8", "tensor_parallel_size": gpus, "enable_expert_parallel": True, "data_parallel_attention": True,
               "moe_backend": "grouped_gemm",
               "num_redundant_experts": 32, "two_batch_overlap": True, "cuda_graph_batch_sizes": [],
               "max_num_seqs": 256 * gpus, "max_num_batched_tokens": (16384 if prefill else 256) * gpus}
    scenario = {"name": case["id"], "gpu": "H100", "cluster": {"base": os.path.join(TOPOLOGIES, GPUS["H100"][0]), "nodes": nodes},
                "model": "deepseek-v3", "serving": serving,
                "workload": {"arrival": "offline", "requests": 1, "input_tokens": 8, "output_tokens": 8}}
    if prefill:
        for label, prompt in (("1K", 1024), ("2K", 2048), ("4K", 4096)):
            yield ("iteration", f"prefill {label} prompts, 16384 tokens/GPU", m["prefill_tokens_per_s_per_node"][label], scenario,
                   f"prefill:{16384 * gpus}@{prompt}")
    else:
        row = [r for r in m["rows"] if r["config"] == "SGLang default"][0]
        yield ("iteration", f"decode {row['batch_per_device']} seqs/GPU at {row['kv_len']} KV", row["tokens_per_s_per_node"], scenario,
               f"decode:{row['batch_per_device'] * gpus}@{row['kv_len']}")


def run_iteration(fmsim, scenario, probe):
    scenario = {k: v for k, v in scenario.items() if k != "gpu"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        proc = subprocess.run([fmsim, "serve", path, "--iteration", probe, "--json", "-"], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return json.loads(proc.stdout)["iterations"][0], None

OFFLINE_BUILDERS = {"inf-mlperf41-llama2-70b-h100x8-offline-99.9": mlperf_offline_rows,
                    "inf-sglang-deepseek-v3-h100-prefill-4node": sglang_wide_ep_rows,
                    "inf-sglang-deepseek-v3-h100-decode-9node": sglang_wide_ep_rows,
                    "inf-azure-nd-gb200-v6-trtllm": azure_rows}


def case_rows(case, temp_dir):
    """("server", gpu, rate, scenario) for a server case, else the offline rows; [None] without a builder."""
    cid = case["id"]
    if "server" in case["setup"].get("scenario", "").lower() and "ttft_ms" in case["measured"]:
        yield ("server",) + mlperf_server_scenario(case)
    elif cid.startswith("inf-trtllm-"):
        yield from trtllm_rows(case, temp_dir)
    elif cid in OFFLINE_BUILDERS:
        yield from OFFLINE_BUILDERS[cid](case, temp_dir)
    else:
        yield None


def run_fmsim(fmsim, scenario):
    scenario = {k: v for k, v in scenario.items() if k != "gpu"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(scenario, f)
        path = f.name
    try:
        proc = subprocess.run([fmsim, "serve", path, "--json", "-"], capture_output=True, text=True)
    finally:
        os.unlink(path)
    if proc.returncode != 0:
        return None, proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else f"exit {proc.returncode}"
    return json.loads(proc.stdout), None


def is_moe(hf):
    return bool(hf.get("num_local_experts", hf.get("num_experts", 0)))


def model_class(model):
    """'MoE' or 'dense' for a scenario's model (a preset name of configs/models or an inline config)."""
    if isinstance(model, str):
        with open(os.path.join(MODELS, model + ".json")) as f:
            model = json.load(f)
    return "MoE" if is_moe(model) else "dense"


def stats(errors):
    if not errors:
        return {"n": 0}
    worst = max(errors, key=lambda e: abs(e[0]))
    return {"n": len(errors), "mae": sum(abs(e) for e, _ in errors) / len(errors),
            "signed": sum(e for e, _ in errors) / len(errors), "worst": worst[0], "worst_row": worst[1]}


def pct(x):
    return f"{100 * x:+.1f} %"


def main():
    args, measurements = arguments(__doc__)
    offline_rows, server_rows, iteration_rows, not_run = [], [], [], []
    with tempfile.TemporaryDirectory() as temp_dir:
        for case in measurements:
            if case.get("category") != "inference":
                continue
            cid = case["id"]
            if cid in NOT_EXPRESSIBLE:
                not_run.append({"case": cid, "reason": NOT_EXPRESSIBLE[cid]})
                continue
            try:
                rows = list(case_rows(case, temp_dir))
            except NotExpressible as reason:
                not_run.append({"case": cid, "reason": str(reason)})
                continue
            if rows == [None]:
                not_run.append({"case": cid, "reason": "no scenario builder for this case (add one to validate_serving.py)"})
                continue
            if rows and rows[0][0] == "server":
                _, gpu, rate, scenario = rows[0]
                doc, error = run_fmsim(args.fmsim, scenario)
                if doc is None:
                    not_run.append({"case": cid, "reason": f"fmsim refused it: {error}"})
                    continue
                m = case["measured"]
                cls = model_class(scenario["model"])
                for metric, key in (("TTFT", "ttft"), ("TPOT", "tpot")):
                    for p in ("p50", "p99"):
                        measured_s = m[f"{key}_ms"][p] / 1000
                        predicted_s = doc[f"{key}_s"][p]
                        server_rows.append({"case": cid, "gpu": gpu, "class": cls, "metric": f"{metric} {p}", "rate_per_s": rate,
                                            "measured_s": measured_s, "fmsim_s": predicted_s,
                                            "error": predicted_s / measured_s - 1})
                # Requests in flight per replica: Little's law on the measured completions and mean latency;
                # fmsim's the same way (rate x mean latency), which leaves out its warm-up and drain.
                replicas = scenario["serving"]["replicas"]
                if "completed_samples_per_s" in m and "mean" in m.get("latency_s", {}):
                    in_flight = m["completed_samples_per_s"] * m["latency_s"]["mean"] / replicas
                    fmsim_in_flight = rate * doc["e2e_latency_s"]["mean"] / replicas
                    server_rows.append({"case": cid, "gpu": gpu, "metric": "in flight per replica", "rate_per_s": rate,
                                        "measured_s": in_flight, "fmsim_s": fmsim_in_flight, "error": fmsim_in_flight / in_flight - 1})
                if "completed_tokens_per_s" in m:
                    server_rows.append({"case": cid, "gpu": gpu, "metric": "output tokens/s (fmsim: drain included)", "rate_per_s": rate,
                                        "measured_s": m["completed_tokens_per_s"], "fmsim_s": doc["output_tokens_per_s"],
                                        "error": doc["output_tokens_per_s"] / m["completed_tokens_per_s"] - 1})
                continue
            if rows and rows[0][0] == "iteration":
                for _, label, measured, scenario, probe in rows:
                    it, error = run_iteration(args.fmsim, scenario, probe)
                    if it is None:
                        not_run.append({"case": cid, "rows": [label], "error": error, "reason": f"fmsim refused it: {error}"})
                        continue
                    predicted = it["tokens_per_s_per_gpu"] * 8
                    parts = it["parts_s"]
                    iteration_rows.append({"case": cid, "row": label, "gpus": scenario["serving"]["tensor_parallel_size"],
                                           "measured_tokens_per_s_per_node": measured, "fmsim_tokens_per_s_per_node": predicted,
                                           "iteration_s": it["iteration_s"], "communication_s": parts["communication"],
                                           "error": predicted / measured - 1})
                continue
            for label, measured, scenario, hf in rows:
                gpu = scenario["gpu"]
                doc, error = run_fmsim(args.fmsim, scenario)
                row = {"case": cid, "row": label, "model": scenario["model"] if isinstance(scenario["model"], str) else "llama-4-scout",
                       "gpu": gpu, "class": "MoE" if is_moe(hf) else "dense",
                       "layout": f"{scenario['serving']['replicas']} x TP{scenario['serving']['tensor_parallel_size']}",
                       "group": "azure" if cid == "inf-azure-nd-gb200-v6-trtllm" else "offline",
                       "measured_output_tokens_per_s": measured}
                if doc is None:
                    refused = [r for r in not_run if r["case"] == cid and r.get("error") == error]
                    if refused:
                        refused[0]["rows"].append(label)
                    else:
                        not_run.append({"case": cid, "rows": [label], "error": error, "reason": f"fmsim refused it: {error}"})
                    continue
                row["model"] = os.path.basename(str(row["model"])).removesuffix(".json")
                predicted = doc["output_tokens_per_s"]
                row.update({"fmsim_output_tokens_per_s": predicted, "error": predicted / measured - 1,
                            "preemptions": doc["preemptions"], "kv_peak": doc["kv_cache_utilization"]["peak"]})
                offline_rows.append(row)

    # Groups.
    groups = []
    def add_group(title, rows, key="error", label=lambda r: f"{r['case']} {r['row']}"):
        s = stats([(r[key], label(r)) for r in rows])
        s["group"] = title
        groups.append(s)
    target = [r for r in offline_rows if r["group"] == "offline"]
    for gpu in GPUS:
        for cls in ("dense", "MoE"):
            rows = [r for r in target if r["gpu"] == gpu and r["class"] == cls]
            if rows:
                add_group(f"offline {gpu} {cls}", rows)
    for generation in ("Hopper", "Blackwell"):
        for cls in ("dense", "MoE"):
            rows = [r for r in target if GPUS[r["gpu"]][2] == generation and r["class"] == cls]
            if rows:
                add_group(f"offline {generation} {cls}", rows)
    add_group("offline, all (target MAE <= 8 %)", target)
    add_group("Azure ND GB200 v6 (metric ambiguous, not in the target)", [r for r in offline_rows if r["group"] == "azure"])
    latency = [r for r in server_rows if r["metric"].startswith(("TTFT", "TPOT"))]
    for metric in ("TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99"):
        add_group(f"server {metric} (target within 15 %)", [r for r in latency if r["metric"] == metric],
                  label=lambda r: f"{r['case']} {r['metric']}")
    add_group("server latency, all", latency, label=lambda r: f"{r['case']} {r['metric']}")
    add_group("wide EP, DeepSeek-V3 on H100 (one iteration; not in the targets)", iteration_rows)

    lines = ["### Groups", "", "| group | n | mean abs. error | signed mean | worst (row) |", "|---|---|---|---|---|"]
    for g in groups:
        if g["n"] == 0:
            lines.append(f"| {g['group']} | 0 | | | |")
            continue
        lines.append(f"| {g['group']} | {g['n']} | {100 * g['mae']:.1f} % | {pct(g['signed'])} | {pct(g['worst'])} ({g['worst_row']}) |")
    lines += ["", "### Server (MLPerf v4.1 Llama-2-70B, Poisson at the scheduled rate)", "",
              "| case | GPUs | rate | metric | measured | fmsim | error |", "|---|---|---|---|---|---|---|"]
    for r in server_rows:
        unit = (lambda v: f"{1000 * v:.0f} ms") if r["metric"].startswith(("TTFT", "TPOT")) else (lambda v: f"{v:.0f}")
        lines.append(f"| {r['case']} | 8 x {r['gpu']} | {r['rate_per_s']:g}/s | {r['metric']} | {unit(r['measured_s'])} | "
                     f"{unit(r['fmsim_s'])} | {pct(r['error'])} |")
    lines += ["", "### Wide expert parallelism (SGLang, DeepSeek-V3, H100 over InfiniBand; one iteration at the published batch)", "",
              "| case | row | GPUs | measured tok/s per node | fmsim tok/s per node | fmsim iteration | exposed all-to-all | error |",
              "|---|---|---|---|---|---|---|---|"]
    for r in iteration_rows:
        lines.append(f"| {r['case']} | {r['row']} | {r['gpus']} | {r['measured_tokens_per_s_per_node']:.0f} | "
                     f"{r['fmsim_tokens_per_s_per_node']:.0f} | {1000 * r['iteration_s']:.1f} ms | {1000 * r['communication_s']:.1f} ms | "
                     f"{pct(r['error'])} |")
    lines += ["", "### Offline throughput rows", "",
              "| case | row | model | GPU | class | layout | measured out tok/s | fmsim out tok/s | error |",
              "|---|---|---|---|---|---|---|---|---|"]
    for r in offline_rows:
        lines.append(f"| {r['case']} | {r['row']} | {r['model']} | {r['gpu']} | {r['class']} | {r['layout']} | "
                     f"{r['measured_output_tokens_per_s']:.0f} | {r['fmsim_output_tokens_per_s']:.0f} | {pct(r['error'])} |")
    lines += ["", "### Not run", "", "| case | reason |", "|---|---|"]
    for r in not_run:
        rows = f" (rows {', '.join(r['rows'])})" if "rows" in r else ""
        lines.append(f"| {r['case']}{rows} | {r['reason']} |")
    text = "\n".join(lines)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"groups": groups, "offline": offline_rows, "server": server_rows, "iteration": iteration_rows, "not_run": not_run}, f,
                      indent=1)


if __name__ == "__main__":
    main()
