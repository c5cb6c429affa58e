#!/usr/bin/env python3
"""Measured vs simulated for EVERY collective case of ../shared/calibration/measurements.json.

Each case is mapped to `fmsim collective` runs (cluster, operation, GPU count, algorithm where the source
forced one); a case fmsim cannot express is listed with the reason, never skipped. Sizes from 1 MiB up
compare bus bandwidth, sizes below 1 MiB compare time (the latency floor); the summary gives both
separately per group: n, mean absolute error, signed mean error, worst. Errors are
(simulated - measured) / measured.

The markdown (--markdown FILE) is the part of docs/validation.md under "### Tables (script output)".

Usage: benchmarks/calibration/validate_collectives.py [--fmsim build/fmsim]
  [--measurements ../shared/calibration/measurements.json] [--markdown FILE] [--json FILE]
Exit 0, or 2 with one message when the measurements file or fmsim cannot be used."""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MiB = 1048576
GiB = 1024 * MiB

# Groups, in the order the tables are printed.
G_P5_2 = "EFA p5, 2 nodes (H100, EFAv2)"
G_P5_N = "EFA p5, 4-32 nodes (H100, EFAv2)"
G_P4DE = "EFA v1, 2 x p4de (A100)"
G_NVL4 = "NVLink 4 / NVLS, one node (H100, H200)"
G_NVL5 = "NVLink 5 / NVLS, one node (B200, GB200)"
G_NVL72 = "GB200 NVL72 rack(s)"
G_IB = "InfiniBand / RoCE (H100)"
GROUPS = [G_P5_2, G_P5_N, G_P4DE, G_NVL4, G_NVL5, G_NVL72, G_IB]


def topo(name):
    return os.path.join(ROOT, "topologies", name + ".json")


class Fmsim:
    """Runs `fmsim collective` sweeps, memoized per (cluster, op, gpus, algo)."""

    def __init__(self, binary, tmpdir):
        self.binary = binary
        self.tmpdir = tmpdir
        self.cache = {}

    def p5_cluster(self, nodes):
        """A cluster of `nodes` p5.48xlarge, rail-optimized and non-blocking (the published runs do not
        state their placement)."""
        path = os.path.join(self.tmpdir, f"p5-{nodes}node.json")
        if not os.path.exists(path):
            with open(path, "w") as f:
                json.dump({"name": f"p5-{nodes}node", "instance_type": "p5.48xlarge", "nodes": nodes,
                           "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 16, "oversubscription": 1.0},
                           "storage": {"nvme": True}}, f)
        return path

    def rows(self, cluster, op, sizes, gpus=None, algo=None):
        """fmsim's row for each requested size (nccl-tests rounding applied by fmsim)."""
        out = {}
        todo = [s for s in sizes if (cluster, op, gpus, algo, s) not in self.cache]
        # One sweep per run of powers of two; other sizes one by one.
        pow2 = sorted({s for s in todo if s & (s - 1) == 0})
        other = [s for s in todo if s & (s - 1) != 0]
        runs = [(pow2[0], pow2[-1], 2)] if pow2 else []
        runs += [(s, s, 2) for s in other]
        for low, high, factor in runs:
            cmd = [self.binary, "collective", cluster, "--op", op, "-b", str(low), "-e", str(high), "-f", str(factor),
                   "--json", "-"]
            if gpus:
                cmd += ["--gpus", str(gpus)]
            if algo:
                cmd += ["--algo", algo]
            proc = subprocess.run(cmd, capture_output=True, text=True)
            if proc.returncode != 0:
                sys.stderr.write(f"validate_collectives.py: fmsim failed: {' '.join(cmd)}\n{proc.stderr}")
                sys.exit(3)
            produced = json.loads(proc.stdout)["rows"]
            size = low
            wanted = []
            while size <= high:
                wanted.append(size)
                size *= factor
            by_size = {}
            for row in produced:
                by_size[row["size_bytes"]] = row
            for size in wanted:
                # fmsim rounds a size down to whole elements (per rank for split operations).
                match = by_size.get(float(size)) or min(produced, key=lambda r: abs(r["size_bytes"] - size))
                self.cache[(cluster, op, gpus, algo, size)] = match
        for s in sizes:
            out[s] = self.cache[(cluster, op, gpus, algo, s)]
        return out


