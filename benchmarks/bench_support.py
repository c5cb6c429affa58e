"""Shared by the scale benchmarks: the common command line, the fmsim command of a case, running it under
/usr/bin/time, and writing a results file."""
import argparse
import json
import os
import platform
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parser(doc, results_name):
    """The benchmarks' command line: --fmsim and --out (benchmarks/results/<results_name>.json)."""
    p = argparse.ArgumentParser(description=doc.splitlines()[0])
    p.add_argument("--fmsim", default=os.path.join(ROOT, "build", "fmsim"))
    p.add_argument("--out", default=os.path.join(ROOT, "benchmarks", "results", results_name + ".json"))
    return p


def fmsim_command(fmsim, verb, scenario, sets=()):
    """`fmsim VERB SCENARIO --json -` with a `--set` per assignment."""
    command = [fmsim, verb, scenario, "--json", "-"]
    for assignment in sets:
        command += ["--set", assignment]
    return command


def measure(command):
    """Runs `command` (an fmsim invocation that prints JSON); returns (wall s, peak RSS bytes, document)."""
    start = time.perf_counter()
    proc = subprocess.run(["/usr/bin/time", "-f", "%M", *command], capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    rss_kib = int(proc.stderr.strip().splitlines()[-1])
    return wall, rss_kib * 1024, json.loads(proc.stdout)


def write_results(path, rows):
    """Writes {"date", "machine", "rows"} to `path`."""
    doc = {"date": time.strftime("%Y-%m-%d"), "machine": f"{platform.machine()}, {os.cpu_count()} cores", "rows": rows}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
