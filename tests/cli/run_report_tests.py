#!/usr/bin/env python3
"""End-to-end tests of `fmsim report`: the HTML page renders in headless Chromium without console
errors or fetches and shows its charts (pixels of each chart's colours on screen); the Prometheus text
parses, carries simulated="true" and agrees with the result it came from; the run result's pipeline
time line and per-GPU usage obey the schedule's invariants; bad input exits 2.
Needs Debian's chromium and python3-pil (scripts/install-deps.sh --test).
Usage: run_report_tests.py FMSIM SOURCE_DIR"""
import json
import os
import re
import shutil
import subprocess
import tempfile

from PIL import Image

from cli_support import CONFIGS, expect_bad_input, run, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-report-tests-")
TRAINING = os.path.join(CONFIGS, "training", "llama3-70b-p5.json")
SERVING = os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json")
CHECKPOINT = os.path.join(CONFIGS, "training", "llama3.1-405b-p5-2048.json")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


def result(command, scenario, name, *extra):
    path = os.path.join(TMP, name)
    proc = run(command, scenario, *extra, "--json", path)
    assert proc.returncode == 0, proc.stderr
    with open(path) as f:
        return path, json.load(f)


RUN_FILE, RUN = result("run", TRAINING, "run.json")


def render(html_path, height):
    """Screenshot of the page in headless Chromium, and the console lines it logged."""
    png = html_path + ".png"
    proc = subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--enable-logging=stderr",
                           "--v=0", f"--window-size=1000,{height}", f"--screenshot={png}", "file://" + os.path.abspath(html_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and os.path.exists(png), proc.stderr[-2000:]
    console = [l for l in proc.stderr.splitlines() if ":CONSOLE" in l]
    return Image.open(png).convert("RGB"), console


def pixels_of(image, hex_color):
    rgb = tuple(int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return sum(count for count, color in image.getcolors(maxcolors=1 << 22) if color == rgb)


def check_page(html_path, height, charts):
    """The page is self-contained, renders without console messages, and every chart shows its colours."""
    with open(html_path) as f:
        html = f.read()
    assert not re.search(r"\b(src|href)\s*=", html), "the page references an external resource"
    assert "<script" not in html
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    image, console = render(html_path, height)
    assert not console, f"console messages: {console}"
    for chart_id, colors in charts.items():
        assert f"id='{chart_id}'" in html, f"chart {chart_id} missing"
        for color in colors:
            n = pixels_of(image, color)
            assert n >= 40, f"{chart_id}: colour {color} covers {n} pixels on screen"


@test
def training_page_renders_with_its_charts():
    html = os.path.join(TMP, "run.html")
    proc = run("report", RUN_FILE, "--html", html)
    assert proc.returncode == 0, proc.stderr
    check_page(html, 1700, {
        "breakdown-chart": ["#4e79a7", "#bab0ac"],           # compute, bubble
        "pipeline-chart": ["#1f77b4", "#2ca02c", "#9467bd"],  # forward, backward, optimizer
        "memory-chart": ["#8c564b", "#bcbd22", "#cc0000"],    # weights, activations, the HBM line
    })
    with open(html) as f:
        text = f.read()
    stages = RUN["scenario"]["parallelism"]["pipeline_model_parallel_size"]
    for stage in range(stages):
        assert f"stage {stage} (rank " in text, f"pipeline lane of stage {stage} missing"


@test
def serving_page_shows_percentiles_against_the_slo():
    path, doc = result("serve", SERVING, "serve.json", "--set", "workload.requests=400")
    html = os.path.join(TMP, "serve.html")
    assert run("report", path, "--html", html).returncode == 0
    check_page(html, 1900, {"ttft_s-chart": ["#4e79a7", "#f28e2b", "#e15759", "#cc0000"],
                            "tpot_s-chart": ["#e15759"], "memory-chart": ["#1f77b4"], "replica-chart": ["#59a14f"]})
    with open(html) as f:
        text = f.read()
    assert "SLO p99 2 s" in text, "the TTFT SLO line is labelled with the scenario's SLO"


@test
def checkpoint_page_compares_strategies():
    path = os.path.join(TMP, "ckpt.json")
    assert run("checkpoint", CHECKPOINT, "--json", path).returncode == 0
    html = os.path.join(TMP, "ckpt.html")
    assert run("report", path, "--html", html).returncode == 0
    check_page(html, 900, {"save-chart": ["#4e79a7"], "goodput-chart": ["#e15759"]})


def parse_prometheus(text):
    """{name: [(labels, value)]}, checking HELP/TYPE precede each family and every line is well formed."""
    families, declared = {}, set()
    sample = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="(?:[^"\\]|\\.)*",?)*)\} (\S+)$')
    for line in text.splitlines():
        if line.startswith("# HELP ") or line.startswith("# TYPE "):
            declared.add(line.split()[2])
            if line.startswith("# TYPE "):
                assert line.split()[3] == "gauge", line
            continue
        m = sample.match(line)
        assert m, f"malformed line {line!r}"
        name = m.group(1)
        assert name in declared, f"{name} has no HELP/TYPE"
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(2)))
        families.setdefault(name, []).append((labels, float(m.group(3))))
    return families