def label_to_bytes(label):
    """Azure labels like '65K', '132K', '33M', '1G': decimal-rounded powers of two."""
    number, unit = float(label[:-1]), label[-1]
    approx = number * {"K": 1e3, "M": 1e6, "G": 1e9}[unit]
    return 2 ** round(math.log2(approx))


def size_label(size):
    for unit, scale in (("GiB", GiB), ("MiB", MiB), ("KiB", 1024)):
        if size >= scale and size % scale == 0:
            return f"{size // scale} {unit}"
    return f"{size} B"


class Check:
    """One measured figure against fmsim."""

    def __init__(self, label, size, measured, metric, cluster, op, gpus=None, algo=None, counted=True):
        self.label, self.size, self.measured, self.metric = label, size, measured, metric
        self.cluster, self.op, self.gpus, self.algo, self.counted = cluster, op, gpus, algo, counted
        self.simulated = None
        self.algorithm = ""


def curve(case_rows, size_of, cluster, op, busbw_key, time_key=None, gpus=None, algo=None):
    """Checks of one nccl-tests curve: busbw from 1 MiB up, time below (when the source printed time,
    else busbw converted to time by the case's own busbw factor, done by the caller via time_key=None)."""
    checks = []
    for r in case_rows:
        size = size_of(r)
        if size >= MiB or time_key is None:
            checks.append(Check(size_label(size), size, r[busbw_key], "busbw", cluster, op, gpus, algo))
        else:
            checks.append(Check(size_label(size), size, r[time_key], "time", cluster, op, gpus, algo))
    return checks


def busbw_curve_with_time(case_rows, size_of, busbw_of, factor, cluster, op, gpus, algo=None):
    """A curve printed as busbw only: below 1 MiB compare the time it implies, S x factor / busbw."""
    checks = []
    for r in case_rows:
        size, busbw = size_of(r), busbw_of(r)
        if size >= MiB:
            checks.append(Check(size_label(size), size, busbw, "busbw", cluster, op, gpus, algo))
        else:
            checks.append(Check(size_label(size), size, size * factor / (busbw * 1e9) * 1e6, "time", cluster, op, gpus, algo))
    return checks


