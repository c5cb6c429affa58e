#!/usr/bin/env python3
"""Seed corpora for the fuzz targets (fuzz/, docs/robustness.md), made from the shipped files.

Usage: fuzz_seeds.py SOURCE_DIR OUT_DIR
Writes OUT_DIR/TARGET/* (one seed per file) and OUT_DIR/fmsim.dict (every key and unit in the shipped
JSON, as a libFuzzer dictionary). Seeds of targets that take a selector byte get it prepended.
"""
import json
import pathlib
import re
import sys

SRC = pathlib.Path(sys.argv[1]).resolve()
OUT = pathlib.Path(sys.argv[2])

seeds = {}


def add(target, name, data):
    if isinstance(data, str):
        data = data.encode()
    seeds.setdefault(target, {})[name] = data


def shipped(pattern):
    return sorted(SRC.glob(pattern))


def json_blocks(markdown):
    """```json blocks of a Markdown file."""
    return re.findall(r"```json\n(.*?)```", markdown, re.S)


keys, strings = set(), set()


def walk(value):
    if isinstance(value, dict):
        for k, v in value.items():
            keys.add(k)
            walk(v)
    elif isinstance(value, list):
        for v in value:
            walk(v)
    elif isinstance(value, str):
        strings.add(value)


for target, pattern in [("training_scenario", "configs/training/*.json"), ("serve_scenario", "configs/serving/*.json"),
                        ("cluster", "topologies/*.json"), ("model", "configs/models/*.json"),
                        ("plan", "configs/plans/*.json"), ("sweep", "configs/sweeps/*.json"),
                        ("stack", "configs/stacks/*.json"), ("recipe", "configs/recipes/*/*.json"),
                        ("search", "configs/search/*.json"), ("serve_search", "configs/search/*serving*.json"),
                        ("job_trace", "configs/cluster/*.jsonl"), ("job_trace", "configs/cluster/*.txt"),
                        ("chakra", "tests/data/chakra/*.et"), ("topology_conf", "configs/cluster/*.conf"),
                        ("kueue", "configs/cluster/*.yaml"), ("job_trace", "configs/cluster/*.json")]:
    for path in shipped(pattern):
        add(target, path.name, path.read_bytes())
for i, name in enumerate(["gpus.json", "instances.json", "networks.json", "storage.json"]):
    add("catalog", name, str(i).encode() + (SRC / "topologies/catalog" / name).read_bytes())

# Every shipped JSON file, and the JSON examples of the docs, seed the JSON reader; the docs' examples also
# seed the loader whose keys they show.
for path in shipped("configs/**/*.json") + shipped("topologies/**/*.json") + shipped("docs/schema/*.json"):
    add("json", path.relative_to(SRC).as_posix().replace("/", "_"), path.read_bytes())
    try:
        walk(json.loads(path.read_text()))
    except ValueError:
        pass
for md in shipped("docs/*.md") + [SRC / "README.md"]:
    for n, block in enumerate(json_blocks(md.read_text())):
        name = f"{md.stem}_{n}.json"
        add("json", name, block)
        for target, marker in [("plan", '"expect'), ("sweep", '"grid"'), ("sweep", '"points"'),
                               ("cluster", '"fabric"'), ("training_scenario", '"parallelism"'),
                               ("serve_scenario", '"workload"'), ("model", '"num_hidden_layers"')]:
            if marker in block:
                add(target, name, block)

# Unit strings: every shipped value that looks like a quantity, under each parser (first byte '0'..'5':
# bytes, time, bandwidth, flop rate, request rate, nccl-tests size), and a few spellings of each.
quantity = re.compile(r"^\s*[-+]?[0-9.]+(e[-+]?[0-9]+)?\s*[A-Za-zµ/]+\s*$")
examples = sorted(s for s in strings if quantity.match(s)) + [
    "400GBps", "3.2Tbps", "1.5TiB", "80GiB", "936ns", "2.5us", "1µs", "3min", "1h", "989.5TFLOPS", "2PFLOPS",
    "40/s", "3500/s", "128K", "16G", "8", "0.5", "1e3GB/s", "100 Gb/s"]
