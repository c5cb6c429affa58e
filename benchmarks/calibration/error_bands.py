#!/usr/bin/env python3
"""The error bands fmsim states with its results, from the three validation scripts' --json outputs.

Reads the raw rows of validate_training.py, validate_serving.py and validate_collectives.py (their --json
FILE) and writes configs/validation/error_bands.json (schema fmsim.error_bands/1, docs/validation.md): per
validation group n, mean absolute error, signed mean, worst row, and where the numbers come from (date and
commit of the run, the measurements file and its SHA-256). `fmsim run` and `fmsim serve` look their result's
group up in that file (src/report/error_band.cpp). The file is generated (`make validate`), never edited.

Groups:
- training: hardware generation (A100, H100, H200, Blackwell, Blackwell Ultra) x model kind (dense, MoE,
  hybrid) x workload (pretrain, sft, lora) x software stack. The stack is a key (stack_key below): the
  Megatron-Bridge releases 25.11 and later are "megatron-core", the current Megatron-Core that fmsim models
  when a scenario names no stack; every other stack or release is a key of its own.
- serving: generation x model kind (dense, MoE) x mode (offline throughput; server latency: TTFT and TPOT
  p50/p99 under Poisson arrivals). The Azure ND GB200 v6 rows (metric ambiguous) are left out.
- collectives: the fabric groups of validate_collectives.py, bus bandwidth from 1 MiB and time below
  1 MiB separately.
Errors are fractions, (fmsim - measured) / measured in the metric the source publishes (throughput for
training and offline serving: positive = fmsim optimistic; latency for server rows, time or bus bandwidth
for collectives).

Usage: benchmarks/calibration/error_bands.py --training T.json --serving S.json --collectives C.json
       [--measurements PATH] [--date YYYY-MM-DD] [--commit SHA] [--out configs/validation/error_bands.json]"""
import argparse
import datetime
import hashlib
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCHEMA = "fmsim.error_bands/1"
# The stack key fmsim uses when a scenario names none (src/report/error_band.cpp kDefaultTrainingStack).
DEFAULT_STACK = "megatron-core"
CURRENT_MEGATRON = (25, 11)  # Megatron-Bridge releases from 25.11 are "current" (issue #25's targets)
SERVING_GENERATION = {"H100": "H100", "H200": "H200", "B200": "Blackwell", "GB200": "Blackwell"}
KIND_WORDS = {"dense": "dense", "MoE": "MoE", "hybrid": "hybrid"}
WORKLOAD_WORDS = {"pretrain": "pretraining", "sft": "SFT", "lora": "LoRA"}


def framework_of(row):
    """The stack a row's scenario runs on: training.framework, or the release its training.recipe names
    ("megatron-bridge/deepseek-v3@26.02" -> "megatron-bridge@26.02"); None when it names neither."""
    training = (row.get("scenario") or {}).get("training") or {}
    if training.get("framework"):
        return training["framework"]
    recipe = training.get("recipe")
    if isinstance(recipe, str) and "/" in recipe and "@" in recipe:
        return recipe.split("/", 1)[0] + "@" + recipe.rsplit("@", 1)[1]
    return None


def stack_key(label, framework=None):
    """The validation group key of a training row's stack, as fmsim computes it for a scenario
    (src/report/error_band.cpp training_stack_key): current Megatron (Megatron-Core, Megatron-Bridge from
    25.11) is DEFAULT_STACK, another stack NAME@RELEASE; a row naming no stack keeps its label."""
    if framework:
        name, _, release = framework.partition("@")
        if name == "megatron-core" or (name == "megatron-bridge" and tuple(map(int, release.split(".")[:2])) >= CURRENT_MEGATRON):
            return DEFAULT_STACK
        return framework
    match = re.match(r"Megatron-Bridge (\d+\.\d+(?:\.\d+)?)", label)
    if match:  # a row whose model has no recipe file: the release its label names
        return stack_key(label, "megatron-bridge@" + match.group(1))
    return re.sub(r"[^a-z0-9.]+", "-", label.lower()).strip("-")


def stack_name(key, labels):
    if key == DEFAULT_STACK:
        return "Megatron-Core"
    return labels[0] if len(labels) == 1 else key


def summary(rows, error=lambda r: r["error"], where=lambda r: r["case"]):
    errors = [error(r) for r in rows]
    worst = max(rows, key=lambda r: abs(error(r)))
    return {"n": len(errors), "mean_abs_error": round(sum(abs(e) for e in errors) / len(errors), 5),
            "signed_mean": round(sum(errors) / len(errors), 5), "worst": round(error(worst), 5), "worst_row": where(worst)}


def training_groups(rows, source):
    groups = {}
    for r in rows:
        if r.get("reason") or r.get("error") is None:
            continue
        g = r["group"]
        key = (g["generation"], g["kind"], g["workload"], stack_key(g["stack"], framework_of(r)))
        groups.setdefault(key, []).append(r)
    out = []
    for (generation, kind, workload, stack), members in sorted(groups.items()):
        labels = sorted({r["group"]["stack"] for r in members})
        band = {"group": {"generation": generation, "kind": kind, "workload": workload, "stack": stack},
                "label": f"{KIND_WORDS.get(kind, kind)} {generation} {WORKLOAD_WORDS.get(workload, workload)} on "
                         f"{stack_name(stack, labels)}",
                "stack_releases": labels,
                "metric": "training throughput as published (tokens/s/GPU, model TFLOP/s/GPU or step time)"}
        band.update(summary(members, where=lambda r: f"{r['case']} {r['label']}"))
        band["source"] = source
        out.append(band)
    return out


