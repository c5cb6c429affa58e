"""Shared by the scale benchmarks: run one fmsim command under /usr/bin/time, and write a results file."""
import json
import os
import platform
import subprocess
import time


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
