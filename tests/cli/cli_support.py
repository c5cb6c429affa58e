"""Helpers shared by the CLI test suites: running fmsim, expecting one-line errors, and a tiny runner."""
import json
import os
import subprocess
import sys

FMSIM, SOURCE = sys.argv[1], sys.argv[2]
TOPO = os.path.join(SOURCE, "topologies")
CONFIGS = os.path.join(SOURCE, "configs")
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def run(*args, timeout=600):
    return subprocess.run([FMSIM, *args], capture_output=True, text=True, timeout=timeout)


def run_json(command, *args):
    """Runs `fmsim COMMAND ARGS --json -`, expects success, returns the parsed document."""
    proc = run(command, *args, "--json", "-")
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def validate_schema(doc, schema_name):
    """Checks `doc` against docs/schema/SCHEMA_NAME, where Debian's python3-jsonschema is there."""
    try:
        import jsonschema
    except ImportError:
        return
    with open(os.path.join(SOURCE, "docs", "schema", schema_name)) as f:
        schema = json.load(f)
    errors = list(jsonschema.Draft202012Validator(schema).iter_errors(doc))
    assert not errors, errors[0].message[:300]


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


def run_tests():
    """Runs every registered test, reports each, exits 1 if any failed."""
    passed = failed = 0
    for fn in TESTS:
        try:
            fn()
            passed += 1
            print(f"PASS {fn.__name__}", flush=True)
        except Exception as error:  # report every failure, keep going
            failed += 1
            print(f"FAIL {fn.__name__}: {error}", flush=True)
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed else 0)
