#!/usr/bin/env python3
"""A bad-input battery through the command line, every subcommand: malformed and truncated JSON, wrong
types, NaN, negative and huge numbers, absurd parallelism, 0 nodes, huge request counts, directories and
missing files, over-long and invalid-UTF-8 names and values, loose numbers on the command line and in
CSV traces. Every case must end in exit 2 (or 1) with one clear line on stderr, nothing on stdout and no
output file, or in a correct result; never a signal, an internal error (exit 3) or a hang.
Usage: run_bad_input_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile
import time

from cli_support import CONFIGS, FMSIM, TOPO, run_tests, test

TIMEOUT_S = 30
TRAIN = os.path.join(CONFIGS, "training", "llama3-8b-p5.json")
TRAIN_LAYOUT = os.path.join(CONFIGS, "training", "llama3-70b-p5.json")
SERVE = os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json")
CKPT = os.path.join(CONFIGS, "training", "llama3.1-405b-p5-2048.json")
CLUSTER = os.path.join(TOPO, "p5-2node.json")
BIG = 2 ** 32  # 4294967296: wrapped to 0 by a cast to int


def fmsim(args, timeout=TIMEOUT_S):
    """Runs fmsim with str or bytes arguments; a hang is a failure, not a stuck test."""
    argv = [os.fsencode(FMSIM)] + [a if isinstance(a, bytes) else os.fsencode(str(a)) for a in args]
    try:
        return subprocess.run(argv, capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"hang: no exit within {timeout} s: {args!r}")


def show(args):
    return " ".join(a.decode("utf-8", "replace") if isinstance(a, bytes) else str(a) for a in args)[:300]


def bad(args, *fragments, out=None, codes=(2,)):
    """Exit 2 (or a code in `codes`), one 'fmsim: error:' line naming the fragments, nothing on stdout,
    no output file."""
    proc = fmsim(args)
    where = show(args)
    assert proc.returncode >= 0, f"killed by signal {-proc.returncode}: {where}"
    stderr = proc.stderr.decode("utf-8", "replace")
    assert proc.returncode in codes, f"exit {proc.returncode} (expected {codes}): {where}\n{stderr[-600:]}"
    lines = [l for l in stderr.splitlines() if l.strip()]
    errors = [l for l in lines if l.startswith("fmsim: error:")]
    assert errors, f"no 'fmsim: error:' line: {where}: {lines!r}"
    for fragment in fragments:
        assert fragment in errors[-1], f"{fragment!r} not in {errors[-1]!r} ({where})"
    assert not proc.stdout, f"stdout not empty: {where}: {proc.stdout[:200]!r}"
    if out is not None:
        assert not os.path.exists(out), f"{out} was written: {where}"


def good(args, timeout=TIMEOUT_S):
    proc = fmsim(args, timeout=timeout)
    assert proc.returncode == 0, f"exit {proc.returncode}: {show(args)}\n{proc.stderr.decode('utf-8', 'replace')[-600:]}"
    return proc


def write(directory, name, content):
    path = os.path.join(os.fsencode(directory), name if isinstance(name, bytes) else os.fsencode(name))
    with open(path, "wb") as f:
        f.write(content if isinstance(content, bytes) else content.encode())
    return path


def cluster_text(**overrides):
    doc = {"instance_type": "p5.48xlarge", "nodes": 2}
    doc.update(overrides)
    return json.dumps(doc)


# ---------------------------------------------------------------- JSON files (through topo) --------

@test
def malformed_truncated_and_wrongly_typed_cluster_files():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        cases = [
            (b"", "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge", "nodes": ', "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge", "nodes": 2', "malformed JSON"),
            (b"[1, 2]", "expected a JSON object"),
            (b'"p5"', "expected a JSON object"),
            (b'{"instance_type": "p5.48xlarge", "nodes": NaN}', "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge", "nodes": 1e999}', "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge", "nodes": -1e999}', "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge", "nodes": 2, "name": "\xff\xfe"}', "malformed JSON"),
            (b'{"instance_type": "p5.48xlarge\xc3", "nodes": 2}', "malformed JSON"),
            (b'\xef\xbb\xbf{"instance_type": 7, "nodes": 2}', "/instance_type"),
            (cluster_text(nodes="2").encode(), "/nodes"),
            (cluster_text(nodes=2.5).encode(), "/nodes"),
            (cluster_text(nodes=True).encode(), "/nodes"),
            (cluster_text(nodes=None).encode(), "/nodes"),
            (cluster_text(nodes=[2]).encode(), "/nodes"),
            (cluster_text(nodes=0).encode(), "/nodes"),
            (cluster_text(nodes=-1).encode(), "/nodes"),
            (cluster_text(nodes=BIG).encode(), "4294967296"),
            (cluster_text(nodes=2 ** 31).encode(), "2147483648"),
            (cluster_text(nodes=2 ** 64 - 1).encode(), "/nodes"),
            (cluster_text(nodes=-(2 ** 63)).encode(), "/nodes"),
            (cluster_text(nodes=10 ** 9).encode(), "GiB for the cluster graph"),
            (cluster_text(nodes=1000000).encode(), "GiB for the cluster graph"),
            (cluster_text(fabric={"oversubscription": 1e308}).encode(), "oversubscription"),
            (cluster_text(fabric={"oversubscription": 0.5}).encode(), "oversubscription"),
            (cluster_text(fabric={"oversubscription": -2}).encode(), "oversubscription"),
            (cluster_text(fabric={"nodes_per_leaf": BIG}).encode(), "nodes_per_leaf"),
            (cluster_text(fabric={"nodes_per_leaf": 2 ** 31 - 1}).encode(), "nodes_per_leaf"),
            (cluster_text(fabric={"message_latency": "1e306h"}).encode(), "too large"),
            (cluster_text(fabric={"message_latency": "1e999s"}).encode(), "out of range"),
            (cluster_text(fabric={"message_latency": "-5us"}).encode(), "negative"),
            (cluster_text(fabric={"message_latency": "NaNs"}).encode(), "message_latency"),
            (cluster_text(fabric={"message_latency": "infs"}).encode(), "message_latency"),
            (cluster_text(fabric={"switch_latency": "5 parsecs"}).encode(), "unknown unit"),
            (cluster_text(storage={"fsx_lustre": {"deployment_type": "PERSISTENT_2-1000", "capacity": "1e300PiB"}}).encode(), "too large"),
            (cluster_text(storage={"fsx_lustre": {"deployment_type": "PERSISTENT_2-1000", "capacity": "1e20PiB"}}).encode(), "capacity"),
            (cluster_text(storage={"fsx_lustre": {"deployment_type": "PERSISTENT_2-1000", "capacity": "-4TiB"}}).encode(), "negative"),
            (cluster_text(storage={"fsx_lustre": {"deployment_type": "PERSISTENT_2-1000", "capacity": "480TiB", "stripe_count": BIG}}).encode(), "stripe_count"),
            (cluster_text(storage={"s3": {"prefixes": BIG}}).encode(), "prefixes"),
            (cluster_text(storage={"s3": {"part_size": "1e300PB"}}).encode(), "part_size"),
            (cluster_text(usd_per_hour=1e300).encode(), "usd_per_hour"),
            (cluster_text(usd_per_hour=-3).encode(), "usd_per_hour"),
            (cluster_text(typo=1).encode(), "unknown key 'typo'"),
            (cluster_text(instance_type="\u00e9" * 3000).encode(), "/instance_type"),
            (b"[" * 100000 + b"]" * 100000, "nested deeper"),
            (b'{"a":' * 100000 + b"1" + b"}" * 100000, "nested deeper"),
        ]
        for content, fragment in cases:
            path = write(d, "c.json", content)
            bad(["topo", path, "--json", out], fragment, out=out)


@test
def missing_directories_long_and_invalid_utf8_file_names():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        bad(["topo", os.path.join(d, "missing.json"), "--json", out], "missing.json", "cannot open", out=out)
        bad(["topo", d, "--json", out], "is a directory", out=out)
        bad(["topo", "", "--json", out], "empty file name", out=out)
        bad(["topo", "a" * 5000 + ".json", "--json", out], "cannot open", out=out)
        bad(["topo", "/" + "d/" * 3000 + "c.json", "--json", out], "cannot open", out=out)
        path = write(d, b"c-\xff\xfe.json", cluster_text())
        bad(["topo", path, "--json", out], "not valid UTF-8", out=out)
        bad(["topo", "/dev/null", "--json", out], "malformed JSON", out=out)
        bad(["--catalog", os.path.join(d, "none"), "topo", CLUSTER, "--json", out], "catalog", out=out)
        bad(["--catalog", CLUSTER, "topo", CLUSTER, "--json", out], "catalog", out=out)


@test
def fractional_oversubscription_gives_a_result():
    # Debug builds used to abort in Boost's max-flow check on 1.5, 1.8 and 3.
    with tempfile.TemporaryDirectory() as d:
        for ratio in (1.5, 1.8, 3):
            path = write(d, "c.json", cluster_text(nodes=8, fabric={"nodes_per_leaf": 2, "oversubscription": ratio}))
            doc = json.loads(good(["topo", path, "--json", "-"]).stdout)
            assert abs(doc["bisection_bandwidth_Bps"] - 4 * 400e9 / ratio) < 1e-6 * 4 * 400e9, (ratio, doc)


# ---------------------------------------------------------------- command-line numbers ------------

@test
def collective_options_are_strict():
    for args, fragment in [
        (["-f", "2x"], "-f '2x'"), (["-f", "1"], "-f"), (["-f", "nan"], "-f"), (["-f", "inf"], "-f"),
        (["-f", "0x10"], "-f"), (["-f", ""], "-f"), (["-f", "1e999"], "-f"),
        (["--gpus", "-4"], "--gpus"), (["--gpus", "0"], "--gpus"), (["--gpus", "1"], "--gpus"),
        (["--gpus", "99999999999"], "--gpus"), (["--gpus", "4x"], "--gpus"), (["--gpus", "17"], "--gpus 17"),
        (["-b", "-8"], "-b"), (["-b", "8x"], "-b"), (["-b", "0"], "-b"), (["-e", "1e999"], "-e"),
        (["-e", "99999999999999999999"], "-e"), (["-e", "999999999T"], "at most"), (["-b", "16G", "-e", "8"], "-e"),
        (["--seed", "-1"], "--seed"), (["--seed", "x"], "--seed"), (["--op", "nope"], "nope"),
        (["--algo", "nope"], "nope"), (["--proto", "XL"], "XL"), (["--placement", "random"], "random"),
        (["--fidelity", "exact"], "exact"),
    ]:
        bad(["collective", CLUSTER, *args], fragment)


@test
def sweep_and_merge_options_are_strict():
    sweep = os.path.join(CONFIGS, "sweeps", "llama3-70b-p5-parallelism.json")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.jsonl")
        for args, fragment in [
            (["--jobs", "-4"], "--jobs"), (["--jobs", "0"], "--jobs"), (["--jobs", "1e9"], "--jobs"),
            (["--jobs", "100000"], "--jobs"), (["--shard-count", "0", "--shard-index", "0"], "--shard"),
            (["--shard-index", "5", "--shard-count", "2"], "--shard-index 5"),
            (["--shard-index", "99999999999", "--shard-count", "2"], "--shard-index"),
            (["--shard-index", "x"], "--shard-index"),
        ]:
            bad(["sweep", sweep, "--out", out, *args], fragment, out=out)


# ---------------------------------------------------------------- training scenarios -------------

@test
def run_refuses_integers_beyond_int_and_absurd_parallelism():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for assignment, fragment in [
            (f"parallelism.tensor_model_parallel_size={BIG}", "tensor_model_parallel_size"),
            (f"parallelism.pipeline_model_parallel_size={BIG}", "pipeline_model_parallel_size"),
            (f"parallelism.context_parallel_size={BIG}", "context_parallel_size"),
            (f"parallelism.expert_model_parallel_size={BIG}", "expert_model_parallel_size"),
            (f"parallelism.micro_batch_size={BIG}", "micro_batch_size"),
            (f"parallelism.global_batch_size={BIG}", "global_batch_size"),
            (f"parallelism.virtual_pipeline_model_parallel_size={BIG}", "virtual_pipeline"),
            ("parallelism.micro_batch_size=2147483647", "global_batch_size"),
            ("parallelism.tensor_model_parallel_size=2147483647", "tensor_model_parallel_size"),
            ("parallelism.tensor_model_parallel_size=1024", "tensor_model_parallel_size"),
            ("parallelism.pipeline_model_parallel_size=64", "pipeline_model_parallel_size"),
            ("parallelism.tensor_model_parallel_size=0", "tensor_model_parallel_size"),
            ("parallelism.tensor_model_parallel_size=-8", "tensor_model_parallel_size"),
            ("parallelism.tensor_model_parallel_size=2.5", "tensor_model_parallel_size"),
            ("parallelism.tensor_model_parallel_size=\"2\"", "tensor_model_parallel_size"),
            ("parallelism.data_parallel_size=3", "global_batch_size"),  # a 3-way job on part of the cluster: 128 / 3
            ("parallelism.data_parallel_size=1000", "a job that fits the cluster"),
            ("parallelism.pipeline_model_parallel_layout=((t*99999)*99999)*99999", "layout"),
            ("parallelism.pipeline_model_parallel_layout=t*99999999999999999999", "layout"),
            ("parallelism.pipeline_model_parallel_layout=" + "(" * 3000, "layout"),
            (f"cluster.nodes={BIG}", "/nodes"),
            ("cluster.nodes=0", "/nodes"),
            ("cluster.nodes=1000000", "GiB"),
            ("cluster.fabric.oversubscription=NaN", "oversubscription"),
            ("training.seq_length=0", "seq_length"),
            (f"training.seq_length={BIG}", "seq_length"),
            ("training.total_tokens=1e300", "total_tokens"),
            ("training.total_tokens=1e30", "at most 1e16"),
            ("training.train_iters=2147483647", "train_iters"),
            ("training.total_tokens=1e999", "total_tokens"),
            ("training.total_tokens=-1", "total_tokens"),
            (f"training.train_iters={2 ** 63}", "train_iters"),
            ("training.precision=7", "precision"),
            ("training.typo=1", "total_tokens, tp_comm_overlap, train_iters, use_transformer_engine_op_fuser, workload)"),
            (f"model.num_hidden_layers={BIG}", "num_hidden_layers"),
            ("model.num_hidden_layers=0", "num_hidden_layers"),
            ("model.hidden_size=-4096", "hidden_size"),
            ("model.base=no-such-model", "no-such-model"),
            ("model=no-such-model", "no-such-model"),
            ("cluster.base=/nonexistent/c.json", "/nonexistent/c.json"),
            ("cluster.base=" + "x" * 5000, "cannot open"),
            ("cluster.base=/tmp", "is a directory"),
            ("cluster.instance_type=p5.48xlarge\u00e9", "instance_type"),
            ("name=" + "n" * 5000, "scenario"),
        ]:
            if assignment.startswith("name="):
                # A long name is a valid name: a correct result.
                good(["run", TRAIN, "--set", assignment, "--json", out])
                os.remove(out)
                continue
            bad(["run", TRAIN, "--set", assignment, "--json", out], fragment, out=out)


@test
def set_and_unset_assignments_are_checked():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for args, fragment in [
            (["--set", "noequals"], "PATH=VALUE"), (["--set", "=4"], "PATH=VALUE"),
            (["--set", "a..b=1"], "empty key"), (["--set", "parallelism.tensor_model_parallel_size.x=1"], "not an object"),
            ([b"--set", b"name=\xff\xfe"], "UTF-8"), ([b"--set", b"parallelism.\xff=1"], "UTF-8"),
            (["--unset", "parallelism.no_such_key"], "no key"), (["--unset", "training.no.such"], "no key"),
            (["--set", "parallelism=null"], "parallelism"), (["--unset", "cluster"], "cluster"),
            (["--fidelity", "exact"], "--fidelity"), (["--trace", os.path.join(d, "none.json")], "none.json"),
            (["--trace", d], "is a directory"),
        ]:
            bad(["run", TRAIN, *args, "--json", out], fragment, out=out)
        bad(["run", os.path.join(d, "none.json"), "--json", out], "none.json", out=out)
        bad(["run", d, "--json", out], "is a directory", out=out)
        bad(["trace", TRAIN, "--set", f"parallelism.tensor_model_parallel_size={BIG}", "--out", out], "4294967296", out=out)
        bad(["trace", TRAIN, "--unset", "training.nothing", "--out", out], "no key", out=out)


@test
def unset_removes_a_recipe_layout_so_the_layer_count_can_change():
    # docs/cli.md: --set model.num_hidden_layers=40 on a recipe with a pipeline layout needs the layout gone.
    bad(["run", TRAIN_LAYOUT, "--set", "model.num_hidden_layers=40"], "--unset parallelism.pipeline_model_parallel_layout")
    doc = json.loads(good(["run", TRAIN_LAYOUT, "--set", "model.num_hidden_layers=40", "--unset",
                           "parallelism.pipeline_model_parallel_layout", "--json", "-"], timeout=120).stdout)
    assert "pipeline_model_parallel_layout" not in doc["scenario"]["parallelism"], doc["scenario"]["parallelism"]
    same = json.loads(good(["run", TRAIN_LAYOUT, "--set", "model.num_hidden_layers=40", "--set",
                            "parallelism.pipeline_model_parallel_layout=null", "--json", "-"], timeout=120).stdout)
    assert same["step_time_s"] == doc["step_time_s"]


@test
def checkpoint_plans_with_bad_values():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for assignment, fragment in [
            (f"checkpoint.interval_steps={BIG}", "interval_steps"), ("checkpoint.keep=0", "keep"),
            (f"checkpoint.files_per_rank={BIG}", "files_per_rank"), ("failures.relaunch=1e306h", "too large"),
            ("failures.relaunch=-1h", "negative"), (f"failures.trials={BIG}", "trials"),
            ("failures.gpu_failures_per_gpu_hour=-1", "gpu_failures_per_gpu_hour"),
            ("failures.gpu_failures_per_gpu_hour=1e999", "gpu_failures_per_gpu_hour"),
        ]:
            bad(["checkpoint", CKPT, "--set", assignment, "--json", out], fragment, out=out)
        bad(["checkpoint", CKPT, "--strategy", "floppy", "--json", out], "floppy", out=out)


# ---------------------------------------------------------------- serving -------------------------

@test
def serve_refuses_out_of_range_counts_and_tokens():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for assignment, fragment in [
            (f"serving.tensor_parallel_size={BIG}", "tensor_parallel_size"),
            (f"serving.pipeline_parallel_size={BIG}", "pipeline_parallel_size"),
            ("serving.replicas=2147483648", "replicas"),
            ("serving.replicas=2147483647", "replicas"),
            ("serving.replicas=1000000", "GPUs"),
            (f"serving.max_num_seqs={BIG}", "max_num_seqs"),
            (f"serving.max_num_batched_tokens={BIG}", "max_num_batched_tokens"),
            ("serving.block_size=0", "block_size"), (f"serving.block_size={BIG}", "block_size"),
            ("serving.gpu_memory_utilization=1e999", "gpu_memory_utilization"),
            ("serving.gpu_memory_utilization=NaN", "gpu_memory_utilization"),
            (f"workload.requests={BIG}", "requests"),
            ("workload.requests=2000000000", "requests"),
            ("workload.requests=0", "requests"),
            ("workload.requests=-5", "requests"),
            ("workload.output_tokens=3000000000", "output_tokens"),
            ("workload.input_tokens=0", "input_tokens"),
            ("workload.input_tokens=100000000", "input_tokens"),
            ("workload.output_tokens.mean=3000000000", "mean"),
            ("workload.output_tokens.max=-1", "max"),
            ("workload.output_tokens.sigma=NaN", "sigma"),
            ("workload.rate=-1/s", "rate"), ("workload.rate=1e999/s", "rate"), ("workload.rate=0/s", "rate"),
            ("workload.rate=fast", "rate"),
            (f"workload.samples_per_prompt={BIG}", "samples_per_prompt"),
            ("workload.seed=-1", "seed"), (f"workload.seed={2 ** 64}", "seed"),
            ("slo.percentile=1e999", "percentile"), ("slo.ttft=1e306h", "too large"),
        ]:
            bad(["serve", SERVE, "--set", assignment, "--json", out], fragment, out=out)


@test
def request_traces_are_read_strictly():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        header = "arrival_s,input_tokens,output_tokens\n"
        to_trace = ["--set", "workload.arrival=trace"]
        for key in ("requests", "rate", "input_tokens", "output_tokens"):
            to_trace += ["--unset", "workload." + key]
        cases = [
            ("t.csv", header + "0x1,100,10\n", "0x1"), ("t.csv", header + "0,0x64,10\n", "0x64"),
            ("t.csv", header + "inf,100,10\n", "inf"), ("t.csv", header + "nan,100,10\n", "nan"),
            ("t.csv", header + "0,100,10x\n", "10x"), ("t.csv", header + "0,1e12,10\n", "input_tokens"),
            ("t.csv", header + "0,100\n", "columns"), ("t.csv", "a,b,c\n0,1,2\n", "header"),
            ("t.csv", header + "-1,100,10\n", "arrival_s"), ("t.csv", header + "0, 100 ,1e999\n", "1e999"),
            ("t.csv", header, "no requests"), ("t.csv", "", "no requests"),
            ("t.jsonl", '{"arrival_s": 0, "input_tokens": 100, "output_tokens": 3000000000}\n', "output_tokens"),
            ("t.jsonl", '{"arrival_s": 0, "input_tokens": 100, "output_tokens": 10, "samples": 1e9}\n', "samples"),
            ("t.jsonl", '{"arrival_s": 0, "input_tokens": 100, "output_tokens": 1e999}\n', "JSON object"),
            ("t.jsonl", '{"arrival_s": 0, "input_tokens": 100\n', "JSON object"),
            ("t.jsonl", '[0, 100, 10]\n', "JSON object"),
            ("t.jsonl", '{"arrival_s": "0", "input_tokens": 100, "output_tokens": 10}\n', "arrival_s"),
            ("t.jsonl", b'{"arrival_s": 0, "input_tokens": 100, "output_tokens": 10, "\xff": 1}\n', "JSON object"),
        ]
        for name, content, fragment in cases:
            trace = write(d, name, content)
            bad(["serve", SERVE, *to_trace, "--set", "workload.trace=" + os.fsdecode(trace), "--json", out], fragment, out=out)
        bad(["serve", SERVE, *to_trace, "--set", "workload.trace=" + d, "--json", out], "is a directory", out=out)
        bad(["serve", SERVE, *to_trace, "--set", "workload.trace=" + os.path.join(d, "no.csv"), "--json", out], "no.csv", out=out)
        # Keys of the Poisson workload are refused by name with a trace.
        bad(["serve", SERVE, "--set", "workload.arrival=trace", "--set", "workload.trace=" + os.fsdecode(trace)],
            "/workload/requests", "arrival")


# ---------------------------------------------------------------- check, sweep, merge, report -----

@test
def check_sweep_merge_and_report_with_bad_files():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.file")
        empty_dir = os.path.join(d, "empty")
        os.mkdir(empty_dir)
        garbage = write(d, "garbage.json", '{"schema": "fmsim.plan/1", "command": ')
        not_object = write(d, "list.json", "[1]")
        utf8_name = write(d, b"p-\xff.json", "{}")
        deep = write(d, "deep.json", '{"a":' * 100000 + "1" + "}" * 100000)
        deep_line = write(d, "deep.jsonl", '{"index": 0, "a": ' + "[" * 100000 + "]" * 100000 + "}\n")
        huge_grid = write(d, "grid.json", json.dumps({
            "schema": "fmsim.sweep/1", "name": "g", "command": "run", "scenario": TRAIN,
            "grid": {f"training.k{i}": list(range(10)) for i in range(11)}}))
        for args, fragment in [
            (["check", os.path.join(d, "none.json")], "none.json"),
            (["check", empty_dir], "no plan files"),
            (["check", garbage], "malformed JSON"),
            (["check", not_object], "list.json"),
            (["check", utf8_name], "UTF-8"),
            (["check", "x" * 5000], "x" * 20),
            (["sweep", deep, "--out", out], "nested deeper"),
            (["sweep", huge_grid, "--out", out], "more than 100000 points"),
            (["merge", deep_line, "--out", out], "sweep line"),
            (["run", deep, "--json", out], "nested deeper"),
            (["report", deep, "--html", out], "nested deeper"),
            (["run", TRAIN, "--set", "name=" + "[" * 1000 + "]" * 1000, "--json", out], "nested deeper"),
            (["run", TRAIN, "--set", "model=" + d, "--json", out], "is a directory"),
            (["sweep", d, "--out", out], "is a directory"),
            (["sweep", os.path.join(d, "none.json"), "--out", out], "none.json"),
            (["sweep", garbage, "--out", out], "garbage.json"),
            (["sweep", not_object, "--out", out], "list.json"),
            (["sweep", utf8_name, "--out", out], "UTF-8"),
            (["sweep", "y" * 5000, "--out", out], "cannot open"),
            (["merge", d, "--out", out], "is a directory"),
            (["merge", os.path.join(d, "none.jsonl"), "--out", out], "none.jsonl"),
            (["merge", garbage, "--out", out], "garbage.json"),
            (["report", os.path.join(d, "none.json"), "--html", out], "none.json"),
            (["report", d, "--html", out], "is a directory"),
            (["report", garbage, "--html", out], "malformed JSON"),
            (["report", not_object, "--html", out], "list.json"),
            (["report", write(d, "r.json", '{"schema": "fmsim.nothing/1"}'), "--html", out], "schema"),
            (["report", write(d, "r2.json", '{"schema": "fmsim.run/1"}'), "--html", out], "r2.json"),
            (["report", write(d, "r3.json", '{"schema": 7}'), "--html", out], "r3.json"),
        ]:
            bad(args, fragment, out=out, codes=(1, 2) if args[0] == "check" else (2,))


if __name__ == "__main__":
    started = time.monotonic()
    try:
        run_tests()
    finally:
        print(f"bad-input battery: {time.monotonic() - started:.1f} s", file=sys.stderr)
