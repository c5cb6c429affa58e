#!/usr/bin/env python3
"""`fmsim run` on RL post-training scenarios (training.workload "rl"): the iteration is the sum (or the
overlap) of its phases, each phase agrees with the part of fmsim it comes from (the rollout with `fmsim
serve`, the update with `fmsim run` of the same training step), the weight transfer carries a BF16 copy of
the policy, PPO scores and trains more than GRPO, the result validates against its schema, and bad RL
input exits 2 naming the key. Usage: run_rl_tests.py FMSIM SOURCE_DIR"""
import copy
import json
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-rl-tests-")
SCENARIO = os.path.join(CONFIGS, "training", "grpo-llama3.1-8b-p5en.json")
BASE = json.load(open(SCENARIO))
BASE["cluster"]["base"] = os.path.abspath(os.path.join(TOPO, "p5en-128node.json"))
# Llama-3.1-8B: untied embedding and head, 32 layers of GQA attention (8 KV heads) and a SwiGLU MLP.
H, FFN, KV, VOCAB, LAYERS = 4096, 14336, 1024, 128256, 32
LLAMA_8B_PARAMETERS = 2 * VOCAB * H + LAYERS * (H * (H + 2 * KV) + H * H + 3 * H * FFN + 2 * H) + H


def scenario(name, **rl_changes):
    doc = copy.deepcopy(BASE)
    doc["name"] = name
    doc["rl"].update(rl_changes)
    return write(TMP, name + ".json", json.dumps(doc))


@test
def colocated_iteration_is_the_sum_of_its_phases():
    r = run_json("run", scenario("colocated"))
    b = r["breakdown_s"]
    assert r["schema"] == "fmsim.rl/1" and r["placement"] == "colocated"
    assert abs(r["iteration_s"] - (b["generation"] + b["forward"] + b["update"] + b["weight_sync"] + b["handover"])) < 1e-9 * r["iteration_s"]
    assert 0 < b["generation_tail"] < b["generation"]
    assert r["samples"] == 256 * 8 and r["roles"]["rollout"]["gpus"] == r["roles"]["trainer"]["gpus"] == 32
    assert b["handover"] > 0 and r["handover_bytes_per_gpu"] > 0
    assert abs(r["samples_per_s"] * r["iteration_s"] - r["samples"]) < 1e-6 * r["samples"]
    assert abs(r["usd_per_iteration"] - r["usd_per_hour"] * r["iteration_s"] / 3600) < 1e-9 * r["usd_per_iteration"]


@test
def the_handover_and_the_reference_swap_are_their_bytes_over_the_host_link():
    host_Bps = 52e9  # p5en.48xlarge's PCIe Gen5 host link (catalog)
    base = run_json("run", scenario("handover"))
    b = base["breakdown_s"]
    # Colocated with offload: the trainer's state and the engine's weights, each out to host memory and back.
    assert abs(b["handover"] - 2 * base["handover_bytes_per_gpu"] / host_Bps) < 1e-9 * b["handover"]
    # The engine (vLLM, TP 1, BF16) sleeps with its whole copy of Llama-3.1-8B on each GPU: the handover
    # holds it besides the trainer's state (TP 2: half the weights, their gradients, a sharded optimizer).
    engine = 2 * LLAMA_8B_PARAMETERS
    assert base["handover_bytes_per_gpu"] > engine, base["handover_bytes_per_gpu"]
    tp2 = run_json("run", scenario("handover-tp2", rollout={"engine": "vllm", "tensor_parallel_size": 2, "precision": "bf16"}))
    assert abs((base["handover_bytes_per_gpu"] - tp2["handover_bytes_per_gpu"]) - engine / 2) < 0.01 * engine / 2
    # A host-resident reference: three copies of the trainer's weight shard (TP 2, BF16) in the forward phase.
    swapped = run_json("run", scenario("reference-on-host", reference_on_host=True))
    shard = 2 * LLAMA_8B_PARAMETERS / 2
    assert abs(swapped["reference_swap_s"] - 3 * shard / host_Bps) < 0.01 * swapped["reference_swap_s"], swapped["reference_swap_s"]
    assert abs(swapped["breakdown_s"]["forward"] - b["forward"] - swapped["reference_swap_s"]) < 1e-6 * b["forward"]
    assert base["reference_swap_s"] == 0


