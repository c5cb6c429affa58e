#!/usr/bin/env python3
"""Predicted vs measured training throughput for every training case of ../shared/calibration.

Every row of every training case becomes one line of the output: either a scenario that `fmsim run`
simulates (measured against predicted, in the metric the source publishes) or a row that cannot be
expressed, with the reason (fmsim's own refusal, or what the source does not state). Nothing is skipped.
Rows are grouped by hardware generation, model kind, workload and software stack; each group gets n, mean
absolute error, signed mean and worst. --markdown FILE writes the tables for docs/validation.md, --json
FILE the raw rows. The held-out files in benchmarks/calibration/ (published_*_training.json) use the
older flat row format and still run through --measurements.

How each source maps to a scenario is in training_cases.py; the published recipe settings are the files of
configs/recipes/ (a Megatron-Bridge row names its recipe and release in training.recipe, and fmsim merges
the variant for the row's GPU, precision and layout: docs/formats.md, "Recipe files"); every assumption a
source leaves open is named in the row's `assumptions`.
Usage: benchmarks/calibration/validate_training.py [--fmsim build/fmsim] [--measurements PATH] [--jobs 2]"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

from calibration_support import arguments
from training_cases import items_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_item(fmsim, tmp, index, item):
    if item.get("reason"):
        return item
    path = os.path.join(tmp, f"row{index}.json")
    with open(path, "w") as f:
        json.dump(item["scenario"], f)
    proc = subprocess.run([fmsim, "run", path, "--json", "-", "--allow-oom"], capture_output=True, text=True)
    if proc.returncode == 2:  # fmsim refuses the setup: its message is the reason
        message = proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else "exit 2"
        item["reason"] = "fmsim: " + message.split(": ", 1)[-1].replace(path, "scenario")
        return item
    if proc.returncode != 0:
        sys.exit(f"fmsim failed ({proc.returncode}) on {item['case']} {item['label']}:\n{proc.stderr}")
    out = json.loads(proc.stdout)
    item["predicted"] = item.pop("predict")(out)
    item["error"] = item["predicted"] / item["measured"] - 1
    item["oom"] = out.get("oom", False)
    item["step_s"] = out["step_time_s"] if "step_time_s" in out else None
    return item


def summary(rows):
    errors = [r["error"] for r in rows]
    n = len(errors)
    if not n:
        return None
    worst = max(rows, key=lambda r: abs(r["error"]))
    return {"n": n, "mae": sum(abs(e) for e in errors) / n, "signed": sum(errors) / n, "worst": worst["error"],
            "worst_row": f"{worst['case']} {worst['label']}"}


def group_tables(ran, key_names):
    groups = {}
    for r in ran:
        groups.setdefault(tuple(r["group"][k] for k in key_names), []).append(r)
    lines = ["| " + " | ".join(key_names) + " | n | mean abs error | signed mean | worst |",
             "|" + "---|" * len(key_names) + "---:|---:|---:|---|"]
    for key in sorted(groups):
        s = summary(groups[key])
        lines.append("| " + " | ".join(key) + f" | {s['n']} | {100 * s['mae']:.1f} % | {100 * s['signed']:+.1f} % | "
                     f"{100 * s['worst']:+.1f} % ({s['worst_row']}) |")
    return lines


def figure(value):
    return f"{value:.0f}" if abs(value) >= 100 else f"{value:.3g}"


def render(results):
    ran = [r for r in results if not r.get("reason")]
    refused = [r for r in results if r.get("reason")]

    lines = [f"{len(results)} training rows from {len({r['case'] for r in results})} cases: {len(ran)} simulated, "
             f"{len(refused)} not expressible (listed below with the reason).", ""]
    lines.append("#### By hardware generation, model kind and workload")
    lines.append("")
    lines += group_tables(ran, ["generation", "kind", "workload"])
    lines.append("")
    lines.append("#### By software stack and release")
    lines.append("")
    lines += group_tables(ran, ["stack"])
    lines.append("")
    lines.append("#### Every simulated row")
    lines.append("")
    lines.append("| case | row | metric | measured | fmsim | error |")
    lines.append("|---|---|---|---:|---:|---:|")
    for r in ran:
        note = " (OOM)" if r.get("oom") else ""
        lines.append(f"| {r['case']} | {r['label']} | {r['metric']} | {figure(r['measured'])} | {figure(r['predicted'])}{note} | "
                     f"{100 * r['error']:+.1f} % |")
    lines.append("")
    lines.append("#### Rows fmsim cannot express, and why")
    lines.append("")
    lines.append("| case | row | reason |")
    lines.append("|---|---|---|")
    for r in refused:
        reason = r["reason"].split(" (known keys here")[0].replace("|", "/")
        lines.append(f"| {r['case']} | {r['label']} | {reason} |")
    s = summary(ran)
    lines.append("")
    lines.append(f"All simulated rows: n = {s['n']}, mean absolute error {100 * s['mae']:.1f} %, signed mean "
                 f"{100 * s['signed']:+.1f} %.")
    return "\n".join(lines)


def main():
    args, measurements = arguments(__doc__)
    items = [item for case in measurements if case["category"] == "training" for item in items_of(case, ROOT)]
    with tempfile.TemporaryDirectory() as tmp, ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(lambda pair: run_item(args.fmsim, tmp, *pair), enumerate(items)))
    text = render(results)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{k: v for k, v in r.items() if k != "predict"} for r in results], f, indent=1)


if __name__ == "__main__":
    main()
