#!/usr/bin/env python3
"""End-to-end tests of fmsim run / fmsim trace: the result document, trace write-and-replay, default vs
full fidelity, the 1F1B bubble against its closed form, bandwidth monotonicity, and bad configurations.
Usage: run_training_tests.py FMSIM SOURCE_DIR"""
import json
import os
import shutil
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, write

SCENARIO = os.path.join(CONFIGS, "training", "llama3-70b-p5.json")


def scenario(directory, name, nodes, model, parallelism, training, base="p5-16node.json", extra_cluster=None):
    cluster = {"base": os.path.join(TOPO, base), "nodes": nodes}
    cluster.update(extra_cluster or {})
    doc = {"name": name, "cluster": cluster, "model": model, "parallelism": parallelism, "training": training}
    return write(directory, name + ".json", json.dumps(doc))


def run_step(*args):
    return run_json("run", *args)


@test
def run_emits_the_documented_fields_consistently():
    out = run_step(SCENARIO)
    for key in ["step_time_s", "tokens_per_s_per_gpu", "model_tflops_per_gpu", "mfu", "hbm_peak_bytes", "oom",
                "breakdown_s", "usd_per_step", "scenario"]:
        assert key in out, key
    assert out["schema"] == "fmsim.run/1"
    gpus, step = out["derived"]["gpus"], out["step_time_s"]
    # tokens/s/GPU x GPUs x step time = global batch x sequence length.
    assert abs(out["tokens_per_s_per_gpu"] * gpus * step - 128 * 8192) < 1e-6 * 128 * 8192
    # Model TFLOP/s = Megatron FLOPs / step / GPUs; MFU = that / BF16 peak (989.5 TFLOPS on H100).
    assert abs(out["model_tflops_per_gpu"] - out["model_flops_per_step"] / step / gpus / 1e12) < 1e-6
    assert abs(out["mfu"] - out["model_tflops_per_gpu"] / 989.5) < 1e-6
    # The breakdown partitions the step time.
    assert abs(sum(out["breakdown_s"].values()) - step) < 1e-6 * step, out["breakdown_s"]
    assert out["breakdown_s"]["compute"] > 0.5 * step
    # Cost: 8 nodes at the catalog's p5.48xlarge price for one step.
    assert abs(out["usd_per_step"] - out["usd_per_hour"] * step / 3600) < 1e-9
    assert out["scenario"]["parallelism"]["tensor_model_parallel_size"] == 4
    assert out["oom"] is False and out["hbm_peak_bytes"] < 80e9


@test
def set_overrides_any_scenario_path():
    base = run_step(SCENARIO)
    more = run_step(SCENARIO, "--set", "cluster.nodes=16", "--set", "parallelism.global_batch_size=256")
    assert more["derived"]["gpus"] == 128 and more["derived"]["data_parallel_size"] == 4
    assert more["scenario"]["cluster"]["nodes"] == 16
    # Twice the replicas with the same micro-batches per pipeline: about the same step time.
    assert abs(more["step_time_s"] / base["step_time_s"] - 1) < 0.05


@test
def trace_written_then_replayed_gives_the_same_step():
    with tempfile.TemporaryDirectory() as d:
        path = scenario(d, "small", 4, {"base": "llama3-8b", "num_hidden_layers": 8},
                        {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2, "global_batch_size": 32},
                        {"seq_length": 4096})
        direct = run_step(path)
        for fidelity in ["fast", "full"]:
            trace = os.path.join(d, f"trace-{fidelity}.json")
            proc = run("trace", path, "--out", trace, "--fidelity", fidelity)
            assert proc.returncode == 0, proc.stderr
            doc = json.load(open(trace))
            assert doc["schema"] == "fmsim.trace/1"
            types = {n["type"] for n in doc["nodes"]}
            assert {"COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE"} <= types, types
            replayed = run_step("--trace", trace)
            assert abs(replayed["step_time_s"] / direct["step_time_s"] - 1) < 1e-9, (fidelity, replayed["step_time_s"])


def fast_vs_full(path, tolerance=0.02):
    fast = run_step(path)
    full = run_step(path, "--fidelity", "full")
    assert full["simulation"]["simulated_ranks"] == full["derived"]["gpus"]
    assert abs(fast["step_time_s"] / full["step_time_s"] - 1) <= tolerance, (fast["step_time_s"], full["step_time_s"])


