#!/usr/bin/env python3
"""End-to-end tests of `fmsim check`: shipped plans hold, a tightened plan fails with both numbers,
JUnit XML has the expected shape, baselines catch regressions, bad plans exit 2.
Usage: run_check_tests.py FMSIM SOURCE_DIR"""
import json
import os
import shutil
import tempfile
import xml.etree.ElementTree as ET

from cli_support import CONFIGS, expect_bad_input, run, run_tests, test, write

PLANS = os.path.join(CONFIGS, "plans")
SERVING_PLAN = os.path.join(PLANS, "llama3.3-70b-p5en-serving.json")
TMP = tempfile.mkdtemp(prefix="fmsim-check-tests-")


def plan(name, **fields):
    doc = {"name": name, "command": "serve", "scenario": os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json")),
           "expect": [{"metric": "ttft_s.p99", "max": 2.0}]}
    doc.update(fields)
    return write(TMP, name + ".json", json.dumps(doc))


def junit_cases(path):
    root = ET.parse(path).getroot()
    assert root.tag == "testsuites"
    suites = root.findall("testsuite")
    for suite in suites:
        cases = suite.findall("testcase")
        assert int(suite.get("tests")) == len(cases)
        assert int(suite.get("failures")) == sum(1 for c in cases if c.find("failure") is not None)
        for case in cases:
            assert case.get("classname") and case.get("name")
    assert int(root.get("tests")) == sum(int(s.get("tests")) for s in suites)
    return suites


@test
def shipped_plans_hold():
    junit = os.path.join(TMP, "shipped.xml")
    proc = run("check", PLANS, "--junit", junit)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "all expectations hold" in proc.stdout
    suites = junit_cases(junit)
    assert len(suites) == len([f for f in os.listdir(PLANS) if f.endswith(".json")])
    assert all(s.get("failures") == "0" for s in suites)


@test
def tightened_plan_fails_with_both_numbers():
    tight = plan("tight", expect=[{"metric": "ttft_s.p99", "max": 0.1}, {"metric": "tpot_s.p99", "max": 0.055}])
    junit = os.path.join(TMP, "tight.xml")
    proc = run("check", tight, "--junit", junit)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    doc = json.loads(run("serve", os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"), "--json", "-").stdout)
    predicted = f"{doc['ttft_s']['p99']:.6g}"
    assert predicted in proc.stdout and "<= 0.1" in proc.stdout, proc.stdout
    suites = junit_cases(junit)
    failures = [c.find("failure") for s in suites for c in s.findall("testcase") if c.find("failure") is not None]
    assert len(failures) == 1
    assert predicted in failures[0].get("message") and "0.1" in failures[0].get("message")


@test
def tolerance_widens_the_limit():
    doc = json.loads(run("serve", os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"), "--json", "-").stdout)
    p99 = doc["ttft_s"]["p99"]
    assert run("check", plan("just-over", expect=[{"metric": "ttft_s.p99", "max": p99 / 1.04}])).returncode == 1
    assert run("check", plan("within-5", expect=[{"metric": "ttft_s.p99", "max": p99 / 1.04, "tolerance": 0.05}])).returncode == 0
    assert run("check", plan("min-ok", expect=[{"metric": "output_tokens_per_s_per_gpu", "min": 1.0}])).returncode == 0
    assert run("check", plan("missing", expect=[{"metric": "no_such.metric", "max": 1}])).returncode == 1


@test
def baseline_catches_regressions():
    base = os.path.join(TMP, "baseline")
    proc = run("check", SERVING_PLAN, "--baseline", base, "--update-baseline")
    assert proc.returncode == 0, proc.stderr
    stored = os.path.join(base, "llama3.3-70b-p5en-serving.json")
    assert os.path.exists(stored)
    assert run("check", SERVING_PLAN, "--baseline", base).returncode == 0
    # Pretend the earlier run was 20 % faster: today's prediction is then a regression.
    with open(stored) as f:
        earlier = json.load(f)
    earlier["tpot_s"]["p99"] *= 0.8
    with open(stored, "w") as f:
        json.dump(earlier, f)
    proc = run("check", SERVING_PLAN, "--baseline", base)
    assert proc.returncode == 1 and "regressed from the baseline" in proc.stdout, proc.stdout


@test
def bad_plans_exit_2():
    out = os.path.join(TMP, "never.xml")
    expect_bad_input(["check", plan("typo", expectations=[]), "--junit", out], ["expectations"], out)
    expect_bad_input(["check", plan("both", expect=[{"metric": "mfu", "max": 1, "min": 0}]), "--junit", out], ["/expect/0"], out)
    expect_bad_input(["check", plan("no-scenario", scenario="nowhere.json"), "--junit", out], ["no-scenario.json", "nowhere.json"], out)
    expect_bad_input(["check", plan("bad-set", set=["serving.tensor_parallel_size=3"]), "--junit", out],
                     ["bad-set.json", "tensor_parallel_size = 3"], out)
    expect_bad_input(["check", os.path.join(TMP, "absent.json"), "--junit", out], ["absent.json"], out)
    expect_bad_input(["check", SERVING_PLAN, "--update-baseline", "--junit", out], ["--baseline"], out)


run_tests()