@test
def disaggregated_pools_alternate_or_overlap_as_the_staleness_says():
    sync = run_json("run", scenario("sync", placement="disaggregated", staleness=0, offload=False,
                                    rollout={"engine": "vllm", "tensor_parallel_size": 1, "precision": "bf16", "nodes": 2}))
    b = sync["breakdown_s"]
    assert sync["roles"]["rollout"]["gpus"] == 16 and sync["roles"]["trainer"]["gpus"] == 16 and b["handover"] == 0
    assert abs(sync["iteration_s"] - (b["generation"] + b["weight_sync"] + b["forward"] + b["update"])) < 1e-9 * sync["iteration_s"]
    lagged = run_json("run", scenario("lagged", placement="disaggregated", staleness=1, offload=False,
                                      rollout={"engine": "vllm", "tensor_parallel_size": 1, "precision": "bf16", "nodes": 2}))
    c = lagged["breakdown_s"]
    assert abs(lagged["iteration_s"] - (max(c["generation"], c["forward"] + c["update"]) + c["weight_sync"])) < 1e-9 * lagged["iteration_s"]
    assert lagged["iteration_s"] < sync["iteration_s"]
    # With a lag the rollout never drains: an iteration is half of two iterations' prompts generated back
    # to back (one long tail between them), never more than one iteration generated alone.
    assert c["generation"] <= b["generation"] and c["generation_tail"] < b["generation_tail"]
    serve = {"name": "rollout2", "cluster": dict(BASE["cluster"], nodes=2), "model": BASE["model"],
             "serving": {"engine": "vllm", "tensor_parallel_size": 1, "precision": "bf16", "replicas": 16},
             "workload": {"arrival": "offline", "requests": 2 * 2048, "input_tokens": BASE["rl"]["prompt_tokens"],
                          "output_tokens": BASE["rl"]["response_tokens"], "seed": 1}}
    served = run_json("serve", write(TMP, "rollout2-serve.json", json.dumps(serve)))
    assert abs(served["duration_s"] / 2 - c["generation"]) < 1e-9 * served["duration_s"], (served["duration_s"], c)
    # The transfer crosses the network now; a BF16 copy either way.
    assert lagged["weight_sync_bytes"] == sync["weight_sync_bytes"] == 2 * LLAMA_8B_PARAMETERS


@test
def the_rollout_is_the_serving_simulation_of_its_prompts():
    r = run_json("run", scenario("rollout"))
    serve = {"name": "rollout", "cluster": BASE["cluster"], "model": BASE["model"],
             "serving": dict(BASE["rl"]["rollout"], replicas=32),
             "workload": {"arrival": "offline", "requests": 2048, "input_tokens": BASE["rl"]["prompt_tokens"],
                          "output_tokens": BASE["rl"]["response_tokens"], "seed": 1}}
    served = run_json("serve", write(TMP, "rollout-serve.json", json.dumps(serve)))
    assert abs(served["duration_s"] - r["breakdown_s"]["generation"]) < 1e-9 * served["duration_s"], (served["duration_s"], r["breakdown_s"])
    assert abs(served["output_tokens_per_s"] - r["roles"]["rollout"]["output_tokens_per_s"]) < 1e-6 * served["output_tokens_per_s"]


@test
def the_update_is_the_training_step_of_the_packed_samples():
    r = run_json("run", scenario("update"))
    train = copy.deepcopy(BASE)
    del train["rl"]
    train["training"]["workload"] = "sft"
    train["training"]["packing"] = {"mean_sequence_length": r["mean_prompt_tokens"] + r["mean_response_tokens"],
                                    "packing_efficiency": 0.95}
    train["parallelism"]["global_batch_size"] = r["packed_rows_per_step"]
    step = run_json("run", write(TMP, "update-train.json", json.dumps(train)))
    assert abs(step["step_time_s"] - r["update_step_s"]) < 1e-9 * step["step_time_s"]
    assert r["update_steps"] == 4 and abs(r["breakdown_s"]["update"] - 4 * r["update_step_s"]) < 1e-9 * r["breakdown_s"]["update"]
    # Every sample's tokens fit the optimizer steps' packed rows.
    tokens = r["samples"] * (r["mean_prompt_tokens"] + r["mean_response_tokens"])
    assert r["update_steps"] * r["packed_rows_per_step"] * r["seq_length"] * 0.95 >= tokens


