#!/usr/bin/env python3
"""End-to-end tests of the fmsim command line: exit codes, one-line errors, no partial output files,
and JSON results checked against what the hardware implies. Usage: run_cli_tests.py FMSIM SOURCE_DIR"""
import json
import os
import subprocess
import sys
import tempfile

FMSIM, SOURCE = sys.argv[1], sys.argv[2]
TOPO = os.path.join(SOURCE, "topologies")
results = {"passed": 0, "failed": 0}
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def run(*args, timeout=600):
    return subprocess.run([FMSIM, *args], capture_output=True, text=True, timeout=timeout)


def write(directory, name, text):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def expect_bad_input(args, must_contain, out_file):
    """Exit 2, exactly one line on stderr that names what is wrong, no traceback, no output file."""
    proc = run(*args)
    assert proc.returncode == 2, f"exit {proc.returncode}, stderr: {proc.stderr!r}"
    lines = [l for l in proc.stderr.splitlines() if l.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    for fragment in must_contain:
        assert fragment in lines[0], f"{fragment!r} not in {lines[0]!r}"
    assert not os.path.exists(out_file), f"{out_file} was written"
    leftovers = [f for f in os.listdir(os.path.dirname(out_file)) if ".tmp." in f]
    assert not leftovers, f"temporary files left: {leftovers}"


@test
def gb200_cluster_shows_288_gpus_in_four_domains_of_72():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "topo.json")
        dot = os.path.join(d, "topo.dot")
        proc = run("topo", os.path.join(TOPO, "p6e-gb200-4x72.json"), "--json", out, "--dot", dot)
        assert proc.returncode == 0, proc.stderr
        data = json.load(open(out))
        assert data["gpus"] == 288
        assert data["nvlink_domains"] == [72, 72, 72, 72]
        assert "4 (4 x 72 GPUs)" in proc.stdout, proc.stdout
        text = open(dot).read()
        assert text.startswith("graph ") and text.rstrip().endswith("}")
        assert text.count("-gpu") >= 288


@test
def every_shipped_cluster_summarizes_with_the_documented_keys():
    for name in sorted(os.listdir(TOPO)):
        if not name.endswith(".json"):
            continue
        proc = run("topo", os.path.join(TOPO, name), "--json", "-")
        assert proc.returncode == 0, (name, proc.stderr)
        data = json.loads(proc.stdout)
        for key in ("gpus", "nodes", "nvlink_domains", "bisection_bandwidth_Bps", "hbm_bytes", "usd_per_hour"):
            assert key in data, (name, key)
        assert sum(data["nvlink_domains"]) == data["gpus"], name
        assert data["bisection_bandwidth_Bps"] > 0, name


@test
def json_dash_writes_only_json_to_stdout():
    proc = run("topo", os.path.join(TOPO, "p5-2node.json"), "--json", "-")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["gpus"] == 16 and data["nodes"] == 2
    # 2 nodes x 3,200 Gbps; the cut between them carries one node's injection bandwidth.
    assert abs(data["bisection_bandwidth_Bps"] - 400e9) < 1e3


@test
def unknown_instance_type_lists_the_known_ones():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{"instance_type": "p9.48xlarge", "nodes": 2}')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["c.json", "/instance_type", '"p9.48xlarge"', "p5.48xlarge"], out)


@test
def zero_and_negative_counts_are_rejected():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for value in ("0", "-4"):
            c = write(d, "c.json", '{"instance_type": "p5.48xlarge", "nodes": %s}' % value)
            expect_bad_input(["topo", c, "--json", out], ["/nodes", value, "expected an integer >= 1"], out)
        c = write(d, "u.json", '{"ultraserver_type": "u-p6e-gb200x72", "ultraservers": 0}')
        expect_bad_input(["topo", c, "--json", out], ["/ultraservers", "expected an integer >= 1"], out)


@test
def malformed_json_gives_line_and_column():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{\n  "instance_type": "p5.48xlarge",\n  "nodes": 2,,\n}\n')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["c.json:3:", "malformed JSON"], out)


@test
def unknown_key_is_rejected():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{"instance_type": "p5.48xlarge", "nodes": 2, "fabric": {"oversub": 2}}')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["/fabric/oversub", "unknown key 'oversub'", "oversubscription"], out)


@test
def missing_or_wrong_unit_is_rejected():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        base = '{"instance_type": "p5.48xlarge", "nodes": 2, "storage": {"fsx_lustre": {"deployment_type": "PERSISTENT_2-250", "capacity": %s}}}'
        for value, reason in (('"24"', "missing unit"), ('"24Gbps"', "unknown unit 'Gbps'"), ("24", "units are required")):
            c = write(d, "c.json", base % value)
            expect_bad_input(["topo", c, "--json", out], ["/storage/fsx_lustre/capacity", reason], out)


@test
def missing_file_and_bad_arguments_exit_2():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", os.path.join(d, "nope.json"), "--json", out], ["nope.json", "cannot open"], out)
        expect_bad_input(["topo", os.path.join(TOPO, "p5-2node.json"), "--bogus", "--json", out], ["--bogus"], out)
    proc = run("frobnicate")
    assert proc.returncode == 2


@test
def unwritable_output_is_a_clear_error():
    proc = run("topo", os.path.join(TOPO, "p5-2node.json"), "--json", "/nonexistent-dir/x.json")
    assert proc.returncode == 2
    assert "/nonexistent-dir/x.json" in proc.stderr


for fn in TESTS:
    try:
        fn()
        results["passed"] += 1
        print(f"PASS {fn.__name__}")
    except Exception as error:  # report every failure, keep going
        results["failed"] += 1
        print(f"FAIL {fn.__name__}: {error}")
print(f"{results['passed']} passed, {results['failed']} failed")
sys.exit(1 if results["failed"] else 0)
