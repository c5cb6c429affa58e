#!/usr/bin/env python3
"""`fmsim search` on a serving search file (schema fmsim.serve-search/1): every layout gets the fewest
replicas that meet the SLOs at the offered rate (checked: one replica fewer misses them), the layouts are
ranked by the objective, refused layouts keep their reason, the winning scenario runs with `fmsim serve`
and meets the SLOs, the result validates against its schema, and bad specs exit 2 naming the key or the
closest layout. Usage: run_serve_search_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import tempfile

from cli_support import CONFIGS, FMSIM, TOPO, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-serve-search-tests-")
SPEC = os.path.abspath(os.path.join(CONFIGS, "search", "llama3.3-70b-serving.json"))
SCENARIO = os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"))


def search(spec, *args):
    out, best = os.path.join(TMP, "result.json"), os.path.join(TMP, "best.json")
    proc = subprocess.run([FMSIM, "search", spec, "--json", out, "--best", best, "--jobs", "2", *args], capture_output=True,
                          text=True, timeout=600, cwd=TMP)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        return json.load(f), best, proc


def small_spec(name, **changes):
    doc = {"schema": "fmsim.serve-search/1", "name": name, "scenario": SCENARIO,
           "clusters": [{"topology": os.path.abspath(os.path.join(TOPO, "p5-16node.json")), "max_nodes": 2},
                        {"topology": os.path.abspath(os.path.join(TOPO, "p5en-128node.json")), "max_nodes": 2}],
           "space": {"tensor_parallel_size": [2, 4, 8]}}
    doc.update(changes)
    return write(TMP, name + ".json", json.dumps(doc))


@test
def the_shipped_search_ranks_by_cost_with_the_fewest_replicas():
    doc, best, proc = search(SPEC)
    rows = doc["candidates"]
    # 4 instance types x TP 1-8 x (aggregated, prefill:decode 1:1 and 1:2)
    assert doc["layouts"] == 48 and len(rows) == 48
    feasible = [r for r in rows if r["feasible"]]
    assert feasible and rows[: len(feasible)] == feasible  # layouts that meet the SLOs come first
    costs = [r["usd_per_hour"] for r in feasible]
    assert costs == sorted(costs), costs
    # p4de (A100) has no FP8: refused with fmsim serve's reason; every other row has replicas and GPUs.
    assert all(not r["feasible"] and "fp8" in r["reason"] for r in rows if r["instance_type"] == "p4de.24xlarge")
    for r in feasible:
        assert r["gpus"] == r["replicas"] * r["tensor_parallel_size"] * r["pipeline_parallel_size"]
        assert r["ttft_p99_s"] <= 2.0 and r["tpot_p99_s"] <= 0.050, r
    # Disaggregated layouts keep their prefill:decode ratio, and the chosen pools meet the SLOs when served.
    split = [r for r in feasible if r["disaggregated"]]
    assert split, "some disaggregated layout meets the SLOs"
    for r in split:
        p, d = r["prefill_decode"]
        assert r["prefill_replicas"] * d == r["decode_replicas"] * p and r["replicas"] == r["prefill_replicas"] + r["decode_replicas"], r
    r = split[0]
    topo = os.path.abspath(os.path.join(TOPO, r["topology"] + ".json"))
    pools = json.dumps({"prefill": {"replicas": r["prefill_replicas"]}, "decode": {"replicas": r["decode_replicas"]}})
    served = run_json("serve", SCENARIO, "--set", f"cluster.base={topo}", "--set", f"cluster.nodes={r['nodes']}",
                      "--set", f"serving.tensor_parallel_size={r['tensor_parallel_size']}", "--set", f"serving.disaggregation={pools}")
    assert served["slo_met"] and served["disaggregated"], r
    # The winner's scenario runs as is and meets the SLOs at its cost.
    served = run_json("serve", best)
    assert served["slo_met"] and abs(served["usd_per_hour"] - feasible[0]["usd_per_hour"]) < 1e-6
    assert "best:" in proc.stdout and "meet the SLOs" in proc.stdout


@test
def decode_pools_may_take_their_own_tp():
    spec = small_spec("decode_tp", clusters=[{"topology": os.path.abspath(os.path.join(TOPO, "p5en-128node.json")), "max_nodes": 4}],
                      space={"tensor_parallel_size": [2, 4], "prefill_decode": [[2, 1]], "decode_tensor_parallel_size": [4, 8]})
    doc, best, proc = search(spec)
    rows = doc["candidates"]
    # TP 2 and 4, each aggregated and at 2:1 with a decode pool of TP 4 and of TP 8
    assert doc["layouts"] == 6 and len(rows) == 6, [r["tensor_parallel_size"] for r in rows]
    combos = {(r["tensor_parallel_size"], r["decode_tensor_parallel_size"]) for r in rows if r["disaggregated"]}
    assert combos == {(2, 4), (2, 8), (4, 4), (4, 8)}, combos
    assert all(r["decode_tensor_parallel_size"] is None for r in rows if not r["disaggregated"])
    mixed = [r for r in rows if r["feasible"] and r["disaggregated"] and r["decode_tensor_parallel_size"] != r["tensor_parallel_size"]]
    assert mixed, "a layout with pools of different TP meets the SLOs"
    r = mixed[0]
    # GPUs count each pool at its own TP, and the pools served as the search wrote them meet the SLOs.
    assert r["gpus"] == r["prefill_replicas"] * r["tensor_parallel_size"] + r["decode_replicas"] * r["decode_tensor_parallel_size"], r
    assert f"decode TP{r['decode_tensor_parallel_size']}" in proc.stdout
    topo = os.path.abspath(os.path.join(TOPO, r["topology"] + ".json"))
    pools = json.dumps({"prefill": {"replicas": r["prefill_replicas"]},
                        "decode": {"replicas": r["decode_replicas"], "tensor_parallel_size": r["decode_tensor_parallel_size"]}})
    served = run_json("serve", SCENARIO, "--set", f"cluster.base={topo}", "--set", f"cluster.nodes={r['nodes']}",
                      "--set", f"serving.tensor_parallel_size={r['tensor_parallel_size']}", "--set", f"serving.disaggregation={pools}")
    assert served["slo_met"] and served["cluster"]["gpus"] == r["gpus"], (served["cluster"], r)
    out = os.path.join(TMP, "bad.json")
    expect_bad_input(["search", small_spec("decode_tp_alone", space={"tensor_parallel_size": [2], "decode_tensor_parallel_size": [8]}),
                      "--json", out], ["decode_tensor_parallel_size", "prefill_decode"], out)


@test
def moe_layouts_search_expert_parallelism_too():
    moe = dict(json.load(open(SCENARIO)), model="qwen3-30b-a3b", name="qwen3-30b-a3b-serving")
    scenario = write(TMP, "moe-scenario.json", json.dumps(moe))
    spec = small_spec("moe", scenario=scenario, clusters=[{"topology": os.path.abspath(os.path.join(TOPO, "p5en-128node.json")), "max_nodes": 2}],
                      space={"tensor_parallel_size": [2, 4], "enable_expert_parallel": [False, True]})
    doc, best, proc = search(spec)
    rows = doc["candidates"]
    assert doc["layouts"] == 4 and {(r["tensor_parallel_size"], r["enable_expert_parallel"]) for r in rows} == {(2, False), (2, True), (4, False), (4, True)}
    assert "EP" in proc.stdout and "no-EP" in proc.stdout
    winner = json.load(open(best))
    assert winner["serving"]["enable_expert_parallel"] == rows[0]["enable_expert_parallel"]
    served = run_json("serve", best)
    assert served["slo_met"]


@test
def one_replica_fewer_misses_the_slos():
    doc, best, _ = search(small_spec("fewest"))
    for r in [r for r in doc["candidates"] if r["feasible"]][:3]:
        if r["replicas"] == 1:
            continue
        topo = os.path.abspath(os.path.join(TOPO, r["topology"] + ".json"))
        gpus = (r["replicas"] - 1) * r["tensor_parallel_size"]
        fewer = run_json("serve", SCENARIO, "--set", f"cluster.base={topo}", "--set", f"cluster.nodes={(gpus + 7) // 8}",
                         "--set", f"serving.replicas={r['replicas'] - 1}", "--set", f"serving.tensor_parallel_size={r['tensor_parallel_size']}")
        assert not fewer["slo_met"], r


@test
def the_gpu_objective_ranks_by_gpus():
    doc, _, _ = search(small_spec("gpus", objective="gpus"))
    gpus = [r["gpus"] for r in doc["candidates"] if r["feasible"]]
    assert gpus == sorted(gpus) and doc["objective"] == "gpus"


@test
def the_result_validates_against_its_schema():
    try:
        import jsonschema
    except ImportError:
        return
    with open(os.path.join(os.path.dirname(CONFIGS), "docs", "schema", "serve-search-result.schema.json")) as f:
        schema = json.load(f)
    doc, _, _ = search(small_spec("schema"))
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message[:300]


@test
def bad_serving_searches_exit_2():
    out = os.path.join(TMP, "bad.json")
    expect_bad_input(["search", small_spec("bad_key", space={"tensor_parallel_size": [2], "replicas": [1]}), "--json", out],
                     ["space", "replicas"], out)
    expect_bad_input(["search", small_spec("bad_tp", space={"tensor_parallel_size": [64]}), "--json", out], ["space", "NVLink"], out)
    strict = dict(json.load(open(SCENARIO)), slo={"ttft": "1ms", "tpot": "1ms", "percentile": 99})
    strict_path = write(TMP, "strict-scenario.json", json.dumps(strict))
    # Known only after the replica searches: -q keeps their progress lines off stderr.
    expect_bad_input(["-q", "search", small_spec("strict", scenario=strict_path), "--json", out], ["no layout meets the SLOs", "closest"], out)
    expect_bad_input(["search", small_spec("nosc", scenario=os.path.join(TMP, "missing.json")), "--json", out], ["missing.json"], out)
    expect_bad_input(["search", SPEC, "--resimulate", "3", "--json", out], ["serving search", "--resimulate"], out)


if __name__ == "__main__":
    run_tests()
