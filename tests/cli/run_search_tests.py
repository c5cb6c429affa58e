#!/usr/bin/env python3
"""End-to-end tests of `fmsim search`: pruning (Megatron's divisibility rules and the memory estimate), the
analytic tier's ranking order and step time against `fmsim run`, the search's pick within 2 % of the
exhaustive best by simulation, the winning scenario file, progress on stderr, and bad specs (exit 2 naming
the limit and the closest candidate). Usage: run_search_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import tempfile

from cli_support import CONFIGS, FMSIM, TOPO, expect_bad_input, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-search-tests-")
# Stated in docs/model.md ("Search: the analytic tier"): the analytic step is within this fraction of the
# simulated one on these problems.
STEP_TOLERANCE = 0.05


def spec(name, **changes):
    doc = {
        "schema": "fmsim.search/1",
        "name": name,
        "scenario": os.path.join(CONFIGS, "training", "llama3-70b-p5.json"),
        "clusters": [{"topology": os.path.join(TOPO, "p5-16node.json"), "nodes": [16]}],
        "run": {"global_batch_size": [128]},
        "space": {"tensor_model_parallel_size": [4, 8], "pipeline_model_parallel_size": [1, 2, 4],
                  "virtual_pipeline_model_parallel_size": [1, 5], "context_parallel_size": [1, 2],
                  "micro_batch_size": [1], "recompute_granularity": ["none", "selective"]},
        "limits": {"hbm_fraction": 0.95},
        "objective": "tokens_per_s_per_gpu",
    }
    doc.update(changes)
    return write(TMP, name + ".json", json.dumps(doc))


def search(path, *args):
    best = os.path.join(TMP, os.path.basename(path) + "-best.json")
    proc = subprocess.run([FMSIM, "search", path, "--json", "-", "--best", best, "--jobs", "2", *args], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout), best, proc.stderr


SMALL = spec("small")


@test
def pruning_drops_indivisible_and_oversized_layouts_and_keeps_valid_ones():
    doc, _, _ = search(SMALL, "--resimulate", "0", "--top", "1000")
    assert doc["enumerated"] == 2 * 3 * 2 * 2 * 2 == 48
    assert doc["pruned"]["divisibility (Megatron's rules)"] > 0      # PP1 with VP5
    assert doc["pruned"]["/limits/hbm_fraction (memory)"] > 0        # TP4 PP1 without recompute
    assert doc["ranked"] == len(doc["top"]) == 48 - sum(doc["pruned"].values())
    for row in doc["top"]:
        p = row["parallelism"]
        assert p["tp"] * p["pp"] * p["cp"] * p["dp"] == 128
        assert not (p["pp"] == 1 and p["vp"] > 1)
        assert row["memory_bytes"] <= 0.95 * row["hbm_bytes"]


@test
def analytic_tier_ranks_like_the_simulation_and_agrees_within_the_stated_tolerance():
    doc, _, _ = search(SMALL, "--resimulate", "8", "--top", "8")
    rows = doc["top"]
    assert all(r["simulated"] for r in rows)
    for r in rows:
        error = abs(r["analytic_step_time_s"] / r["step_time_s"] - 1)
        assert error <= STEP_TOLERANCE, (r["layout"], r["analytic_step_time_s"], r["step_time_s"])
    # Rows are in simulated order; count the pairs the analytic tier orders the other way (beyond ties of 1 %).
    pairs = inversions = 0
    for i in range(len(rows)):
        for j in range(i + 1, len(rows)):
            if rows[j]["step_time_s"] > 1.01 * rows[i]["step_time_s"]:
                pairs += 1
                inversions += rows[j]["analytic_step_time_s"] < rows[i]["analytic_step_time_s"]
    assert pairs > 0 and inversions <= pairs // 10, (inversions, pairs)


@test
def the_pick_is_within_2_percent_of_the_exhaustive_best():
    exhaustive, _, _ = search(SMALL, "--resimulate", "1000", "--top", "1000")
    assert all(r["simulated"] for r in exhaustive["top"])
    best = min(r["step_time_s"] for r in exhaustive["top"])
    picked, best_file, _ = search(SMALL, "--resimulate", "3")
    assert picked["top"][0]["step_time_s"] <= 1.02 * best, (picked["top"][0], best)
    # The winning scenario file runs as it is and gives the search's figure.
    run_doc = subprocess.run([FMSIM, "run", best_file, "--json", "-"], capture_output=True, text=True, timeout=600)
    assert run_doc.returncode == 0, run_doc.stderr
    assert abs(json.loads(run_doc.stdout)["step_time_s"] / picked["top"][0]["step_time_s"] - 1) < 1e-9


@test
def table_explains_each_row_and_progress_goes_to_stderr():
    best = os.path.join(TMP, "table-best.json")
    proc = run("search", SMALL, "--resimulate", "2", "--best", best, "--top", "5")
    assert proc.returncode == 0, proc.stderr
    assert "ranked by the analytic tier" in proc.stdout and "Pareto front" in proc.stdout
    assert "search: re-simulated 2/2" in proc.stderr and "] search:" not in proc.stdout
    rows = [l for l in proc.stdout.splitlines() if l.strip()[:2].strip().isdigit()]
    assert len(rows) == 5 and all(any(t in r for t in ("compute", "tp_comm", "bubble", "dp_comm", "pp_comm", "cp_comm", "optimizer")) for r in rows[1:])
    quiet = run("-q", "search", SMALL, "--resimulate", "0", "--best", best)
    assert quiet.returncode == 0 and quiet.stderr == ""


@test
def pareto_front_of_time_and_cost_over_instance_types():
    path = spec("pareto", clusters=[{"topology": os.path.join(TOPO, "p5-16node.json"), "nodes": [8, 16]},
                                    {"topology": os.path.join(TOPO, "p5en-128node.json"), "nodes": [8, 16]}],
                run={"total_tokens": 1e11, "global_batch_size": [128]}, objective="pareto")
    doc, _, _ = search(path, "--resimulate", "0", "--top", "1000")
    front = doc["pareto_front"]
    assert front and front[0]["rank"] == 1
    times = [r["time_to_train_s"] for r in front]
    costs = [r["usd_total"] for r in front]
    assert times == sorted(times) and costs == sorted(costs, reverse=True)
    for r in doc["top"]:  # nothing beats a front point on both
        assert not any(r["time_to_train_s"] < f["time_to_train_s"] and r["usd_total"] < f["usd_total"] for f in front)


@test
def bad_specs_exit_2_naming_the_limit_and_the_closest_candidate():
    out = os.path.join(TMP, "never.json")
    tiny = spec("tiny", limits={"hbm_fraction": 0.2})
    expect_bad_input(["-q", "search", tiny, "--best", out], ["/limits/hbm_fraction", "the closest", "needs"], out)
    costly = spec("costly", run={"total_tokens": 1e12, "global_batch_size": [128]}, limits={"max_usd": 10})
    expect_bad_input(["-q", "search", costly, "--best", out], ["/limits/max_usd", "the closest", "costs $"], out)
    contradictory = spec("contradictory", limits={"min_gpus": 512, "max_gpus": 128})
    expect_bad_input(["-q", "search", contradictory, "--best", out], ["/limits/min_gpus", "max_gpus"], out)
    unknown = spec("unknown", clusters=[{"topology": os.path.join(TOPO, "p5-16node.json"), "instance_type": "p9.48xlarge", "nodes": [16]}])
    expect_bad_input(["-q", "search", unknown, "--best", out], ["/clusters/0", "p9.48xlarge", "known instance type"], out)
    no_run = spec("norun", limits={"deadline": "24h"})
    expect_bad_input(["-q", "search", no_run, "--best", out], ["deadline", "total_tokens"], out)
    bad_space = spec("badspace", space={"tensor_model_parallel_size": [0]})
    expect_bad_input(["-q", "search", bad_space, "--best", out], ["/space/tensor_model_parallel_size"], out)


@test
def goodput_counts_in_time_to_train_and_min_goodput_reorders_or_refuses():
    # The base scenario with a checkpoint plan and a failure model: re-simulated candidates carry fmsim run's
    # goodput, and their time to train includes checkpoint stalls and failures.
    base = json.load(open(os.path.join(CONFIGS, "training", "llama3-70b-p5.json")))
    base["cluster"]["base"] = os.path.join(TOPO, "p5-16node.json")
    base["checkpoint"] = {"strategy": "fsx", "mode": "sync", "interval_steps": 50}
    base["failures"] = {"gpu_failures_per_gpu_hour": 0.0005}
    scenario = write(TMP, "checkpointed.json", json.dumps(base))
    run = {"global_batch_size": [128], "total_tokens": 1e11}
    doc, _, _ = search(spec("goodput", scenario=scenario, run=run, objective="time", resimulate=6))
    simulated = [r for r in doc["top"] if r["simulated"]]
    assert len(simulated) == 6 and all(0 < r["goodput"] < 1 for r in simulated)
    for r in simulated:
        plain = r["steps"] * r["step_time_s"]
        assert r["time_to_train_s"] > plain and abs(r["goodput"] * r["time_to_train_s"] / plain - 1) < 0.02, r
    assert all(r["goodput"] is None for r in doc["top"] if not r["simulated"])
    # A limit between the simulated goodputs: every candidate that reaches it ranks before every one that does not.
    values = sorted(r["goodput"] for r in simulated)
    limit = (values[2] + values[3]) / 2
    limited, _, _ = search(spec("goodput-limit", scenario=scenario, run=run, objective="time", resimulate=6,
                                limits={"hbm_fraction": 0.95, "min_goodput": limit}))
    flags = [r["goodput"] >= limit for r in limited["top"] if r["simulated"]]
    assert flags == sorted(flags, reverse=True) and flags[0], flags
    assert any("min_goodput" in (r["why_below_previous"] or "") for r in limited["top"])
    out = os.path.join(TMP, "bad.json")
    # Known only after the re-simulations: -q keeps their progress lines off stderr.
    expect_bad_input(["-q", "search", spec("goodput-unreachable", scenario=scenario, run=run, objective="time", resimulate=3,
                                     limits={"min_goodput": 0.999}), "--json", out], ["/limits/min_goodput", "closest"], out)
    expect_bad_input(["search", spec("goodput-no-checkpoint", limits={"min_goodput": 0.9}), "--json", out],
                     ["/limits/min_goodput", "checkpoint"], out)


@test
def the_result_validates_against_its_schema():
    try:
        import jsonschema
    except ImportError:  # python3-jsonschema (scripts/install-deps.sh --test); run_schema_tests needs it too
        return
    with open(os.path.join(os.path.dirname(CONFIGS), "docs", "schema", "search-result.schema.json")) as f:
        schema = json.load(f)
    doc, _, _ = search(SMALL, "--resimulate", "1", "--top", "3")
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message[:300]
    bad = dict(doc, extra=1)
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(bad))


@test
def shipped_examples_run():
    for name in ("llama3-70b-p5-128.json",):
        doc, best, _ = search(os.path.join(CONFIGS, "search", name), "--resimulate", "1")
        assert doc["top"][0]["simulated"] and os.path.exists(best)


run_tests()
