#!/usr/bin/env python3
"""Chakra execution traces in and out (issue #30).

- Round trip: a full-fidelity fmsim trace written as JSON and as Chakra protobuf replays to the same step
  time; JSON -> Chakra -> JSON gives the same document and JSON -> Chakra the same bytes as the direct
  Chakra output; `fmsim run --trace PREFIX.RANK.et` finds the whole trace from one of its files.
- A trace written the way Chakra's own tools write it (a fixture from the schema: tests/cli/chakra_fixture.py)
  replays: its durations bound the step from below, its collective and sends show up in the breakdown.
- Bad input exits 2 naming the file and what is wrong: a truncated message, an unknown node type, a
  dependency on a missing node, a process group missing from comm_groups.json, a GATHER.
Usage: run_chakra_tests.py FMSIM SOURCE_DIR"""
import filecmp
import json
import os
import subprocess
import sys
import tempfile

FMSIM, SRC = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import chakra_fixture  # noqa: E402

SCENARIO = os.path.join(SRC, "configs/training/llama3-8b-p5.json")
ONE_NODE = ["--set", "cluster.nodes=1", "--set", "parallelism.global_batch_size=8"]
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def fmsim(*args, expect=0):
    proc = subprocess.run([FMSIM, *args], capture_output=True, text=True)
    if proc.returncode != expect:
        failures.append(f"fmsim {' '.join(args)}: exit {proc.returncode}, expected {expect}: {proc.stderr.strip()[-400:]}")
        print("FAIL:", failures[-1])
    return proc