@test
def without_packing_every_sample_is_a_row_padded_to_the_longest():
    packed = run_json("run", scenario("packed"))
    r = run_json("run", scenario("unpacked", sequence_packing=False))
    assert r["sequence_packing"] is False and packed["sequence_packing"] is True
    # Every sample a row of its own: the optimizer steps hold the samples (rounded up to micro-batch x DP).
    assert r["update_steps"] * r["packed_rows_per_step"] >= r["samples"]
    assert r["update_steps"] * (r["packed_rows_per_step"] - r["roles"]["trainer"]["data_parallel_size"]) < r["samples"]
    # Each row is padded to the longest sample, which seq_length bounds; the mean sample is shorter.
    mean = r["mean_prompt_tokens"] + r["mean_response_tokens"]
    assert mean < r["sample_row_tokens"] <= r["seq_length"], (mean, r["sample_row_tokens"])
    assert abs(packed["sample_row_tokens"] - mean) < 1e-6 * mean
    # The update is the training step of those padded rows.
    train = copy.deepcopy(BASE)
    del train["rl"]
    train["training"]["workload"] = "sft"
    train["training"]["seq_length"] = int(r["sample_row_tokens"])
    train["parallelism"]["global_batch_size"] = r["packed_rows_per_step"]
    step = run_json("run", write(TMP, "unpacked-train.json", json.dumps(train)))
    assert abs(step["step_time_s"] - r["update_step_s"]) < 1e-9 * step["step_time_s"]
    # Padding costs work: the update and the forward passes take longer than packed; generation is the same.
    assert r["breakdown_s"]["update"] > packed["breakdown_s"]["update"]
    assert r["breakdown_s"]["forward"] > packed["breakdown_s"]["forward"]
    assert r["breakdown_s"]["generation"] == packed["breakdown_s"]["generation"]