@test
def prometheus_export_of_a_run_matches_the_result():
    prom = os.path.join(TMP, "run.prom")
    assert run("report", RUN_FILE, "--prometheus", prom).returncode == 0
    with open(prom) as f:
        families = parse_prometheus(f.read())
    for name, samples in families.items():
        for labels, _ in samples:
            assert labels.get("simulated") == "true", f"{name} lacks simulated=\"true\""
    assert abs(families["fmsim_step_time_seconds"][0][1] - RUN["step_time_s"]) <= 1e-6 * RUN["step_time_s"]
    mib = 1024 * 1024
    capacity_mib = RUN["hbm_capacity_bytes"] / mib
    used = {l["rank"]: v for l, v in families["DCGM_FI_DEV_FB_USED"]}
    free = {l["rank"]: v for l, v in families["DCGM_FI_DEV_FB_FREE"]}
    assert len(used) == len(RUN["gpus"]) > 0
    for gpu in RUN["gpus"]:
        rank = str(gpu["rank"])
        assert abs(used[rank] - gpu["hbm_used_bytes"] / mib) < 1e-3 * used[rank]
        assert abs(used[rank] + free[rank] - capacity_mib) < 1e-3 * capacity_mib, "FB used + free = HBM"
    for labels, util in families["DCGM_FI_DEV_GPU_UTIL"]:
        assert 0 < util <= 100, util
        assert labels["modelName"] == RUN["derived"]["gpu"] and labels["Hostname"].startswith("node")
    parts = {l["part"]: v for l, v in families["fmsim_step_breakdown_seconds"]}
    assert abs(sum(parts.values()) - RUN["step_time_s"]) < 0.01 * RUN["step_time_s"], "breakdown parts sum to the step"


@test
def prometheus_export_of_serving_has_a_series_per_gpu():
    path, doc = result("serve", SERVING, "serve-prom.json", "--set", "workload.requests=200")
    proc = run("report", path, "--prometheus", "-")
    assert proc.returncode == 0, proc.stderr
    families = parse_prometheus(proc.stdout)
    assert len(families["DCGM_FI_DEV_GPU_UTIL"]) == doc["cluster"]["gpus"]
    quantiles = {l["quantile"]: v for l, v in families["fmsim_time_to_first_token_seconds"]}
    assert quantiles["0.99"] == doc["ttft_s"]["p99"] or abs(quantiles["0.99"] - doc["ttft_s"]["p99"]) < 1e-9 * doc["ttft_s"]["p99"]