@test
def default_fidelity_agrees_with_full_within_2_percent():
    with tempfile.TemporaryDirectory() as d:
        small = {"base": "llama3-8b", "num_hidden_layers": 4}
        cases = [
            scenario(d, "tp-pp-dp", 4, small, {"tensor_model_parallel_size": 2, "pipeline_model_parallel_size": 2,
                                              "global_batch_size": 32}, {"seq_length": 2048}),
            scenario(d, "cp-dp-across-nodes", 4, small, {"tensor_model_parallel_size": 4, "context_parallel_size": 2,
                                                        "global_batch_size": 8, "use_distributed_optimizer": False},
                     {"seq_length": 4096, "overlap_grad_reduce": False}),
            scenario(d, "moe-ep-across-nodes", 4, {"base": "qwen3-30b-a3b", "num_hidden_layers": 4},
                     {"pipeline_model_parallel_size": 2, "expert_model_parallel_size": 16, "expert_tensor_parallel_size": 1,
                      "global_batch_size": 32}, {"seq_length": 2048}),
            scenario(d, "oversubscribed-256", 32, small, {"tensor_model_parallel_size": 8, "pipeline_model_parallel_size": 4,
                                                          "virtual_pipeline_model_parallel_size": 1, "global_batch_size": 32},
                     {"seq_length": 2048}, extra_cluster={"fabric": {"topology": "rail-optimized", "nodes_per_leaf": 8,
                                                                     "oversubscription": 2.0}}),
        ]
        for path in cases:
            fast_vs_full(path)


@test
def full_fidelity_says_its_cost_first_and_refuses_what_cannot_fit():
    # Issue 28: Llama-3.1-405B at its global batch of 512 is 51.7 million trace nodes at full fidelity, and
    # the process was killed at 23.8 GB with no word. The estimate comes first; past the memory available
    # (a global batch of 65,536: terabytes on any machine) it is a clear exit 2, run and trace alike.
    tmp = tempfile.mkdtemp(prefix="fmsim-full-cost-")
    big = os.path.join(CONFIGS, "training", "llama3.1-405b-p5.json")
    out = os.path.join(tmp, "out.json")
    bigger = ["--set", "parallelism.global_batch_size=65536", "--fidelity", "full"]
    expect_bad_input(["run", big, *bigger, "--json", out], ["--fidelity full would hold", "trace nodes of every rank", "available", "fast mode"], out)
    trace_out = os.path.join(tmp, "trace.json")
    expect_bad_input(["trace", big, *bigger, "--out", trace_out], ["--fidelity full would hold", "trace nodes of every rank"], trace_out)
    # The estimate is exact for a trace whose ranks all do the same work.
    proc = run("-v", "run", SCENARIO, "--fidelity", "full")
    assert proc.returncode == 0, proc.stderr
    estimate = [l for l in proc.stderr.splitlines() if "full fidelity: about" in l]
    built = [l for l in proc.stderr.splitlines() if "trace nodes on" in l]
    assert estimate and built, proc.stderr[-2000:]
    nodes = int(built[0].split(": ")[-1].split()[0])
    estimated = float(estimate[0].split("about ")[1].split()[0])
    assert abs(estimated - nodes) <= 1, (estimated, nodes)
    shutil.rmtree(tmp)


@test
def one_f_one_b_bubble_approaches_closed_form_when_communication_is_cheap():
    # 8 stages of one layer each on one node (NVLink sends), no data parallelism, a tiny vocabulary so the
    # first and last stages weigh the same as the others: bubble / step -> (p - 1) / (m + p - 1).
    with tempfile.TemporaryDirectory() as d:
        model = {"base": "llama3-8b", "num_hidden_layers": 8, "vocab_size": 1024}
        previous = 1.0
        for m in [8, 32]:
            path = scenario(d, f"bubble{m}", 1, model, {"pipeline_model_parallel_size": 8, "global_batch_size": m},
                            {"seq_length": 4096})
            out = run_step(path)
            bubble = out["breakdown_s"]["bubble"] / out["step_time_s"]
            expected = 7 / (m + 7)
            assert abs(bubble / expected - 1) < 0.15, (m, bubble, expected)
            assert bubble < previous
            previous = bubble


@test
def more_network_bandwidth_never_slows_a_step():
    with tempfile.TemporaryDirectory() as d:
        path = scenario(d, "dp-heavy", 4, {"base": "llama3-8b", "num_hidden_layers": 4},
                        {"tensor_model_parallel_size": 1, "pipeline_model_parallel_size": 2, "expert_model_parallel_size": 1,
                         "global_batch_size": 16}, {"seq_length": 2048, "overlap_grad_reduce": False})
        base = run_step(path)["step_time_s"]
        catalog = os.path.join(d, "catalog")
        shutil.copytree(os.path.join(TOPO, "catalog"), catalog)
        instances = json.load(open(os.path.join(catalog, "instances.json")))
        network = instances["instances"]["p5.48xlarge"]["network_bandwidth"]
        network["value"] = "6400Gbps"
        json.dump(instances, open(os.path.join(catalog, "instances.json"), "w"))
        proc = run("--catalog", catalog, "run", path, "--json", "-")
        assert proc.returncode == 0, proc.stderr
        faster = json.loads(proc.stdout)["step_time_s"]
        assert faster < base, (faster, base)
        slower = run_step(path, "--set", "cluster.fabric.oversubscription=4", "--set", "cluster.fabric.nodes_per_leaf=1")
        assert slower["step_time_s"] >= base * (1 - 1e-9)


@test
def timeline_is_chrome_trace_json():
    with tempfile.TemporaryDirectory() as d:
        timeline = os.path.join(d, "timeline.json")
        proc = run("run", SCENARIO, "--timeline", timeline)
        assert proc.returncode == 0, proc.stderr
        events = json.load(open(timeline))["traceEvents"]
        slices = [e for e in events if e["ph"] == "X"]
        assert slices and all(e["dur"] > 0 and e["ts"] >= 0 for e in slices)
        names = {e["args"]["name"] for e in events if e["ph"] == "M"}
        assert any(n.startswith("node ") for n in names) and any("compute" in n for n in names)