with tempfile.TemporaryDirectory() as tmp:
    # --- round trip of fmsim's own traces ---
    fmsim("trace", SCENARIO, *ONE_NODE, "--fidelity", "full", "--out", f"{tmp}/t.json")
    proc = fmsim("trace", SCENARIO, *ONE_NODE, "--format", "chakra", "--out", f"{tmp}/t")
    check("wrote the Chakra trace" in proc.stderr and "t.comm_groups.json" in proc.stderr, "trace --format chakra says what it wrote")
    check(all(os.path.exists(f"{tmp}/t.{r}.et") for r in range(8)) and not os.path.exists(f"{tmp}/t.8.et"), "one .et file per rank")
    groups = json.load(open(f"{tmp}/t.comm_groups.json"))
    check(groups and all(isinstance(v, list) for v in groups.values()), "comm_groups.json maps process groups to ranks")
    results = {}
    for label, trace in (("json", f"{tmp}/t.json"), ("chakra", f"{tmp}/t"), ("one file", f"{tmp}/t.5.et")):
        fmsim("run", SCENARIO, *ONE_NODE, "--trace", trace, "--json", f"{tmp}/{label}.json")
        results[label] = json.load(open(f"{tmp}/{label}.json"))
    for label in ("chakra", "one file"):
        check(results[label]["step_time_s"] == results["json"]["step_time_s"],
              f"{label}: step {results[label]['step_time_s']} vs JSON trace {results['json']['step_time_s']}")
        check(results[label]["breakdown_s"] == results["json"]["breakdown_s"], f"{label}: the same breakdown")
    # The Chakra trace carries its scenario: it replays without one too.
    fmsim("run", "--trace", f"{tmp}/t", "--json", f"{tmp}/alone.json")
    check(json.load(open(f"{tmp}/alone.json"))["step_time_s"] == results["json"]["step_time_s"], "a Chakra trace replays on its own scenario")
    fmsim("trace", "--from", f"{tmp}/t", "--out", f"{tmp}/back.json")
    check(json.load(open(f"{tmp}/back.json")) == json.load(open(f"{tmp}/t.json")), "Chakra -> JSON gives the JSON trace back")
    fmsim("trace", "--from", f"{tmp}/t.json", "--format", "chakra", "--out", f"{tmp}/again")
    check(all(filecmp.cmp(f"{tmp}/t.{r}.et", f"{tmp}/again.{r}.et", shallow=False) for r in range(8)),
          "JSON -> Chakra gives the same bytes as writing Chakra directly")

    # --- fmsim's Chakra output with the value types Chakra's ET feeder (ASTRA-sim) reads ---
    pb = chakra_fixture.load_schema(SRC, tmp)
    feeder_types = {"is_cpu_op": "bool_val", "num_ops": "int64_val", "tensor_size": "uint64_val", "comm_type": "int64_val",
                    "comm_size": "int64_val", "comm_src": "int32_val", "comm_dst": "int32_val", "comm_tag": "int32_val",
                    "pg_name": "string_val"}
    seen = set()
    for rank in (0, 7):
        messages = chakra_fixture.decode_all(open(f"{tmp}/t.{rank}.et", "rb").read())
        meta = pb.GlobalMetadata()
        meta.ParseFromString(messages[0])
        check(meta.version == "0.0.4", f"rank {rank}: GlobalMetadata version {meta.version}")
        for raw in messages[1:]:
            node = pb.Node()
            node.ParseFromString(raw)
            for a in node.attr:
                if a.name in feeder_types:
                    seen.add(a.name)
                    check(a.WhichOneof("value") == feeder_types[a.name], f"rank {rank} node {node.id}: {a.name} is {a.WhichOneof('value')}")
            if node.type == pb.COMP_NODE and not any(a.name == "is_cpu_op" and a.bool_val for a in node.attr):
                check(node.duration_micros >= 0, "compute nodes carry duration_micros")
    check({"is_cpu_op", "num_ops", "comm_type", "comm_size", "pg_name"} <= seen, f"attributes written: {sorted(seen)}")

    # --- a trace as Chakra's tools write it ---
    shape = {"layers": 8, "fwd_us": 25000, "bwd_us": 50000, "grad_bytes": 64 << 20, "p2p_bytes": 1 << 20}
    chakra_fixture.write_trace(pb, f"{tmp}/ext", 8, **shape)
    fmsim("run", SCENARIO, *ONE_NODE, "--trace", f"{tmp}/ext", "--json", f"{tmp}/ext.json")
    if os.path.exists(f"{tmp}/ext.json"):
        ext = json.load(open(f"{tmp}/ext.json"))
        compute_s = 8 * (25000 + 50000) * 1e-6 + 100e-6
        check(compute_s <= ext["step_time_s"] < compute_s + 0.1, f"fixture step {ext['step_time_s']} vs its compute {compute_s}")
        check(ext["breakdown_s"].get("dp_comm", 0) > 0, f"fixture: the all-reduce is exposed: {ext['breakdown_s']}")
        check(ext["simulation"]["fidelity"] == "full", "a Chakra trace replays every rank")
    fmsim("run", "--trace", f"{tmp}/ext", expect=2)  # no scenario inside: needs one

    # --- bad input ---
    def variant(name, mutate_nodes=None, mutate_bytes=None, groups=True):
        prefix = f"{tmp}/{name}"
        for rank in range(8):
            nodes = chakra_fixture.layered_rank(pb, rank, 8, **shape)
            if mutate_nodes and rank == 3:
                mutate_nodes(nodes)
            data = chakra_fixture.encode(pb.GlobalMetadata(version="0.0.4")) + b"".join(chakra_fixture.encode(n) for n in nodes)
            if mutate_bytes and rank == 3:
                data = mutate_bytes(data)
            open(f"{prefix}.{rank}.et", "wb").write(data)
        if groups:
            json.dump({"0": list(range(8))}, open(f"{prefix}.comm_groups.json", "w"))
        return prefix

    def set_type(t):
        return lambda nodes: nodes[2].__setattr__("type", t)

    def add_dep(nodes):
        nodes[4].data_deps.append(99999)

    def gather(nodes):
        for a in nodes[-2].attr:
            if a.name == "comm_type":
                a.int64_val = pb.GATHER

    def huge_type(nodes):  # a double beyond any integer where a whole number is read (review of session 24)
        for a in nodes[-2].attr:
            if a.name == "comm_type":
                a.ClearField("int64_val")
                a.double_val = 1e300

    cases = [
        (variant("hugetype", huge_type), ["hugetype.3.et", "comm_type", "1e+300", "expected a whole number"]),
        (variant("trunc", mutate_bytes=lambda d: d[:-7]), ["trunc.3.et", "truncated at byte"]),
        (variant("storage", set_type(pb.STORAGE_NODE)), ["storage.3.et", "node type 8 (STORAGE_NODE)", "not one fmsim replays"]),
        (variant("unknown", set_type(42)), ["unknown.3.et", "node type 42 (unknown)"]),
        (variant("dep", add_dep), ["dep.3.et", "depends on node 99999"]),
        (variant("nogroups", groups=False), ["nogroups.comm_groups.json", "process group '0'"]),
        (variant("gather", gather), ["gather.3.et", "comm_type 3 (GATHER)"]),
        (variant("garbage", mutate_bytes=lambda d: b"\xff\xff\xff\xff\xff\xff" + d), ["garbage.3.et", "byte 0"]),
    ]
    for prefix, expected in cases:
        proc = fmsim("run", SCENARIO, *ONE_NODE, "--trace", prefix, expect=2)
        for text in expected:
            check(text in proc.stderr, f"{os.path.basename(prefix)}: message {proc.stderr.strip()!r} lacks {text!r}")
        check(proc.stderr.count("\n") <= 2, f"{os.path.basename(prefix)}: one message, not a dump: {proc.stderr!r}")
        print(proc.stderr.strip())
    proc = fmsim("trace", SCENARIO, *ONE_NODE, "--format", "chakra", "--fidelity", "fast", "--out", f"{tmp}/x", expect=2)
    check("--fidelity must be full" in proc.stderr, "chakra output refuses a fast trace")
    proc = fmsim("trace", SCENARIO, "--format", "chakra", "--out", "-", expect=2)
    check("give --out PREFIX" in proc.stderr, "chakra output refuses stdout")
    proc = fmsim("trace", SCENARIO, "--format", "protobuf", "--out", f"{tmp}/x", expect=2)
    check("--format 'protobuf'" in proc.stderr, "an unknown --format is named")
    proc = fmsim("trace", "--from", f"{tmp}/ext", "--out", f"{tmp}/x.json", expect=2)
    check("no tokens_per_step" in proc.stderr, "converting a foreign trace without its totals says why not")

if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("chakra tests: ok")