@test
def run_and_serve_export_the_same_metrics_as_report():
    for command, scenario, extra in [("run", TRAINING, []), ("serve", SERVING, ["--set", "workload.requests=200"])]:
        doc, direct = os.path.join(TMP, command + "-direct.json"), os.path.join(TMP, command + "-direct.prom")
        proc = run(command, scenario, *extra, "--json", doc, "--prometheus", direct)
        assert proc.returncode == 0, proc.stderr
        via_report = run("report", doc, "--prometheus", "-")
        with open(direct) as f:
            assert f.read() == via_report.stdout, f"{command} --prometheus differs from fmsim report --prometheus"


@test
def pipeline_timeline_follows_the_schedule():
    p = RUN["scenario"]["parallelism"]
    stages, vp, microbatches = p["pipeline_model_parallel_size"], p.get("virtual_pipeline_model_parallel_size", 1), RUN["derived"]["microbatches"]
    timeline = RUN["pipeline_timeline"]["stages"]
    assert [s["pipeline_rank"] for s in timeline] == list(range(stages))
    step = RUN["step_time_s"]
    first_forward_end = {}
    for s in timeline:
        kinds = s["kind"]
        assert kinds.count("F") == kinds.count("B") == microbatches * vp, "one forward and one backward per micro-batch and chunk"
        assert kinds[-1] == "O" and kinds.count("O") == 1, "the optimizer step closes the step"
        spans = list(zip(s["start_s"], s["end_s"]))
        for (a0, a1), (b0, b1) in zip(spans, spans[1:]):
            assert a0 <= a1 <= b0 + 1e-9, "passes of one stage do not overlap (one compute stream)"
        assert spans[0][0] >= 0 and spans[-1][1] <= step * (1 + 1e-9)
        first_forward_end[s["pipeline_rank"]] = (s["start_s"][0], s["end_s"][0])
    for stage in range(1, stages):
        assert first_forward_end[stage][0] >= first_forward_end[stage - 1][1] - 1e-9, \
            "a stage's first forward starts after the previous stage's first forward ends"


@test
def gpu_usage_agrees_with_the_breakdown():
    gpus = {g["rank"]: g for g in RUN["gpus"]}
    critical = gpus[RUN["breakdown_rank"]]
    busy_s = critical["compute_busy_fraction"] * RUN["step_time_s"]
    exposed = RUN["breakdown_s"]["compute"] + RUN["breakdown_s"]["optimizer"]
    assert busy_s >= exposed * (1 - 1e-6), "busy compute time covers the exposed compute and optimizer"
    for g in gpus.values():
        assert 0 < g["compute_busy_fraction"] <= 1 + 1e-9
        assert g["nvlink_tx_bytes"] > 0, "TP4 inside a node moves bytes over NVLink"


@test
def sweep_lines_leave_out_the_time_line():
    sweep = write(TMP, "sweep.json", json.dumps({"schema": "fmsim.sweep/1", "name": "one", "command": "run",
                                                 "scenario": os.path.abspath(TRAINING), "points": [{"training.seq_length": 8192}]}))
    out = os.path.join(TMP, "sweep.jsonl")
    assert run("sweep", sweep, "--out", out).returncode == 0
    with open(out) as f:
        line = json.loads(f.readline())
    assert line["status"] == "ok" and "pipeline_timeline" not in line["result"] and "gpus" in line["result"]


@test
def bad_input_exits_2():
    html = os.path.join(TMP, "bad.html")
    not_result = write(TMP, "topo.json", json.dumps({"schema": "fmsim.topo/1"}))
    expect_bad_input(["report", not_result, "--html", html], ["topo.json", "/schema", "fmsim.run/1"], html)
    expect_bad_input(["report", RUN_FILE], ["--html", "--prometheus"], html)
    expect_bad_input(["report", os.path.join(TMP, "missing.json"), "--html", html], ["missing.json"], html)
    broken = dict(RUN)
    del broken["breakdown_s"]
    expect_bad_input(["report", write(TMP, "broken.json", json.dumps(broken)), "--html", html], ["broken.json", "/breakdown_s"], html)


if __name__ == "__main__":
    run_tests()
