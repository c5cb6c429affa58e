#!/usr/bin/env python3
"""`fmsim validate`: runs a category of the validation suite against the calibration set with this binary,
writes its tables and raw rows and one validation.md, prints the category's group table; its rows are the
same as the script's own run; bad input (an unknown category, a missing or malformed measurements file,
--bands without the three categories the bands need) exits 2 with one message and writes nothing.
Usage: run_validate_tests.py FMSIM SOURCE_DIR"""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

from cli_support import FMSIM, SOURCE as SRC, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-validate-tests-")
atexit.register(shutil.rmtree, TMP, True)
MEASUREMENTS = os.path.normpath(os.path.join(SRC, "..", "shared", "calibration", "measurements.json"))


@test
def the_serving_category_runs_every_inference_case_and_prints_its_groups():
    out = os.path.join(TMP, "serving")
    proc = run("validate", "--only", "serving", "--measurements", MEASUREMENTS, "--out", out)
    assert proc.returncode == 0, proc.stderr
    assert "validate: serving" in proc.stderr, proc.stderr  # progress on stderr
    assert "| offline, all (target MAE <= 8 %) |" in proc.stdout and "wrote " + os.path.join(out, "validation.md") in proc.stdout, proc.stdout
    for name in ("serving.md", "serving.json", "validation.md"):
        assert os.path.getsize(os.path.join(out, name)) > 0, name
    document = open(os.path.join(out, "validation.md")).read()
    assert "## Serving" in document and MEASUREMENTS in document and "## Training" not in document
    # The same rows as the script run on its own with this binary.
    direct = os.path.join(TMP, "direct.json")
    subprocess.run(["python3", os.path.join(SRC, "benchmarks", "calibration", "validate_serving.py"), "--fmsim", FMSIM,
                    "--measurements", MEASUREMENTS, "--json", direct], check=True, capture_output=True)
    assert json.load(open(direct)) == json.load(open(os.path.join(out, "serving.json")))
    # Every inference case of the measurements file is a row or a listed reason (nothing skipped silently).
    cases = [c["id"] for c in json.load(open(MEASUREMENTS)) if c.get("category") == "inference"]
    text = open(os.path.join(out, "serving.md")).read()
    missing = [c for c in cases if c not in text]
    assert not missing, missing


@test
def bad_input_exits_2_with_one_message_and_no_output():
    out = os.path.join(TMP, "bad")
    malformed = write(TMP, "malformed.json", "{")
    for args, expected in [(["--only", "serving,bogus"], ["--only", "bogus", "collectives, serving, training, rl"]),
                           (["--only", "rl", "--measurements", os.path.join(TMP, "none.json")], ["none.json", "measurements file"]),
                           (["--only", "rl", "--measurements", malformed], ["malformed.json:1:2", "malformed JSON"]),
                           (["--only", "serving,rl", "--bands", os.path.join(TMP, "b.json")], ["--bands", "collectives, serving and training"])]:
        proc = run("validate", *args, "--out", out)
        assert proc.returncode == 2, (args, proc.returncode, proc.stderr)
        message = proc.stderr.strip()
        assert message.count("\n") == 0 and all(e in message for e in expected), (args, message)
        assert not os.path.exists(out), args


run_tests()