@test
def the_weight_transfer_is_the_collective_fmsim_collective_times():
    # Colocated, TP1 rollout from a TP2 trainer: each GPU gathers a full BF16 copy from its TP pair.
    r = run_json("run", scenario("sync-colocated"))
    size = str(int(r["weight_sync_bytes"]) // 8 * 8)
    topo = BASE["cluster"]["base"]
    coll = run_json("collective", topo, "--op", "all_gather", "--gpus", "2", "-b", size, "-e", size)
    assert abs(coll["rows"][0]["time_s"] - r["breakdown_s"]["weight_sync"]) < 1e-3 * coll["rows"][0]["time_s"], (coll["rows"][0], r["breakdown_s"])
    # Disaggregated over EFA is slower than the NVLink gather of the same bytes, and more rollout replicas
    # never make the broadcast faster.
    two = run_json("run", scenario("sync-two", placement="disaggregated", offload=False,
                                   rollout={"engine": "vllm", "tensor_parallel_size": 1, "nodes": 1}))
    three = run_json("run", scenario("sync-three", placement="disaggregated", offload=False,
                                     rollout={"engine": "vllm", "tensor_parallel_size": 1, "nodes": 3}))
    assert two["breakdown_s"]["weight_sync"] > r["breakdown_s"]["weight_sync"]
    assert three["breakdown_s"]["weight_sync"] >= two["breakdown_s"]["weight_sync"]
    # A TP2 rollout: by default (weight_sync full, as NeMo RL, veRL and OpenRLHF refit) each GPU still gathers
    # every tensor whole and keeps its half; sharded, it gathers only its half.
    rollout2 = {"engine": "vllm", "tensor_parallel_size": 2}
    for mode, share in (("full", 1), ("sharded", 2)):
        t = run_json("run", scenario("sync-" + mode, weight_sync=mode, rollout=rollout2))
        size = str(int(t["weight_sync_bytes"] / share) // 8 * 8)
        coll = run_json("collective", topo, "--op", "all_gather", "--gpus", "2", "-b", size, "-e", size)
        assert abs(coll["rows"][0]["time_s"] - t["breakdown_s"]["weight_sync"]) < 1e-3 * coll["rows"][0]["time_s"], (mode, coll["rows"][0], t["breakdown_s"])


@test
def ppo_scores_and_trains_more_than_grpo():
    grpo = run_json("run", scenario("grpo"))
    ppo = run_json("run", scenario("ppo", algorithm="ppo", group_size=8))
    assert grpo["forward_passes"] == 2 and ppo["forward_passes"] == 3
    assert ppo["update_steps"] == 2 * grpo["update_steps"]
    assert ppo["iteration_s"] > grpo["iteration_s"]
    # A bigger group generates more: more responses never take less time.
    bigger = run_json("run", scenario("bigger", group_size=16))
    assert bigger["breakdown_s"]["generation"] >= grpo["breakdown_s"]["generation"]


@test
def the_result_validates_against_its_schema():
    try:
        import jsonschema
    except ImportError:
        return
    with open(os.path.join(os.path.dirname(CONFIGS), "docs", "schema", "rl.schema.json")) as f:
        schema = json.load(f)
    for doc in (run_json("run", scenario("schema")),
                run_json("run", scenario("schema2", placement="disaggregated", staleness=1, offload=False,
                                         rollout={"engine": "vllm", "tensor_parallel_size": 2, "nodes": 1}))):
        errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
        assert not errors, errors[0].message[:300]


@test
def the_text_summary_names_every_phase():
    proc = run("run", scenario("text"))
    assert proc.returncode == 0, proc.stderr
    for word in ("GRPO RL iteration", "generation", "forward", "update", "weight sync", "handover", "samples/s"):
        assert word in proc.stdout, word


@test
def the_timeline_report_and_metrics_show_the_same_iteration():
    result, timeline, html = (os.path.join(TMP, n) for n in ("tl.json", "tl-trace.json", "tl.html"))
    for placement in ({}, {"placement": "disaggregated", "staleness": 1, "offload": False,
                           "rollout": {"engine": "vllm", "tensor_parallel_size": 1, "nodes": 2}}):
        proc = run("run", scenario("timeline", **placement), "--json", result, "--timeline", timeline)
        assert proc.returncode == 0, proc.stderr
        doc, trace = json.load(open(result)), json.load(open(timeline))
        spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
        assert len(spans) == len(doc["timeline"]) > 0
        end = max(s["end_s"] for s in doc["timeline"])
        assert abs(end - doc["iteration_s"]) < 1e-9 * doc["iteration_s"], (end, doc["iteration_s"])
        # Each phase's spans add up to its breakdown entry (colocated: the transfer shows on both lanes).
        for phase in ("generation", "forward", "update", "handover"):
            total = sum(s["end_s"] - s["start_s"] for s in doc["timeline"] if s["phase"] == phase)
            assert abs(total - doc["breakdown_s"][phase]) < 1e-9 * max(1.0, total), phase
        # A role never runs two phases at once.
        for role in ("rollout", "trainer"):
            lane = sorted((s["start_s"], s["end_s"]) for s in doc["timeline"] if s["role"] == role)
            assert all(a[1] <= b[0] + 1e-9 for a, b in zip(lane, lane[1:])), lane
        proc = run("report", result, "--html", html)
        assert proc.returncode == 0, proc.stderr
        page = open(html).read()
        assert "One iteration in time" in page and "<svg" in page and doc["name"] in page
        metrics = run("report", result, "--prometheus", "-")
        assert metrics.returncode == 0, metrics.stderr
        line = [l for l in metrics.stdout.splitlines() if l.startswith("fmsim_rl_iteration_seconds")][0]
        assert abs(float(line.split()[-1]) - doc["iteration_s"]) < 1e-6 * doc["iteration_s"]


@test
def roles_take_part_of_an_nvl72_rack():
    # GB200 NVL72 (4-GPU instances): an 8-GPU job (rl.nodes 2) colocated uses 8 GPUs, bills 2 instances;
    # split 1 + 1 the rollout and the trainer share the rack, so the weights cross NVLink, not the network.
    doc = copy.deepcopy(BASE)
    doc["cluster"] = {"base": os.path.abspath(os.path.join(TOPO, "dgx-gb200-nvl72-8rack-ib.json")), "ultraservers": 1}
    doc["parallelism"]["tensor_model_parallel_size"] = 1
    doc["rl"]["nodes"] = 2
    doc["rl"]["prompts_per_iteration"] = 64
    colocated = run_json("run", write(TMP, "gb200-8.json", json.dumps(doc)))
    assert colocated["roles"]["trainer"]["gpus"] == colocated["roles"]["rollout"]["gpus"] == 8, colocated["roles"]
    assert colocated["cluster"]["nodes"] == 2 and colocated["cluster"]["gpus"] == 8, colocated["cluster"]
    split = copy.deepcopy(doc)
    split["rl"].update({"placement": "disaggregated", "offload": False,
                        "rollout": {"engine": "vllm", "tensor_parallel_size": 1, "precision": "bf16", "nodes": 1}})
    r = run_json("run", write(TMP, "gb200-4-4.json", json.dumps(split)))
    assert r["roles"]["trainer"]["gpus"] == r["roles"]["rollout"]["gpus"] == 4, r["roles"]
    # Four TP1 rollout replicas each receive a whole BF16 copy: one broadcast over the rack's 8 GPUs
    # (the trainer's 4 and the rollout's 4) inside one NVLink domain, as `fmsim collective` times it.
    size = str(int(r["weight_sync_bytes"]) // 8 * 8)
    topo = doc["cluster"]["base"]
    coll = run_json("collective", topo, "--op", "broadcast", "--gpus", "8", "-b", size, "-e", size)
    assert abs(r["breakdown_s"]["weight_sync"] / coll["rows"][0]["time_s"] - 1) < 1e-3, (coll["rows"][0], r["breakdown_s"])
    out = os.path.join(TMP, "bad-nodes.json")
    too_many = copy.deepcopy(doc)
    too_many["rl"]["nodes"] = 19
    expect_bad_input(["run", write(TMP, "gb200-19.json", json.dumps(too_many)), "--json", out], ["/rl/nodes = 19", "18 instances"], out)
    # A data-parallel size larger than the trainer's GPUs (its rack holds more, the job does not).
    wide = copy.deepcopy(doc)
    wide["parallelism"]["data_parallel_size"] = 16
    expect_bad_input(["run", write(TMP, "gb200-dp16.json", json.dumps(wide)), "--json", out], ["data_parallel_size = 16", "trainer's 8"], out)
    # A rollout replica wider than the trainer (TP 8 on 2 instances, a 4-GPU trainer): the shard goes from
    # a trainer GPU to the replica, then to the others.
    wider = copy.deepcopy(doc)
    wider["rl"].update({"nodes": 3, "placement": "disaggregated", "offload": False,
                        "rollout": {"engine": "vllm", "tensor_parallel_size": 8, "precision": "bf16", "nodes": 2}})
    r = run_json("run", write(TMP, "gb200-wide-rollout.json", json.dumps(wider)))
    assert r["roles"]["rollout"]["gpus"] == 8 and r["breakdown_s"]["weight_sync"] > 0, r["roles"]


@test
def bad_rl_input_exits_2():
    out = os.path.join(TMP, "bad.json")
    cases = [
        (scenario("zero_group", group_size=0), ["/rl/group_size", "0"]),
        (scenario("swap_without_reference", reference_model=False, reference_on_host=True), ["/rl/reference_on_host", "without a reference model"]),
        (scenario("bad_weight_sync", weight_sync="partial"), ["/rl/weight_sync", "partial", "full"]),
        (scenario("stale_colocated", staleness=1), ["/rl/staleness", "disaggregated"]),
        (scenario("too_many_rollout_nodes", placement="disaggregated", offload=False,
                  rollout={"engine": "vllm", "tensor_parallel_size": 1, "nodes": 4}), ["/rl/rollout/nodes", "trainer"]),
        (scenario("no_rollout_nodes", placement="disaggregated", offload=False,
                  rollout={"engine": "vllm", "tensor_parallel_size": 1}), ["rollout", "nodes"]),
        (scenario("bad_tp", rollout={"engine": "vllm", "tensor_parallel_size": 3}), ["tensor_parallel_size", "3"]),
        (scenario("bad_length", response_tokens=-5), ["/rl/response_tokens"]),
        (scenario("unknown_key", temperature=0.7), ["/rl", "temperature"]),
        (scenario("packing_efficiency_unpacked", sequence_packing=False, packing_efficiency=0.9),
         ["/rl/packing_efficiency", "sequence_packing false"]),
    ]
    for path, fragments in cases:
        expect_bad_input(["run", path, "--json", out], fragments, out)
    # A trainer layout that cannot hold the model: Llama-3.1-8B with TP1 and no sharding needs more HBM than the GPU has at this row length.
    big = copy.deepcopy(BASE)
    big["model"] = "llama3-70b"
    big["parallelism"]["tensor_model_parallel_size"] = 1
    big["parallelism"]["use_distributed_optimizer"] = False
    expect_bad_input(["run", write(TMP, "oom.json", json.dumps(big)), "--json", out], ["does not fit"], out)
    # Options of a training step that an RL iteration does not have.
    expect_bad_input(["run", SCENARIO, "--fidelity", "full", "--json", out], ["--fidelity", "RL"], out)
    # Other subcommands name the workload they cannot take.
    expect_bad_input(["trace", SCENARIO, "--out", out], ["/training/workload", "fmsim run"], out)


if __name__ == "__main__":
    run_tests()