def serving_groups(doc, source):
    groups = {}
    for r in doc["offline"]:
        if r.get("group") != "offline" or r.get("error") is None:
            continue
        groups.setdefault((SERVING_GENERATION[r["gpu"]], r["class"], "offline"), []).append(r)
    for r in doc["server"]:
        if r["metric"].startswith(("TTFT", "TPOT")):
            groups.setdefault((SERVING_GENERATION[r["gpu"]], r.get("class", "dense"), "server"), []).append(r)
    out = []
    for (generation, kind, mode), members in sorted(groups.items()):
        band = {"group": {"generation": generation, "kind": kind, "mode": mode},
                "label": f"{kind} {generation} serving, {mode}",
                "metric": "output tokens/s" if mode == "offline" else "TTFT and TPOT, p50 and p99"}
        band.update(summary(members, where=lambda r: f"{r['case']} {r.get('row', r.get('metric'))}"))
        band["source"] = source
        out.append(band)
    return out


def collective_groups(doc, source):
    groups = {}
    for case in doc["cases"]:
        for row in case["rows"]:
            if row.get("error_pct") is None or row["error_pct"] != row["error_pct"]:
                continue
            row = dict(row, case=case["id"])
            groups.setdefault((case["group"], row["metric"]), []).append(row)
    out = []
    for (fabric, metric), members in sorted(groups.items()):
        band = {"group": {"fabric": fabric, "compared": "busbw >= 1 MiB" if metric == "busbw" else "time < 1 MiB"},
                "label": f"{fabric}, {'bus bandwidth from 1 MiB' if metric == 'busbw' else 'time below 1 MiB'}",
                "metric": "bus bandwidth" if metric == "busbw" else "time"}
        band.update(summary(members, error=lambda r: r["error_pct"] / 100, where=lambda r: f"{r['case']} {r['point']}"))
        band["source"] = source
        out.append(band)
    return out


def markdown(bands):
    """The bands as tables (the error-band section of the generated validation document)."""
    lines = []
    for category, title in (("training", "Training"), ("serving", "Serving"), ("collectives", "Collectives")):
        lines += [f"### {title}", "", "| group | n | mean abs error | signed mean | worst |", "|---|---:|---:|---:|---|"]
        for b in bands[category]:
            lines.append(f"| {b['label']} | {b['n']} | {100 * b['mean_abs_error']:.1f} % | {100 * b['signed_mean']:+.1f} % | "
                         f"{100 * b['worst']:+.1f} % ({b['worst_row']}) |")
        lines.append("")
    runs = {b["source"]["script"]: b["source"] for c in ("training", "serving", "collectives") for b in bands[c]}
    for script, s in sorted(runs.items()):
        lines.append(f"- {script}: {s['date']}, commit {s['commit']}, {s['measurements']} (sha256 {s['measurements_sha256'][:12]})")
    return "\n".join(lines)


def commit_of():
    try:
        sha = subprocess.run(["git", "-C", ROOT, "rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, check=True).stdout.strip()
        return sha + ("-dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--training", required=True, help="validate_training.py --json output")
    parser.add_argument("--serving", required=True, help="validate_serving.py --json output")
    parser.add_argument("--collectives", required=True, help="validate_collectives.py --json output")
    parser.add_argument("--measurements", default=os.path.join(ROOT, "..", "shared", "calibration", "measurements.json"),
                        help="the measurements file the three runs read")
    parser.add_argument("--date", default=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
                        help="date of the validation run (default today, UTC)")
    parser.add_argument("--commit", default=None, help="commit the validation ran at (default: this checkout's HEAD)")
    parser.add_argument("--out", default=os.path.join(ROOT, "configs", "validation", "error_bands.json"))
    parser.add_argument("--markdown", help="also write the bands as markdown tables to FILE")
    args = parser.parse_args()
    try:
        docs = {}
        for name in ("training", "serving", "collectives"):
            with open(getattr(args, name)) as f:
                docs[name] = json.load(f)
        with open(args.measurements, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()
    except (OSError, ValueError) as e:
        sys.stderr.write(f"error_bands.py: {e}\n")
        return 2
    measurements = os.path.relpath(os.path.abspath(args.measurements), ROOT)
    commit = args.commit or commit_of()

    def source(script):
        return {"script": f"benchmarks/calibration/{script}", "date": args.date, "commit": commit,
                "measurements": measurements, "measurements_sha256": digest}

    bands = {
        "schema": SCHEMA,
        "generated_by": "benchmarks/calibration/error_bands.py (make validate): do not edit by hand",
        "error": "(fmsim - measured) / measured as a fraction, in the metric the source publishes; for throughput, "
                 "positive = fmsim optimistic",
        "default_training_stack": DEFAULT_STACK,
        "training": training_groups(docs["training"], source("validate_training.py")),
        "serving": serving_groups(docs["serving"], source("validate_serving.py")),
        "collectives": collective_groups(docs["collectives"], source("validate_collectives.py")),
    }
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump(bands, f, indent=1)
        f.write("\n")
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(markdown(bands) + "\n")
    print(f"{args.out}: {len(bands['training'])} training, {len(bands['serving'])} serving, "
          f"{len(bands['collectives'])} collective groups")
    return 0


if __name__ == "__main__":
    sys.exit(main())
