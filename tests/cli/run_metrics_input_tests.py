#!/usr/bin/env python3
"""--metrics bad input (issue #30): each case exits 2 with one message naming the option and the value,
and writes no file. Usage: run_metrics_input_tests.py FMSIM SOURCE_DIR"""
import os
import subprocess
import sys
import tempfile

FMSIM, SRC = sys.argv[1], sys.argv[2]
RUN = os.path.join(SRC, "configs/training/llama3-8b-p5.json")
RL = os.path.join(SRC, "configs/training/grpo-llama3.1-8b-p5en.json")
failures = []

with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "m.om")
    cases = [
        (["run", RUN, "--metrics", out, "--metrics-label", "gpu=7"], "label 'gpu' clashes"),
        (["run", RUN, "--metrics", out, "--metrics-label", "simulated=false"], "label 'simulated' clashes"),
        (["run", RUN, "--metrics", out, "--metrics-label", "a-b=1"], "'a-b' is not a Prometheus label name"),
        (["run", RUN, "--metrics", out, "--metrics-label", "site=a", "--metrics-label", "site=b"], "label 'site' given twice"),
        (["run", RUN, "--metrics", out, "--metrics-label", "nolabel"], "is not KEY=VALUE"),
        (["run", RUN, "--metrics", out, "--metrics-start", "tomorrow"], "--metrics-start: 'tomorrow' is not a time"),
        (["run", RUN, "--metrics", out, "--metrics-start", "2026-02-30T25:00:00Z"], "is not a time"),
        (["run", RUN, "--metrics-label", "site=a"], "--metrics-label needs --metrics FILE"),
        (["serve", os.path.join(SRC, "configs/serving/llama3.3-70b-p5en.json"), "--metrics-start", "now"], "--metrics-start needs --metrics FILE"),
        (["run", RL, "--metrics", out], "--metrics: not available for an RL scenario"),
        (["run", RUN, "--metrics", os.path.join(tmp, "missing", "m.om")], "missing"),
    ]
    for args, expected in cases:
        proc = subprocess.run([FMSIM, *args], capture_output=True, text=True)
        ok = proc.returncode == 2 and expected in proc.stderr and not os.path.exists(out)
        if not ok:
            failures.append(f"{' '.join(args[:1] + args[2:])}: rc {proc.returncode}, stderr {proc.stderr.strip()[-300:]!r} (expected {expected!r})")
            print("FAIL:", failures[-1])
    # A label fmsim does not use is carried by every series.
    proc = subprocess.run([FMSIM, "run", RUN, "--metrics", out, "--metrics-label", "cluster=prod"], capture_output=True, text=True)
    lines = [l for l in open(out).read().splitlines() if l and not l.startswith("#")] if proc.returncode == 0 else []
    if not lines or not all('cluster="prod"' in l for l in lines):
        failures.append(f"--metrics-label cluster=prod: rc {proc.returncode}, not on every series")
        print("FAIL:", failures[-1])

if failures:
    sys.exit(f"{len(failures)} failure(s)")
print("metrics input tests: ok")
