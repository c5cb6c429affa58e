#!/usr/bin/env python3
"""End-to-end tests of KV caching beyond one request in `fmsim serve` (issue 26 item 5): the prefix tree
over a shared-prefix workload (N identical prefixes in a row: (N-1)/N of their tokens found; more prefixes
than HBM holds: LRU under the KV budget, about capacity / groups for uniform popularity), the host tier of
KV offloading (its size in blocks, the host link of the instance: PCIe or NVLink-C2C, reload vs recompute,
every repeat found when it holds them all), traces with prefix ids, and bad input.
Usage: run_serve_prefix_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import SOURCE, TOPO, expect_bad_input, run, run_json, run_tests, test, write

P5 = os.path.join(TOPO, "p5-2node.json")
GB200 = os.path.join(TOPO, "p6e-gb200-4x72.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-prefix-tests-")
SERVING = {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 1, "enable_prefix_caching": True}
# Requests one at a time (2/s against ~35 ms each): every lookup sees the tree its predecessors left.
WORK = {"arrival": "poisson", "rate": "2/s", "requests": 50, "input_tokens": 64, "output_tokens": 8}
KV_PER_TOKEN = 32 * 2 * 8 * 128 * 1  # Llama-3.1-8B, FP8 KV: 64 KiB per token
BLOCK = 16


def scenario(name, serving=None, workload=None, model="llama3.1-8b", cluster=P5, **cluster_keys):
    doc = {"name": name, "cluster": {"base": cluster, **(cluster_keys or {"nodes": 1})}, "model": model,
           "serving": dict(SERVING, **(serving or {})),
           "workload": {k: v for k, v in dict(WORK, **(workload or {})).items() if v is not None}}
    return write(TMP, name + ".json", json.dumps(doc))


def serve(*args):
    return run_json("serve", *args)


@test
def identical_prefixes_hit_all_but_the_first():
    for n in (10, 50):
        doc = serve(scenario(f"same-{n}", workload={"requests": n, "shared_prefix": {"groups": 1, "tokens": 1024}}))
        p = doc["prefix_cache"]
        assert p["looked_up_tokens"] == n * 1024, p
        assert p["gpu_hit_tokens"] == (n - 1) * 1024 and p["host_hit_tokens"] == 0, p
        assert abs(p["hit_rate"] - (n - 1) / n) < 1e-12, p
        # Of every prompt (1,024 shared + 64 own tokens), the hits are the cached fraction.
        assert abs(doc["prefix_cached_fraction"] - (n - 1) * 1024 / (n * 1088)) < 1e-12, doc["prefix_cached_fraction"]
    # A prefix that is not a whole number of blocks: only whole blocks are shared.
    doc = serve(scenario("partial", workload={"requests": 10, "shared_prefix": {"groups": 1, "tokens": 1000}}))
    assert doc["prefix_cache"]["looked_up_tokens"] == 10 * 992 and doc["prefix_cache"]["gpu_hit_tokens"] == 9 * 992, doc["prefix_cache"]


@test
def hits_skip_prefill_compute():
    hit = serve(scenario("ttft-hit", workload={"shared_prefix": {"groups": 1, "tokens": 4096}}))
    off = serve(scenario("ttft-off", serving={"enable_prefix_caching": False}, workload={"shared_prefix": {"groups": 1, "tokens": 4096}}))
    assert off["prefix_cache"] is None and off["prefix_cached_fraction"] == 0
    assert hit["ttft_s"]["p50"] < 0.5 * off["ttft_s"]["p50"], (hit["ttft_s"], off["ttft_s"])


@test
def more_prefixes_than_hbm_holds_evict_lru():
    # 10 prefixes of 64 blocks; 266 blocks hold 4 of them beside the running request's 5 own blocks.
    # Uniform popularity under LRU: a lookup hits with probability capacity / groups = 0.4.
    work = {"requests": 2000, "shared_prefix": {"groups": 10, "tokens": 1024}}
    doc = serve(scenario("evict", {"num_gpu_blocks_override": 266}, work))
    p = doc["prefix_cache"]
    assert doc["pools"][0]["kv_blocks_per_replica"] == 266
    assert abs(p["hit_rate"] - 0.4) < 0.05 and p["host_hit_tokens"] == 0 and p["gpu_evictions"] > 0, p
    # Room for every prefix: only first touches miss.
    roomy = serve(scenario("roomy", {"num_gpu_blocks_override": 64 * 10 + 10}, work))["prefix_cache"]
    # (A request arriving while another runs can push out a block or two.)
    assert abs(roomy["hit_rate"] - (2000 - 10) / 2000) < 0.002 and roomy["gpu_evictions"] < 100, roomy
    # A host tier that holds them all: evicted prefixes come back from host memory.
    offload = serve(scenario("offload", {"num_gpu_blocks_override": 266, "kv_offloading_size": "2GiB"}, work))
    q = offload["prefix_cache"]
    assert abs(q["hit_rate"] - (2000 - 10) / 2000) < 1e-12 and q["host_hit_tokens"] > 0 and q["host_drops"] == 0, q
    assert abs(q["gpu_hit_tokens"] - p["gpu_hit_tokens"]) <= 0.02 * p["gpu_hit_tokens"], (q, p)
    # A host tier for 3 prefixes (exclusive of HBM's 4): about 7 of 10 found, the rest dropped.
    small = serve(scenario("offload-small", {"num_gpu_blocks_override": 266, "kv_offloading_size": f"{3 * 64 * BLOCK * KV_PER_TOKEN}B"}, work))
    r = small["prefix_cache"]
    assert small["pools"][0]["kv_offload"]["host_kv_blocks_per_replica"] == 3 * 64
    assert 0.6 < r["hit_rate"] < 0.8 and r["host_drops"] > 0, r


@test
def offload_capacity_and_host_link():
    doc = serve(scenario("capacity", {"kv_offloading_size": "100GiB"}, {"shared_prefix": {"groups": 2, "tokens": 512}}))
    o = doc["pools"][0]["kv_offload"]
    assert o["host_kv_bytes_per_gpu"] == 100 * 2**30
    assert o["host_kv_blocks_per_replica"] == (100 * 2**30 // KV_PER_TOKEN) // BLOCK, o
    assert o["host_kv_capacity_tokens_per_replica"] == o["host_kv_blocks_per_replica"] * BLOCK
    # p5.48xlarge: PCIe Gen5, 51 GB/s per GPU (catalog); reloading a token's KV beats recomputing it.
    assert o["host_link_Bps"] == 51e9 and abs(o["reload_s_per_token"] - KV_PER_TOKEN / 51e9) < 1e-15, o
    assert o["pays"] and o["reload_s_per_token"] < o["recompute_s_per_token"], o
    # TP2: the replica's offload splits over its GPUs, and so does each token's KV.
    tp2 = serve(scenario("capacity-tp2", {"kv_offloading_size": "100GiB", "tensor_parallel_size": 2}))["pools"][0]["kv_offload"]
    assert tp2["host_kv_bytes_per_gpu"] == 50 * 2**30 and abs(tp2["host_kv_blocks_per_replica"] - o["host_kv_blocks_per_replica"]) <= 1, tp2
    # GB200: Grace memory over NVLink-C2C (201 GB/s, catalog), four times PCIe.
    gb = serve(scenario("gb200", {"kv_offloading_size": "100GiB", "precision": "bf16"}, cluster=GB200, ultraservers=1))
    g = gb["pools"][0]["kv_offload"]
    assert g["host_link_Bps"] == 201e9 and abs(g["reload_s_per_token"] - gb["pools"][0]["memory_per_gpu"]["kv_bytes_per_token"] / 201e9) < 1e-15, g


@test
def offload_that_does_not_pay_is_not_used():
    # Full multi-head KV (512 KiB per token in BF16) on a model with a thin MLP: a token's KV takes longer
    # over PCIe than its prefill takes to compute, so host hits are recomputed instead of loaded.
    model = {"base": "llama2-7b", "intermediate_size": 1024}
    doc = serve(scenario("no-pay", {"kv_offloading_size": "10GiB", "precision": "bf16", "kv_cache_dtype": "bf16", "num_gpu_blocks_override": 266},
                         {"requests": 400, "shared_prefix": {"groups": 10, "tokens": 1024}}, model=model))
    o = doc["pools"][0]["kv_offload"]
    assert not o["pays"] and o["reload_s_per_token"] > o["recompute_s_per_token"], o
    assert doc["prefix_cache"]["host_hit_tokens"] == 0, doc["prefix_cache"]
    assert "recomputing is faster" in run("serve", scenario("no-pay-text", {"kv_offloading_size": "10GiB", "precision": "bf16",
                                                                               "kv_cache_dtype": "bf16"}, model=model)).stdout


@test
def trace_prefix_ids():
    lines = [{"arrival_s": i * 0.5, "input_tokens": 600, "output_tokens": 4, "prefix_id": i % 2, "prefix_tokens": 512} for i in range(20)]
    trace = write(TMP, "prefix.jsonl", "\n".join(json.dumps(line) for line in lines) + "\n")
    doc = serve(scenario("trace", workload={"arrival": "trace", "trace": trace, "requests": None, "rate": None,
                                            "input_tokens": None, "output_tokens": None}))
    assert doc["prefix_cache"]["looked_up_tokens"] == 20 * 512 and doc["prefix_cache"]["gpu_hit_tokens"] == 18 * 512, doc["prefix_cache"]
    csv = write(TMP, "prefix.csv", "arrival_s,input_tokens,output_tokens,prefix_id,prefix_tokens\n" +
                "".join(f"{i * 0.5},600,4,{i % 2},512\n" for i in range(20)))
    doc = serve(scenario("trace-csv", workload={"arrival": "trace", "trace": csv, "requests": None, "rate": None,
                                                "input_tokens": None, "output_tokens": None}))
    assert doc["prefix_cache"]["gpu_hit_tokens"] == 18 * 512, doc["prefix_cache"]


@test
def prefix_results_validate_against_the_schema():
    import jsonschema
    with open(os.path.join(SOURCE, "docs", "schema", "serve.schema.json")) as f:
        validator = jsonschema.Draft202012Validator(json.load(f))
    shipped = os.path.join(SOURCE, "configs", "serving", "llama3.3-70b-p5en-prefix.json")
    for doc in (serve(scenario("schema", {"kv_offloading_size": "2GiB"}, {"shared_prefix": {"groups": 3, "tokens": 256}})),
                serve(shipped, "--set", "workload.requests=500")):
        errors = [f"/{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in validator.iter_errors(doc)]
        assert not errors, errors[:5]
        assert doc["prefix_cache"]["hit_rate"] > 0


@test
def bad_prefix_and_offload_input_exits_2():
    out = os.path.join(TMP, "never.json")
    # p5.48xlarge has 2 TiB of host memory for 8 GPUs: 300 GiB per one-GPU replica is 2.4 TiB per instance.
    expect_bad_input(["serve", scenario("too-much", {"kv_offloading_size": "300GiB"}), "--json", out],
                     ["kv_offloading_size", "host memory", "p5.48xlarge"], out)
    expect_bad_input(["serve", scenario("neg", {"kv_offloading_size": "-1GiB"}), "--json", out], ["kv_offloading_size"], out)
    expect_bad_input(["serve", scenario("groups0", workload={"shared_prefix": {"groups": 0, "tokens": 64}}), "--json", out],
                     ["shared_prefix/groups"], out)
    expect_bad_input(["serve", scenario("fixed-and-tree", {"prefix_cache_hit_rate": 0.5}, {"shared_prefix": {"groups": 2, "tokens": 64}}),
                      "--json", out], ["prefix_cache_hit_rate", "shared_prefix"], out)
    bad = write(TMP, "bad-prefix.jsonl", '{"arrival_s": 0, "input_tokens": 100, "output_tokens": 5, "prefix_id": 1, "prefix_tokens": 200}\n')
    expect_bad_input(["serve", scenario("bad-trace", workload={"arrival": "trace", "trace": bad, "requests": None, "rate": None,
                                                               "input_tokens": None, "output_tokens": None}), "--json", out],
                     ["bad-prefix.jsonl:1:", "prefix_tokens"], out)


run_tests()
