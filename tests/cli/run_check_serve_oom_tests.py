#!/usr/bin/env python3
"""`fmsim check` on a serving plan whose replica no longer fits in GPU memory: a failing JUnit case that
gives the reason, exit 1 (not exit 2 with no JUnit file); `fmsim serve --allow-oom` writes that result.
Usage: run_check_serve_oom_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile
import xml.etree.ElementTree as ET

from cli_support import CONFIGS, run, run_json, run_tests, test, write

SCENARIO = os.path.abspath(os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"))
# Llama-3.3-70B in BF16 on one H200: 141 GB of weights over the 127 GB the engine may use.
TOO_BIG = ["serving.precision=bf16", "serving.tensor_parallel_size=1"]
FEW = ["workload.requests=50"]
TMP = tempfile.mkdtemp(prefix="fmsim-check-serve-oom-tests-")


def sets(assignments):
    return [a for s in assignments for a in ("--set", s)]


def failures(junit):
    return [c for c in ET.parse(junit).getroot().iter("testcase") if c.find("failure") is not None]


@test
def serve_without_allow_oom_is_still_bad_input():
    proc = run("serve", SCENARIO, *sets(TOO_BIG + FEW))
    assert proc.returncode == 2, f"exit {proc.returncode}: {proc.stderr}"
    assert "does not fit" in proc.stderr and "141.1 GB" in proc.stderr, proc.stderr


@test
def serve_allow_oom_reports_the_reason():
    doc = run_json("serve", SCENARIO, *sets(TOO_BIG + FEW), "--allow-oom")
    assert doc["oom"] is True, doc
    assert "does not fit" in doc["oom_reason"] and "raise TP or PP" in doc["oom_reason"], doc
    assert doc["hbm_required_bytes"] > doc["hbm_usable_bytes"] > 100e9, doc
    text = run("serve", SCENARIO, *sets(TOO_BIG + FEW), "--allow-oom")
    assert text.returncode == 0 and "does not fit in GPU memory" in text.stdout, (text.returncode, text.stdout, text.stderr)
    # A replica that fits says so, and --allow-oom changes nothing there.
    fits = run_json("serve", SCENARIO, *sets(FEW), "--allow-oom")
    assert fits["oom"] is False and fits["completed"] == 50, fits.get("oom")
    # fmsim report has nothing to show for it, and says why (not "/disaggregated is missing").
    result = write(TMP, "oom.json", json.dumps(doc))
    html = os.path.join(TMP, "oom.html")
    proc = run("report", result, "--html", html)
    assert proc.returncode == 2 and "nothing was simulated" in proc.stderr and "does not fit" in proc.stderr, proc.stderr
    assert not os.path.exists(html)
    # Nothing simulated: a timeline or Prometheus file asked for alongside is bad input, and none is written.
    timeline = os.path.join(TMP, "timeline.json")
    proc = run("serve", SCENARIO, *sets(TOO_BIG + FEW), "--allow-oom", "--timeline", timeline)
    assert proc.returncode == 2 and "--timeline" in proc.stderr and not os.path.exists(timeline), (proc.returncode, proc.stderr)


@test
def check_a_serving_plan_that_stops_fitting_is_a_failing_junit_case():
    for name, expect, failing in (("serve-oom-implicit", [{"metric": "ttft_s.p99", "max": 2.0}], 2),
                                  ("serve-oom-named", [{"metric": "oom", "equals": False}], 1)):
        plan = write(TMP, name + ".json", json.dumps({"name": name, "command": "serve", "scenario": SCENARIO,
                                                      "set": TOO_BIG + FEW, "expect": expect}))
        junit = os.path.join(TMP, name + ".xml")
        proc = run("-q", "check", plan, "--junit", junit)
        assert proc.returncode == 1, f"{name}: exit {proc.returncode}: {proc.stdout} {proc.stderr}"
        assert "FAIL" in proc.stdout and "does not fit" in proc.stdout, proc.stdout
        failed = failures(junit)
        assert len(failed) == failing, ET.tostring(ET.parse(junit).getroot())
        oom = [c for c in failed if c.get("name").startswith("oom ")]
        assert len(oom) == 1, [c.get("name") for c in failed]
        message = oom[0].find("failure").get("message")
        assert "does not fit" in message and "141.1 GB" in message, message
        for case in failed:
            if case is not oom[0]:
                assert "not predicted" in case.find("failure").get("message"), case.find("failure").get("message")


@test
def check_a_serving_plan_that_fits_still_passes():
    plan = write(TMP, "fits.json", json.dumps({"name": "fits", "command": "serve", "scenario": SCENARIO, "set": FEW,
                                               "expect": [{"metric": "oom", "equals": False}, {"metric": "completed", "equals": 50}]}))
    junit = os.path.join(TMP, "fits.xml")
    proc = run("-q", "check", plan, "--junit", junit)
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stdout} {proc.stderr}"
    assert not failures(junit)


if __name__ == "__main__":
    run_tests()