def build_cases(cases, fm):
    """(case id, group, title, checks, reason-if-not-run) for every collective case."""
    out = []
    p5_2 = topo("p5-2node")
    handled = set()

    def add(cid, group, title, checks, reason=None):
        handled.add(cid)
        out.append({"id": cid, "group": group, "title": title, "checks": checks, "reason": reason})

    cid = "coll-aws-p5-2node-allreduce-8B-16GB"
    if cid in cases:
        add(cid, G_P5_2, "all_reduce, 2 x p5.48xlarge, out-of-place",
            curve(cases[cid]["measured"]["rows"], lambda r: r["size_bytes"], p5_2, "all_reduce", "oop_busbw_GBps", "oop_time_us"))

    # crazyguitar/aws-gpu-communication-benchmark: 2-32 p5 nodes, 32 MiB-8 GiB, busbw only.
    for cid, case in cases.items():
        if not cid.startswith("coll-aws-p5-") or not cid.endswith("nodes"):
            continue
        op = {"allreduce": "all_reduce", "allgather": "all_gather", "alltoall": "alltoall"}[cid.split("-")[3]]
        nodes = case["setup"]["nodes"]
        cluster = p5_2 if nodes == 2 else fm.p5_cluster(nodes)
        group = G_P5_2 if nodes == 2 else G_P5_N
        add(cid, group, f"{op}, {nodes} x ml.p5.48xlarge, NCCL 2.28, out-of-place",
            curve(case["measured"]["rows"], lambda r: r["size_MB"] * MiB, cluster, op, "oop_busbw_GBps",
                  gpus=8 * nodes))

    cid = "coll-aws-p4de-2node-allreduce-8B-2GB"
    if cid in cases:
        add(cid, G_P4DE, "all_reduce, 2 x p4de.24xlarge (A100, EFAv1), out-of-place",
            curve(cases[cid]["measured"]["rows"], lambda r: r["size_bytes"], topo("p4de-2node"), "all_reduce",
                  "oop_busbw_GBps", "oop_time_us"))

    h100 = topo("p5-2node")
    h200 = topo("p5en-128node")
    cid = "coll-azure-nd_h100_v5-8gpu-allreduce-nvls"
    if cid in cases:
        add(cid, G_NVL4, "all_reduce, 8 x H100 in one node, NVLS forced, NCCL 2.18.5, in-place",
            busbw_curve_with_time(cases[cid]["measured"]["rows"], lambda r: label_to_bytes(r["size"]),
                                  lambda r: r["busbw_GBps"], 1.75, h100, "all_reduce", 8, "nvls"))
    cid = "coll-azure-nd_h200_v5-8gpu-allreduce-nvls"
    if cid in cases:
        add(cid, G_NVL4, "all_reduce, 8 x H200 in one node, NVLS forced, NCCL 2.20.5, in-place",
            busbw_curve_with_time(cases[cid]["measured"]["rows"], lambda r: label_to_bytes(r["size"]),
                                  lambda r: r["busbw_GBps"], 1.75, h200, "all_reduce", 8, "nvls"))
    cid = "coll-h100-8gpu-ring-vs-nvls-nccl-maintainer"
    if cid in cases:
        add(cid, G_NVL4, "all_reduce, 8 x H100, 4 GiB: ring '~370', NVLS '~480' busbw (maintainer's figures)",
            [Check("ring, 4 GiB", 4 * GiB, 370.0, "busbw", h100, "all_reduce", 8, "ring"),
             Check("NVLS, 4 GiB", 4 * GiB, 480.0, "busbw", h100, "all_reduce", 8, "nvls")])
    cid = "coll-h100-8gpu-nvls-gpu-count-sweep"
    if cid in cases:
        checks = []
        nvls = {5: 420.0, 6: 440.0, 7: 460.0, 8: 480.0}
        for g in range(2, 9):
            checks.append(Check(f"{g} GPUs ring", 4 * GiB, 367.5, "busbw", h100, "all_reduce", g, "ring"))
            checks.append(Check(f"{g} GPUs tuned", 4 * GiB, nvls.get(g, 367.5), "busbw", h100, "all_reduce", g))
        add(cid, G_NVL4, "4 GiB all_reduce on 2-8 H100, ring forced vs tuned ('about 365-370' taken as 367.5)", checks)
    cid = "coll-h200-8gpu-allreduce-peak"
    if cid in cases:
        add(cid, G_NVL4, "all_reduce, 8 x H200, peak busbw of a 64 KiB-4 GiB sweep (taken at 4 GiB)",
            [Check("4 GiB", 4 * GiB, float(cases[cid]["measured"]["peak_busbw_GBps"]), "busbw", h200, "all_reduce", 8)])

    b200 = topo("p6-b200-64node")
    gb200 = topo("dgx-gb200-nvl72-8rack-ib")
    cid = "coll-b200-8gpu-allreduce-single-machine"
    if cid in cases:
        add(cid, G_NVL5, "all_reduce, 8 x B200 in one machine, '830+' GB/s busbw (a lower bound; taken at 8 GiB)",
            [Check("8 GiB", 8 * GiB, 830.0, "busbw", b200, "all_reduce", 8)])
    cid = "coll-azure-nd-gb200-v6-4gpu-allreduce-ring"
    if cid in cases:
        add(cid, G_NVL5, "all_reduce, the 4 GB200 of one ND GB200 v6 host (NVLink 5), ring, NCCL 2.25.1, in-place",
            busbw_curve_with_time(cases[cid]["measured"]["rows"], lambda r: label_to_bytes(r[0]), lambda r: r[1], 1.5,
                                  gb200, "all_reduce", 4, "ring"))
    cid = "coll-coreweave-gb200-1rack-allreduce"
    if cid in cases:
        add(cid, G_NVL72, "all_reduce, one GB200 NVL72 rack (72 GPUs), NCCL 2.26.2, out-of-place",
            curve(cases[cid]["measured"]["rows"], lambda r: r["size_bytes"], gb200, "all_reduce", "oop_busbw_GBps",
                  gpus=72))

    cid = "coll-coreweave-h100-64gpu-ib-sharp-allreduce"
    if cid in cases:
        add(cid, G_IB, "all_reduce, 8 x HGX H100 on InfiniBand NDR with SHARP, out-of-place",
            curve(cases[cid]["measured"]["rows"], lambda r: r["size_bytes"], topo("dgx-h100-8node-ib"), "all_reduce",
                  "oop_busbw_GBps", gpus=64))
    cid = "coll-h100-roce-nvls-1-2-vs-4-nodes"
    if cid in cases:
        ib = topo("dgx-h100-8node-ib")  # 8 x 400 Gb/s per node, as the RoCE nodes of the report
        m = cases[cid]["measured"]
        one_two = m["one_or_two_nodes_busbw_GBps"]
        more = m["more_than_two_nodes_busbw_GBps"]["NVLS=0 or 1"]
        checks = []
        # NCCL_NVLS_ENABLE=0 leaves ring (fmsim: ring forced); =1 lets the tuner choose among all (fmsim: tuned).
        for nodes in (1, 2):
            checks.append(Check(f"{nodes} node(s), NVLS=0 (ring)", 4 * GiB, one_two["NVLS=0"], "busbw", ib, "all_reduce",
                                8 * nodes, "ring"))
            checks.append(Check(f"{nodes} node(s), NVLS=1 (tuned)", 4 * GiB, one_two["NVLS=1"], "busbw", ib, "all_reduce",
                                8 * nodes))
        checks.append(Check("4 nodes, NVLS=0 (ring)", 4 * GiB, more, "busbw", ib, "all_reduce", 32, "ring"))
        checks.append(Check("4 nodes, NVLS=1 (tuned)", 4 * GiB, more, "busbw", ib, "all_reduce", 32))
        add(cid, G_IB, "4 GiB all_reduce on 1, 2 and 4 H100 nodes over 8 x 400 Gb/s RoCE (modelled as NDR IB), "
            "NCCL 2.19.3, user-reported rounded figures", checks)

    ep = "an expert-parallel library's dispatch/combine kernels (its own bandwidth accounting, token counts and " \
         "chunking), not an NCCL collective; `fmsim collective` models NCCL algorithms only (EP kernels are issue #25)"
    for cid in ("coll-aws-p5en-deepep-intranode", "coll-aws-pplx-efa-moe-alltoall-latency", "coll-aws-uccl-ep-bottleneck-bw"):
        if cid in cases:
            add(cid, None, cases[cid]["setup"].get("library", ""), [], ep)

    for cid, case in cases.items():
        if cid not in handled:
            add(cid, None, case["setup"].get("collective", ""), [],
                "no mapping in validate_collectives.py yet (new case): add one")
    return out


