#!/usr/bin/env python3
"""End-to-end tests of the steady-state judgement of `fmsim serve` (issue 26 item 6): the measurement
window leaves out warm-up and drain, a stable rate is judged steady with achieved = offered, a rate above
the deployment's capacity is judged not steady with the reason, and --sweep-rate names the capacity as the
highest sustained rate. Usage: run_serve_steady_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import TOPO, run, run_json, run_tests, test, write

P5 = os.path.join(TOPO, "p5-2node.json")
TMP = tempfile.mkdtemp(prefix="fmsim-serve-steady-tests-")
SERVING = {"precision": "fp8", "kv_cache_dtype": "fp8", "replicas": 1, "tensor_parallel_size": 1}
WORK = {"input_tokens": 512, "output_tokens": 64}


def scenario(name, workload, slo=None):
    doc = {"name": name, "cluster": {"base": P5, "nodes": 1}, "model": "llama3.1-8b", "serving": SERVING, "workload": workload}
    if slo:
        doc["slo"] = slo
    return write(TMP, name + ".json", json.dumps(doc))


def capacity():
    """Requests/s the replica completes with every request queued at once (offline)."""
    return run_json("serve", scenario("offline", {"arrival": "offline", "requests": 2000, **WORK}))["requests_per_s"]


@test
def offline_has_no_steady_state_window():
    doc = run_json("serve", scenario("offline-window", {"arrival": "offline", "requests": 50, **WORK}))
    assert doc["steady_state"] is None, doc["steady_state"]


@test
def a_stable_rate_is_steady_and_achieves_what_is_offered():
    rate = 0.3 * capacity()
    doc = run_json("serve", scenario("stable", {"arrival": "poisson", "rate": f"{rate}/s", "requests": 3000, **WORK}))
    w = doc["steady_state"]
    assert w["steady"] and w["reason"] == "", w
    # The window leaves out at least the first and the last 10 % of arrivals.
    assert 0.5 * 3000 <= w["measured_requests"] <= 0.8 * 3000 + 1, w
    assert abs(w["offered_requests_per_s"] / rate - 1) < 0.1, (w, rate)
    assert abs(w["achieved_requests_per_s"] / w["offered_requests_per_s"] - 1) < 0.05, w
    assert abs(w["ttft_rise"]) <= 0.5, w
    text = run("serve", scenario("stable", {"arrival": "poisson", "rate": f"{rate}/s", "requests": 3000, **WORK})).stdout
    assert "steady-state window" in text and ": steady" in text, text


@test
def a_rate_above_capacity_is_not_steady_and_says_why():
    rate = 2.0 * capacity()
    doc = run_json("serve", scenario("diverging", {"arrival": "poisson", "rate": f"{rate}/s", "requests": 6000, **WORK}))
    w = doc["steady_state"]
    assert not w["steady"], w
    # The queue absorbs about half of what arrives: completions inside the window are about capacity / offered.
    assert w["completion_ratio"] < 0.8, w
    assert w["achieved_requests_per_s"] < 0.8 * w["offered_requests_per_s"], w
    assert "not steady" in w["reason"] and "95%" in w["reason"], w["reason"]
    assert w["criterion"]["min_completion_ratio"] == 0.95 and w["criterion"]["max_ttft_rise"] == 0.5, w["criterion"]


@test
def too_short_a_run_is_not_judged():
    doc = run_json("serve", scenario("short", {"arrival": "poisson", "rate": "5/s", "requests": 12, **WORK}))
    w = doc["steady_state"]
    assert not w["steady"] and "too few requests" in w["reason"], w


@test
def sweep_capacity_is_the_highest_sustained_rate():
    cap = capacity()
    path = scenario("sweep", {"arrival": "poisson", "rate": f"{0.5 * cap}/s", "requests": 3000, **WORK}, {"ttft": "5s", "tpot": "1s"})
    proc = run("serve", path, "--sweep-rate", "--json", "-")
    assert proc.returncode == 0, proc.stderr
    sweep = json.loads(proc.stdout)["sweep"]
    best = sweep["capacity_requests_per_s"]
    assert best == sweep["max_rate_per_s"] and best, sweep
    sustained = [p for p in sweep["points"] if p["sustained"]]
    assert max(p["rate_per_s"] for p in sustained) == best
    # Loose SLOs: the steady-state test binds, below the offline throughput and above half of it.
    above = [p for p in sweep["points"] if p["rate_per_s"] > best]
    assert above and all(not p["steady"] for p in above if p["rate_per_s"] > 1.1 * best), above
    assert 0.5 * cap <= best <= 1.05 * cap, (best, cap)
    for p in sustained:
        assert abs(p["window_achieved_requests_per_s"] / p["window_offered_requests_per_s"] - 1) < 0.05, p
    text = run("serve", path, "--sweep-rate").stdout
    assert "capacity:" in text and "sustained in steady state" in text and "steady" in text, text


run_tests()