@test
def moe_all_to_all_overlap_hides_only_the_all_to_alls():
    # overlap_moe_expert_parallel_comm pairs one micro-batch's forward with another's backward so that
    # the EP all-to-alls (here across 4 nodes) run beside compute. It can hide them, never more: the step
    # shrinks, by at most the exposed all-to-all time it had, and default and full fidelity still agree.
    with tempfile.TemporaryDirectory() as d:
        moe = {"base": "qwen3-30b-a3b", "num_hidden_layers": 8}
        par = {"pipeline_model_parallel_size": 2, "virtual_pipeline_model_parallel_size": 2,
               "expert_model_parallel_size": 16, "global_batch_size": 32}
        plain = scenario(d, "moe-plain", 4, moe, par, {"seq_length": 4096})
        overlapped = scenario(d, "moe-overlap", 4, moe, par, {"seq_length": 4096, "overlap_moe_expert_parallel_comm": True})
        before, after = run_step(plain), run_step(overlapped)
        exposed_before = before["breakdown_s"]["ep_comm"]
        assert exposed_before > 0.05 * before["step_time_s"], before["breakdown_s"]
        assert after["step_time_s"] < before["step_time_s"], (after["step_time_s"], before["step_time_s"])
        assert after["step_time_s"] >= before["step_time_s"] - exposed_before - 1e-9
        assert after["breakdown_s"]["ep_comm"] < exposed_before
        # One more warm-up forward (MLM get_pp_rank_microbatches): one more micro-batch in flight.
        assert after["memory"]["activations_bytes"] > before["memory"]["activations_bytes"]
        fast_vs_full(overlapped)
        assert "EP all-to-all overlap" in run("run", overlapped).stdout
        out = os.path.join(d, "out.json")
        expect_bad_input(["run", SCENARIO, "--set", "training.overlap_moe_expert_parallel_comm=true", "--json", out],
                         ["overlap_moe_expert_parallel_comm", "mixture-of-experts"], out)
        expect_bad_input(["run", plain, "--set", "parallelism.virtual_pipeline_model_parallel_size=1", "--set",
                          "training.overlap_moe_expert_parallel_comm=true", "--json", out],
                         ["virtual_pipeline_model_parallel_size >= 2"], out)
        expect_bad_input(["run", plain, "--set", "training.delay_wgrad_compute=true", "--json", out],
                         ["delay_wgrad_compute", "overlap_moe_expert_parallel_comm"], out)


@test
def bad_training_configs_exit_2_with_the_reason():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.tensor_model_parallel_size=3", "--json", out],
                         ["tensor_model_parallel_size", "not divisible"], out)
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.tensor_model_parallel_size=16", "--set", "cluster.nodes=16",
                          "--set", "parallelism.pipeline_model_parallel_size=1", "--set", "parallelism.virtual_pipeline_model_parallel_size=1",
                          "--set", "parallelism.pipeline_model_parallel_layout=", "--json", out], ["16", "key/value heads"], out)
        expect_bad_input(["run", SCENARIO, "--set", "cluster.nodes=3", "--json", out], ["24 GPUs are not divisible by TP x PP x CP"], out)
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.global_batch_size=129", "--json", out],
                         ["global_batch_size", "multiple of micro_batch_size"], out)
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.pipeline_model_parallel_layout=", "--set",
                          "parallelism.virtual_pipeline_model_parallel_size=1", "--set", "training.seq_length=32768", "--json", out],
                         ["does not fit", "activations"], out)
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.tensor_parallel=2", "--json", out], ["unknown key 'tensor_parallel'"], out)
        expect_bad_input(["run", SCENARIO, "--set", "model=llama-9000", "--json", out], ["no such preset", "llama3-70b"], out)
        expect_bad_input(["run", SCENARIO, "--set", "training.precision=fp4", "--json", out], ["precision", "fp8"], out)
        expect_bad_input(["run", SCENARIO, "--set", "parallelism.pipeline_model_parallel_layout=Et|tL", "--json", out],
                         ["pipeline layout", "40 stages"], out)
        expect_bad_input(["run", SCENARIO, "--set", "cluster.base=" + os.path.join(TOPO, "p4de-2node.json"), "--set",
                          "cluster.nodes=8", "--json", out], ["no FP8"], out)
        broken = write(d, "trace.json", json.dumps({"schema": "fmsim.trace/1", "world_size": 2, "ranks": [0], "communicators": [],
                                                    "model_flops_per_step": 1e15, "tokens_per_step": 4096,
                                                    "nodes": [{"id": 0, "rank": 0, "type": "COMP_NODE", "data_deps": [5]}]}))
        expect_bad_input(["run", SCENARIO, "--trace", broken, "--json", out], ["trace.json", "/nodes/0/data_deps/0", "5", "the id of a node"], out)


run_tests()
