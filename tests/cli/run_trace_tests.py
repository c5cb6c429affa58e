#!/usr/bin/env python3
"""End-to-end tests of traces read from files (`fmsim run --trace`) and of the step breakdown: a written
trace replays from any directory; broken traces (cycles, deadlocks, ranks outside the world, duplicate
or dangling references, negative or impossible numbers, totals of another scenario, steps faster than
the GPUs' peak) end in exit 2 with one line naming the file and what is wrong, never a crash, a hang or
a made-up result; `trace` and `report` say what they wrote where; the summary and the JSON break the
step down for the critical (busiest) rank and per pipeline stage.
Usage: run_trace_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import tempfile

from cli_support import CONFIGS, FMSIM, TOPO, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-trace-tests-")
OUT = os.path.join(TMP, "out.json")
# 8 ranks on one p5 node, data parallel: small enough to build traces by hand.
SCENARIO = write(TMP, "small.json", json.dumps({
    "name": "small", "cluster": {"base": os.path.join(TOPO, "p5-16node.json"), "nodes": 1},
    "model": {"base": "llama3-8b", "num_hidden_layers": 2},
    "parallelism": {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 1, "global_batch_size": 8},
    "training": {"seq_length": 1024}}))


def totals():
    path = os.path.join(TMP, "small-trace.json")
    proc = run("trace", SCENARIO, "--out", path)
    assert proc.returncode == 0, proc.stderr
    with open(path) as f:
        doc = json.load(f)
    return doc["tokens_per_step"], doc["model_flops_per_step"]


TOKENS, FLOPS = totals()


def comp(id, rank, deps=(), duration_s=1e-3, **fields):
    node = {"id": id, "rank": rank, "type": "COMP_NODE", "name": f"op{id}", "category": "compute", "data_deps": list(deps),
            "stream": "compute", "kernel": "memory"}
    if duration_s is not None:
        node["duration_s"] = duration_s
    node.update(fields)
    return node


def p2p(id, rank, kind, peer, tag, stream="p2p"):
    return {"id": id, "rank": rank, "type": "COMM_SEND_NODE" if kind == "send" else "COMM_RECV_NODE", "name": f"{kind}{id}",
            "category": "pp_comm", "data_deps": [], "stream": stream, "comm_dst" if kind == "send" else "comm_src": peer,
            "comm_tag": tag, "comm_size": 1e6}


def coll(id, rank, comm, size=1e6):
    return {"id": id, "rank": rank, "type": "COMM_COLL_NODE", "name": f"allreduce{id}", "category": "dp_comm", "data_deps": [],
            "stream": "comm", "comm_type": "ALL_REDUCE", "comm_group": comm, "comm_size": size}


def trace_doc(nodes, ranks=(0,), comms=(), **top):
    doc = {"schema": "fmsim.trace/1", "world_size": 8, "symmetric": False, "ranks": list(ranks),
           "model_flops_per_step": FLOPS, "tokens_per_step": TOKENS,
           "communicators": [{"id": i, "kind": "dp", "ranks": list(r)} for i, r in enumerate(comms)], "nodes": nodes}
    doc.update(top)
    return doc


def bad_trace(name, doc, must_contain):
    path = write(TMP, name + ".json", json.dumps(doc))
    expect_bad_input(["run", SCENARIO, "--trace", path, "--json", OUT], [name + ".json", *must_contain], OUT)


@test
def a_trace_replays_from_any_directory():
    # The shipped scenario names its cluster relative to itself (../../topologies/...): the trace must not.
    scenario = os.path.join(CONFIGS, "training", "llama3-8b-p5.json")
    direct = run_json("run", scenario)
    elsewhere = tempfile.mkdtemp(prefix="fmsim-elsewhere-", dir=TMP)
    trace = os.path.join(elsewhere, "trace.json")
    proc = run("trace", scenario, "--out", trace)
    assert proc.returncode == 0, proc.stderr
    with open(trace) as f:
        cluster = json.load(f)["scenario"]["cluster"]
    assert "base" not in cluster and cluster["nodes"] == 2 and cluster["instance_type"] == "p5.48xlarge", cluster
    for cwd in [elsewhere, "/"]:
        proc = subprocess.run([FMSIM, "run", "--trace", trace, "--json", "-"], capture_output=True, text=True, timeout=600, cwd=cwd)
        assert proc.returncode == 0, (cwd, proc.stderr)
        assert abs(json.loads(proc.stdout)["step_time_s"] / direct["step_time_s"] - 1) < 1e-9


@test
def a_model_config_path_is_made_absolute():
    with tempfile.TemporaryDirectory(dir=TMP) as d:
        with open(os.path.join(CONFIGS, "models", "llama3-8b.json")) as f:
            write(d, "my-model.json", f.read())
        doc = json.load(open(SCENARIO))
        doc["model"] = {"base": "./my-model.json", "num_hidden_layers": 2}
        path = write(d, "scenario.json", json.dumps(doc))
        trace = os.path.join(d, "trace.json")
        proc = subprocess.run([FMSIM, "trace", "scenario.json", "--out", "trace.json"], capture_output=True, text=True, cwd=d)
        assert proc.returncode == 0, proc.stderr
        with open(trace) as f:
            base = json.load(f)["scenario"]["model"]["base"]
        assert os.path.isabs(base) and os.path.samefile(base, os.path.join(d, "my-model.json")), base
        proc = subprocess.run([FMSIM, "run", "--trace", trace, "--json", "-"], capture_output=True, text=True, timeout=600, cwd="/")
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["step_time_s"] > 0


@test
def a_dependency_cycle_is_refused_naming_its_nodes():
    bad_trace("cycle", trace_doc([comp(0, 0, deps=[1]), comp(1, 0, deps=[0])]), ["cycle", "node 0 (op0, rank 0)", "node 1 (op1, rank 0)"])
    # Through stream order: node 0 waits for node 2, which runs after node 1, which runs after node 0.
    bad_trace("stream-cycle", trace_doc([comp(0, 0, deps=[2]), comp(1, 0), comp(2, 0)]), ["cycle", "node 0", "node 2"])


@test
def a_deadlock_through_sends_and_receives_is_refused():
    # Each rank sends before it receives on one stream: the two transfers wait on each other.
    nodes = [p2p(0, 0, "send", 1, 0), p2p(1, 0, "recv", 1, 1), p2p(2, 1, "send", 0, 1), p2p(3, 1, "recv", 0, 0)]
    bad_trace("deadlock", trace_doc(nodes, ranks=[0, 1]), ["deadlock", "rank 0", "rank 1"])


@test
def ranks_are_checked():
    bad_trace("rank-outside", trace_doc([comp(0, 0)], ranks=[8]), ["/ranks/0", "8", "world of 8"])
    bad_trace("rank-twice", trace_doc([comp(0, 0)], ranks=[0, 0]), ["/ranks", "0 is listed twice"])
    bad_trace("rank-unlisted", trace_doc([comp(0, 0), comp(1, 3)], ranks=[0]), ["/nodes/1/rank", "rank 3", "/ranks does not list"])
    bad_trace("rank-huge", trace_doc([comp(0, 4294967296)], ranks=[0]), ["/nodes/0/rank", "4294967296"])
    bad_trace("world-zero", trace_doc([comp(0, 0)], world_size=0), ["/world_size", "0"])
    for key in ("tokens_per_step", "model_flops_per_step"):
        doc = trace_doc([comp(0, 0)])
        del doc[key]
        bad_trace("no-" + key.replace("_", "-"), doc, ["/" + key, "missing"])
    bad_trace("gpu-twice", trace_doc([comp(0, 0)], rank_gpu=[0, 1, 2, 3, 4, 5, 6, 6]), ["/rank_gpu", "6 is listed twice"])
    bad_trace("gpu-count", trace_doc([comp(0, 0)], rank_gpu=[0, 1]), ["/rank_gpu", "2 GPUs for a world of 8"])
    bad_trace("peer-outside", trace_doc([p2p(0, 0, "send", 9, 0)]), ["/nodes/0/comm_dst", "9"])


@test
def communicators_and_dependencies_are_checked():
    bad_trace("dep-missing", trace_doc([comp(0, 0, deps=[7])]), ["/nodes/0/data_deps/0", "7"])
    bad_trace("dep-self", trace_doc([comp(0, 0, deps=[0])]), ["/nodes/0/data_deps", "depends on itself"])
    bad_trace("comm-twice", trace_doc([coll(0, 0, 0)], comms=[[0, 0]]), ["/communicators/0/ranks", "0 is listed twice"])
    bad_trace("comm-missing", trace_doc([coll(0, 0, 3)], comms=[[0, 1]]), ["/nodes/0/comm_group", "no such communicator"])
    bad_trace("comm-member", trace_doc([coll(0, 0, 0)], comms=[[1, 2]]), ["/nodes/0/comm_group", "does not have rank 0"])
    bad_trace("comm-calls", trace_doc([coll(0, 0, 0), coll(1, 0, 0), coll(2, 1, 0)], ranks=[0, 1], comms=[[0, 1]]),
              ["communicator 0", "rank 0 makes 2", "rank 1 makes 1"])


@test
def numbers_are_finite_and_not_negative():
    bad_trace("negative-size", trace_doc([coll(0, 0, 0, size=-1)], comms=[[0]]), ["/nodes/0/comm_size", "-1"])
    bad_trace("negative-duration", trace_doc([comp(0, 0, duration_s=-2.5)]), ["/nodes/0/duration_s", "-2.5"])
    bad_trace("negative-ops", trace_doc([comp(0, 0, num_ops=-1e12)]), ["/nodes/0/num_ops"])
    bad_trace("huge-duration", trace_doc([comp(0, 0, duration_s=1e300)]), ["/nodes/0/duration_s", "1e+300"])
    bad_trace("zero-repeat", trace_doc([comp(0, 0, repeat=0)]), ["/nodes/0/repeat", "0"])
    bad_trace("string-size", trace_doc([coll(0, 0, 0, size="1MB")], comms=[[0]]), ["/nodes/0/comm_size", "expected a number"])
    bad_trace("shapeless-gemm", trace_doc([comp(0, 0, kernel="gemm", duration_s=None)]), ["/nodes/0", "gemm_mnk"])
    # Below 1 (but not 0) a span or a head dim drives the attention kernel's time to infinity (review of session 24).
    bad_trace("tiny-head-dim", trace_doc([comp(0, 0, kernel="attention_fwd", num_ops=1e9, attention_head_dim=1e-310)]),
              ["/nodes/0/attention_head_dim", "from 1 to 1024"])
    bad_trace("huge-head-dim", trace_doc([comp(0, 0, kernel="attention_fwd", num_ops=1e9, attention_head_dim=4096)]),
              ["/nodes/0/attention_head_dim", "4096"])
    bad_trace("tiny-span", trace_doc([comp(0, 0, kernel="attention_fwd", num_ops=1e9, attention_span=1e-3)]),
              ["/nodes/0/attention_span", "at least 1 key"])


@test
def impossible_work_is_refused_rather_than_reported():
    # A GEMM of 2 x 8192^3 FLOPs in a microsecond: a million TFLOP/s on a 989 TFLOP/s GPU.
    bad_trace("too-fast", trace_doc([comp(0, 0, kernel="gemm", gemm_mnk=[8192, 8192, 8192], duration_s=1e-6)]),
              ["node 0 (op0, rank 0)", "above the H100", "peak"])
    bad_trace("ops-vs-shape", trace_doc([comp(0, 0, kernel="gemm", gemm_mnk=[64, 64, 64], num_ops=1e15)]),
              ["/nodes/0/num_ops", "2 x m x n x k"])
    bad_trace("other-totals", trace_doc([comp(0, 0)], tokens_per_step=TOKENS * 2), ["/tokens_per_step", "another scenario"])
    bad_trace("other-flops", trace_doc([comp(0, 0)], model_flops_per_step=FLOPS * 3), ["/model_flops_per_step", "another scenario"])
    # Each GPU runs GEMMs of about 3/4 of its share of the model's FLOPs: work is missing (a plausible MFU
    # would hide it).
    repeat = int(0.8 * FLOPS / 8 / (2 * 8192 ** 3))
    nodes = [comp(r, r, duration_s=None, kernel="gemm", gemm_mnk=[8192, 8192, 8192], repeat=repeat) for r in range(8)]
    bad_trace("missing-work", trace_doc(nodes, ranks=range(8)), ["FLOPs per GPU per step", "llama3-8b needs", "nodes are missing"])
    # A symmetric trace stands for each pipeline stage by one rank: with PP2, stage 1 (ranks 4-7) is missing.
    path = write(TMP, "missing-stage.json", json.dumps(trace_doc([comp(0, 0)], symmetric=True)))
    expect_bad_input(["run", SCENARIO, "--set", "parallelism.pipeline_model_parallel_size=2", "--trace", path, "--json", OUT],
                     ["missing-stage.json", "/ranks", "pipeline stage 1 of 2"], OUT)
    # Every rank does one microsecond of memory traffic: the model's FLOPs would need 10^4 x longer.
    nodes = [comp(r, r, duration_s=1e-6) for r in range(8)]
    bad_trace("no-work", trace_doc(nodes, ranks=range(8)), ["MFU", "less work than its model"])


@test
def a_sane_hand_written_trace_runs():
    nodes = [comp(2 * r, r, duration_s=0.5) for r in range(8)] + [coll(2 * r + 1, r, 0) for r in range(8)]
    for r in range(8):
        nodes[8 + r]["data_deps"] = [2 * r]
    nodes.sort(key=lambda n: n["id"])
    path = write(TMP, "sane.json", json.dumps(trace_doc(nodes, ranks=range(8), comms=[range(8)])))
    out = run_json("run", SCENARIO, "--trace", path)
    assert 0.5 < out["step_time_s"] < 0.6, out["step_time_s"]
    assert 0 < out["mfu"] < 1


@test
def trace_and_report_say_what_they_wrote():
    trace = os.path.join(TMP, "said.json")
    proc = run("trace", SCENARIO, "--out", trace)
    assert proc.returncode == 0 and proc.stdout == "", proc.stderr
    assert "wrote" in proc.stderr and trace in proc.stderr and "nodes" in proc.stderr, proc.stderr
    assert run("-q", "trace", SCENARIO, "--out", trace).stderr == ""
    result = os.path.join(TMP, "result.json")
    assert run("run", SCENARIO, "--json", result).returncode == 0
    html, metrics = os.path.join(TMP, "r.html"), os.path.join(TMP, "r.prom")
    proc = run("report", result, "--html", html, "--prometheus", metrics)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 2 and html in lines[0] and metrics in lines[1] and result in lines[0], lines


@test
def the_breakdown_shows_the_critical_rank_and_every_stage():
    # DeepSeek-V3: the first stage (embedding, dense layers) is the least busy; the critical rank is a
    # MoE stage, whose exposed expert-parallel all-to-all shows.
    scenario = os.path.join(CONFIGS, "training", "deepseek-v3-p5en.json")
    proc = run("run", scenario, "--json", OUT)
    assert proc.returncode == 0, proc.stderr
    with open(OUT) as f:
        out = json.load(f)
    step = out["step_time_s"]
    stages = out["breakdown_by_pipeline_rank"]
    with open(scenario) as f:
        pp = json.load(f)["parallelism"]["pipeline_model_parallel_size"]
    assert pp > 1 and [s["pipeline_rank"] for s in stages] == list(range(pp))
    for s in stages:
        assert abs(sum(s["breakdown_s"].values()) - step) < 1e-6 * step, s
        assert abs(s["busy_s"] - (step - s["breakdown_s"]["bubble"])) < 1e-9 * step
    critical = [s for s in stages if s["rank"] == out["breakdown_rank"]]
    assert len(critical) == 1 and critical[0]["pipeline_rank"] == out["breakdown_pipeline_rank"]
    assert critical[0]["breakdown_s"] == out["breakdown_s"]
    assert critical[0]["busy_s"] == max(s["busy_s"] for s in stages), "the critical rank is the busiest"
    assert out["breakdown_s"]["ep_comm"] > 0, out["breakdown_s"]
    assert all(out["breakdown_s"]["bubble"] <= s["breakdown_s"]["bubble"] for s in stages), "no stage idles less"
    # The text summary says the same.
    text = proc.stdout
    assert f"critical rank {out['breakdown_rank']}, pipeline stage {out['breakdown_pipeline_rank']}" in text, text
    table = text[text.index("per pipeline stage"):].splitlines()[1:pp + 2]
    assert "ep_comm" in table[0] and "bubble" in table[0], table
    rows = [l.split() for l in table[1:]]
    assert [int(r[0].rstrip("*")) for r in rows] == list(range(pp)), rows
    assert sum(r[0].endswith("*") for r in rows) == 1


run_tests()