for n, text in enumerate(examples):
    for selector in "012345":
        add("units", f"{n}_{selector}", selector + text)

# Request traces: first byte 'j' (even) JSON Lines, 'c' (odd) CSV.
add("request_trace", "jsonl", 'j{"arrival_s": 0.25, "input_tokens": 812, "output_tokens": 64}\n'
                              '{"arrival_s": 0.5, "input_tokens": 100, "output_tokens": 20, "samples": 4}\n')
add("request_trace", "csv", "carrival_s,input_tokens,output_tokens,user\n0,812,64,a\n0.125,100,20,b\n")
add("request_trace", "csv_reordered", "coutput_tokens, arrival_s ,input_tokens\n64,1.5,8\n")

# An op-graph trace: two ranks, a GEMM, an all-reduce, a send/receive pair.
trace = {
    "schema": "fmsim.trace/1", "world_size": 2, "symmetric": False, "ranks": [0, 1], "rank_gpu": [0, 1],
    "model_flops_per_step": 1e12, "tokens_per_step": 4096, "scenario": {},
    "communicators": [{"id": 0, "kind": "tp", "ranks": [0, 1]}],
    "nodes": [
        {"id": 0, "rank": 0, "type": "COMP_NODE", "name": "fc1", "category": "compute", "stream": "compute",
         "data_deps": [], "kernel": "gemm", "num_ops": 1e12, "tensor_size": 1e8, "gemm_mnk": [4096, 4096, 4096],
         "fp8": True, "fp8_split_accumulator": True, "sms_taken": 4},
        {"id": 1, "rank": 1, "type": "COMP_NODE", "name": "attn", "category": "compute", "stream": "compute",
         "data_deps": [], "kernel": "attention_fwd", "num_ops": 1e11, "attention_span": 4096, "repeat": 2},
        {"id": 2, "rank": 0, "type": "COMM_COLL_NODE", "name": "ar", "category": "tp_comm", "stream": "comm",
         "data_deps": [0], "comm_type": "ALL_REDUCE", "comm_group": 0, "comm_size": 1048576},
        {"id": 3, "rank": 1, "type": "COMM_COLL_NODE", "name": "ar", "category": "tp_comm", "stream": "comm",
         "data_deps": [1], "comm_type": "ALL_REDUCE", "comm_group": 0, "comm_size": 1048576},
        {"id": 4, "rank": 0, "type": "COMM_SEND_NODE", "name": "p2p", "category": "pp_comm", "stream": "pp",
         "data_deps": [2], "comm_dst": 1, "comm_tag": 7, "comm_size": 65536},
        {"id": 5, "rank": 1, "type": "COMM_RECV_NODE", "name": "p2p", "category": "pp_comm",
         "data_deps": [3], "comm_src": 0, "comm_tag": 7, "comm_size": 65536, "duration_s": 1e-5},
    ],
}
add("op_trace", "two_ranks.json", json.dumps(trace, indent=1))
add("op_trace", "two_ranks_compact.json", json.dumps(trace, separators=(",", ":")))
keys.update(k for node in trace["nodes"] for k in node)
keys.update(["COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE", "ALL_REDUCE", "ALL_TO_ALL"])

for target, files in seeds.items():
    directory = OUT / target
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)

# libFuzzer dictionary: the keys and unit suffixes, quoted as JSON strings, plus JSON punctuation.
def entry(token):
    escaped = "".join(c if 32 <= ord(c) < 127 and c not in '"\\' else "\\x%02x" % b
                      for c in token for b in c.encode())
    return f'"{escaped}"'

tokens = sorted({json.dumps(k) for k in keys if len(k) < 64}) + ["true", "false", "null", "1e308", "e300", "e-300", "4294967296", "2147483648", "-0", "NaN",
         "GiB", "TiB", "GBps", "Gbps", "TFLOPS", "ns", "us", "ms", "/s", "\\u0000", "\\ud800"]
(OUT / "fmsim.dict").write_text("".join(entry(t) + "\n" for t in tokens))
print(f"fuzz_seeds: {sum(len(f) for f in seeds.values())} seeds for {len(seeds)} targets in {OUT}")