def run_checks(entries, fm):
    for entry in entries:
        for c in entry["checks"]:
            row = fm.rows(c.cluster, c.op, [c.size], c.gpus, c.algo)[c.size]
            c.simulated = row["busbw_GBps"] if c.metric == "busbw" else row["time_s"] * 1e6
            c.algorithm = row["algorithm"] + "/" + row["protocol"]


def error_pct(c):
    return (c.simulated - c.measured) / c.measured * 100 if c.measured else float("nan")


def stats(checks):
    errors = [error_pct(c) for c in checks if c.counted and not math.isnan(error_pct(c))]
    if not errors:
        return None
    worst = max(checks, key=lambda c: abs(error_pct(c)) if c.counted else -1)
    return {"n": len(errors), "mae_pct": sum(abs(e) for e in errors) / len(errors),
            "signed_mean_pct": sum(errors) / len(errors), "worst_pct": error_pct(worst), "worst": worst}


def render(entries, extra):
    out = []
    summary_rows = []
    for group in GROUPS:
        members = [e for e in entries if e["group"] == group]
        if not members:
            continue
        out.append(f"#### {group}\n")
        for e in members:
            out.append(f"##### {e['id']}: {e['title']}\n")
            out.append("| size / point | measured | simulated | unit | error | fmsim algorithm |")
            out.append("|---|---:|---:|---|---:|---|")
            for c in e["checks"]:
                unit = "busbw GB/s" if c.metric == "busbw" else "time us"
                out.append(f"| {c.label} | {c.measured:.2f} | {c.simulated:.2f} | {unit} | {error_pct(c):+.1f} % | {c.algorithm} |")
            out.append("")
        all_checks = [(e["id"], c) for e in members for c in e["checks"]]
        for metric in ("busbw", "time"):
            checks = [c for _, c in all_checks if c.metric == metric]
            s = stats(checks)
            if s:
                owner = next(cid for cid, c in all_checks if c is s["worst"])
                summary_rows.append((group, metric, s, f"{owner} {s['worst'].label}"))
    out.append("#### Not run: cases fmsim cannot express\n")
    out.append("| case | what it measures | why not |")
    out.append("|---|---|---|")
    for e in entries:
        if e["reason"]:
            out.append(f"| {e['id']} | {e['title']} | {e['reason']} |")
    out.append("")
    if extra:
        out.append("#### Outside calibration/ (not counted)\n")
        out.append("| point | measured | simulated | unit | error | fmsim algorithm |")
        out.append("|---|---:|---:|---|---:|---|")
        for title, c in extra:
            out.append(f"| {title} | {c.measured:.2f} | {c.simulated:.2f} | busbw GB/s | {error_pct(c):+.1f} % | {c.algorithm} |")
        out.append("")
    out.append("#### Summary per group\n")
    out.append("Bus bandwidth from 1 MiB up, time below 1 MiB, counted separately.\n")
    out.append("| group | compared | n | mean abs. error | signed mean | worst |")
    out.append("|---|---|---:|---:|---:|---|")
    for group, metric, s, where in summary_rows:
        what = "busbw >= 1 MiB" if metric == "busbw" else "time < 1 MiB"
        out.append(f"| {group} | {what} | {s['n']} | {s['mae_pct']:.1f} % | {s['signed_mean_pct']:+.1f} % | "
                   f"{s['worst_pct']:+.1f} % ({where}) |")
    counted = sum(1 for e in entries for c in e["checks"])
    skipped = sum(1 for e in entries if e["reason"])
    run = sum(1 for e in entries if not e["reason"])
    out.append("")
    out.append(f"{len(entries)} collective cases: {run} compared ({counted} points), {skipped} listed as not expressible.")
    return "\n".join(out), summary_rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--fmsim", default=os.path.join(ROOT, "build", "fmsim"))
    parser.add_argument("--measurements", default=os.path.join(ROOT, "..", "shared", "calibration", "measurements.json"))
    parser.add_argument("--markdown", help="write the tables (docs/validation.md's collective section) to FILE")
    parser.add_argument("--json", help="write the raw rows to FILE")
    args = parser.parse_args()
    try:
        with open(args.measurements) as f:
            cases = {c["id"]: c for c in json.load(f) if c.get("category") == "collective"}
    except (OSError, ValueError, KeyError, TypeError) as e:
        sys.stderr.write(f"validate_collectives.py: cannot read {args.measurements}: {e}\n")
        return 2
    if not os.access(args.fmsim, os.X_OK):
        sys.stderr.write(f"validate_collectives.py: {args.fmsim} is not an executable fmsim (build it, or pass --fmsim)\n")
        return 2
    with tempfile.TemporaryDirectory() as tmpdir:
        fm = Fmsim(args.fmsim, tmpdir)
        entries = build_cases(cases, fm)
        run_checks(entries, fm)
        # NVIDIA/nccl pull request #1112 (2023-12): nccl-tests on 8 AWS p5 nodes, NVLSTree, 4 GiB all_reduce,
        # NCCL 2.19.1: 280.03 GB/s busbw. Not in calibration/, not counted.
        pr = Check("4 GiB", 4 * GiB, 280.03, "busbw", topo("p5-16node"), "all_reduce", 64, "nvls_tree", counted=False)
        run_checks([{"checks": [pr]}], fm)
        extra = [("NVIDIA/nccl PR #1112: all_reduce, 8 x p5.48xlarge, NVLSTree, NCCL 2.19.1, 4 GiB", pr)]
        text, summary = render(entries, extra)
    print(text)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write(text + "\n")
    if args.json:
        raw = {"cases": [], "summary": []}
        for e in entries:
            raw["cases"].append({
                "id": e["id"], "group": e["group"], "title": e["title"], "not_run_reason": e["reason"],
                "rows": [{"point": c.label, "size_bytes": c.size, "metric": c.metric, "measured": c.measured,
                          "simulated": c.simulated, "error_pct": error_pct(c), "algorithm": c.algorithm,
                          "gpus": c.gpus, "forced_algorithm": c.algo, "op": c.op,
                          "cluster": os.path.basename(c.cluster)} for c in e["checks"]]})
        for group, metric, s, where in summary:
            raw["summary"].append({"group": group, "metric": metric, "n": s["n"], "mae_pct": s["mae_pct"],
                                   "signed_mean_pct": s["signed_mean_pct"], "worst_pct": s["worst_pct"], "worst": where})
        with open(args.json, "w") as f:
            json.dump(raw, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
