#!/usr/bin/env python3
"""fmsim's --metrics series in a real Prometheus (issue #30): each command's OpenMetrics file is loaded with
`promtool tsdb create-blocks-from openmetrics`, a Prometheus server is started on localhost over those
blocks, and PromQL queries must return the numbers of fmsim's own JSON result. Then every panel query of
the shipped Grafana dashboard (configs/grafana/fmsim-dashboard.json) must return data.

Needs Debian's prometheus package (promtool and the server; scripts/install-deps.sh --test installs it).
Usage: run_prometheus_tests.py FMSIM SOURCE_DIR"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

FMSIM, SRC = sys.argv[1], sys.argv[2]
DAY = 86400
BASE = 1767225600  # 2026-01-01T00:00:00Z, fmsim's default --metrics-start
failures = []


def check(condition, message):
    if not condition:
        failures.append(message)
        print("FAIL:", message)


def close(a, b, rel=1e-9, abs_tol=0.0):
    return abs(a - b) <= max(rel * max(abs(a), abs(b)), abs_tol)


def fmsim(*args):
    proc = subprocess.run([FMSIM, *args], capture_output=True, text=True)
    if proc.returncode != 0:
        sys.exit(f"fmsim {' '.join(args)} failed ({proc.returncode}):\n{proc.stderr}")
    return proc


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def query(port, expr, at):
    url = f"http://127.0.0.1:{port}/api/v1/query?" + urllib.parse.urlencode({"query": expr, "time": f"{at:.3f}"})
    with urllib.request.urlopen(url, timeout=30) as response:
        body = json.load(response)
    if body.get("status") != "success":
        sys.exit(f"query {expr} failed: {body}")
    return body["data"]["result"]


def query_range(port, expr, start, end, step):
    url = f"http://127.0.0.1:{port}/api/v1/query_range?" + urllib.parse.urlencode(
        {"query": expr, "start": f"{start:.3f}", "end": f"{end:.3f}", "step": step})
    with urllib.request.urlopen(url, timeout=30) as response:
        body = json.load(response)
    if body.get("status") != "success":
        sys.exit(f"query_range {expr} failed: {body}")
    return body["data"]["result"]


def scalar(port, expr, at):
    result = query(port, expr, at)
    if len(result) != 1:
        failures.append(f"{expr}: expected one series, got {len(result)}")
        print("FAIL:", failures[-1])
        return float("nan")
    return float(result[0]["value"][1])


for tool in ("promtool", "prometheus"):
    if not shutil.which(tool):
        sys.exit(f"{tool} not found: install Debian's prometheus package (scripts/install-deps.sh --test)")

tmp = tempfile.mkdtemp(prefix="fmsim-prometheus-")
data = os.path.join(tmp, "data")
server = None
try:
    # One day apart, so that the four loads make separate blocks.
    starts = {"run": BASE, "serve": BASE + DAY, "checkpoint": BASE + 2 * DAY, "cluster": BASE + 3 * DAY}
    paths = {k: os.path.join(tmp, k + ".om") for k in starts}
    docs = {k: os.path.join(tmp, k + ".json") for k in starts}
    common = ["--metrics-label", "site=ci"]
    fmsim("run", os.path.join(SRC, "configs/training/llama3-70b-p5.json"), "--json", docs["run"],
          "--metrics", paths["run"], "--metrics-start", str(starts["run"]), *common)
    fmsim("serve", os.path.join(SRC, "configs/serving/llama3.3-70b-p5en.json"), "--json", docs["serve"],
          "--metrics", paths["serve"], "--metrics-start", "2026-01-02T00:00:00Z", *common)
    fmsim("checkpoint", os.path.join(SRC, "configs/training/llama3.1-405b-p5-2048.json"), "--json", docs["checkpoint"],
          "--metrics", paths["checkpoint"], "--metrics-start", str(starts["checkpoint"]), *common)
    fmsim("cluster", os.path.join(SRC, "topologies/p5-16node.json"), os.path.join(SRC, "configs/cluster/p5-16node-week.jsonl"),
          "--node-failures-per-node-hour", "0.01", "--json", docs["cluster"],
          "--metrics", paths["cluster"], "--metrics-start", str(starts["cluster"]), *common)
    result = {k: json.load(open(v)) for k, v in docs.items()}

    for kind, path in paths.items():
        text = open(path).read()
        check(text.endswith("# EOF\n"), f"{kind}: the OpenMetrics file ends with # EOF")
        samples = [line for line in text.splitlines() if line and not line.startswith("#")]
        check(all('simulated="true"' in line and 'site="ci"' in line for line in samples),
              f"{kind}: every sample carries simulated=\"true\" and the --metrics-label")
        check(all(re.search(r" \d+\.\d{3}$", line) for line in samples), f"{kind}: every sample has a timestamp")
        proc = subprocess.run(["promtool", "tsdb", "create-blocks-from", "openmetrics", path, data], capture_output=True, text=True)
        check(proc.returncode == 0, f"{kind}: promtool create-blocks-from openmetrics: {proc.stderr[-500:]}")

    port = free_port()
    config = os.path.join(tmp, "prometheus.yml")
    with open(config, "w") as f:
        f.write("global:\n  scrape_interval: 1h\n")
    log = open(os.path.join(tmp, "prometheus.log"), "w")
    server = subprocess.Popen(["prometheus", f"--config.file={config}", f"--storage.tsdb.path={data}",
                               "--storage.tsdb.retention.time=100y", f"--web.listen-address=127.0.0.1:{port}"],
                              stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 90
    while True:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/-/ready", timeout=2) as r:
                if r.status == 200:
                    break
        except OSError:
            pass
        if time.time() > deadline or server.poll() is not None:
            log.close()
            sys.exit("Prometheus did not become ready:\n" + open(os.path.join(tmp, "prometheus.log")).read()[-2000:])
        time.sleep(0.5)

    # --- run: per-GPU counters end at the JSON's totals; the step's gauges are the JSON's. ---
    run = result["run"]
    end = starts["run"] + run["step_time_s"]
    for g in run["gpus"]:
        sel = f'{{rank="{g["rank"]}",simulated="true"}}'
        nvlink = scalar(port, f"max_over_time(fmsim_nvlink_tx_bytes_total{sel}[1h])", end)
        check(close(nvlink, g["nvlink_tx_bytes"], 1e-9), f"run rank {g['rank']}: NVLink bytes {nvlink} vs JSON {g['nvlink_tx_bytes']}")
        efa = scalar(port, f"max_over_time(efa_tx_bytes_total{sel}[1h])", end)
        check(close(efa, g["network_tx_bytes"], 1e-9, 1.0), f"run rank {g['rank']}: EFA bytes {efa} vs JSON {g['network_tx_bytes']}")
        util = scalar(port, f"avg_over_time(DCGM_FI_DEV_GPU_UTIL{sel}[1h])", end)
        check(abs(util - 100 * g["compute_busy_fraction"]) <= 5, f"run rank {g['rank']}: mean GPU_UTIL {util} vs JSON {100 * g['compute_busy_fraction']}")
    step = scalar(port, 'fmsim_training_step_time_seconds{simulated="true"}', end)
    check(close(step, run["step_time_s"], 1e-12), f"run: step time {step} vs JSON {run['step_time_s']}")
    # The rate of NVLink bytes over the whole step is the JSON's bytes over the step time.
    g0 = run["gpus"][0]
    window = f"{max(1, round(run['step_time_s'] * 1000))}ms"
    rate = scalar(port, f'rate(fmsim_nvlink_tx_bytes_total{{rank="{g0["rank"]}"}}[{window}])', end)
    check(close(rate, g0["nvlink_tx_bytes"] / run["step_time_s"], 0.05), f"run: NVLink rate {rate} vs JSON {g0['nvlink_tx_bytes'] / run['step_time_s']}")

    # --- serve: the run-wide percentiles, completions, tokens, and the histogram's p99 bucket. ---
    serve = result["serve"]
    series_end = max(float(line.rsplit(" ", 1)[1]) for line in open(paths["serve"]) if line.startswith("fmsim_serving_ttft_seconds"))
    for key, q in (("p50", "0.5"), ("p90", "0.9"), ("p99", "0.99")):
        ttft = scalar(port, f'fmsim_serving_ttft_seconds{{quantile="{q}"}}', series_end)
        check(close(ttft, serve["ttft_s"][key], 1e-12), f"serve: TTFT {key} {ttft} vs JSON {serve['ttft_s'][key]}")
        tpot = scalar(port, f'fmsim_serving_tpot_seconds{{quantile="{q}"}}', series_end)
        check(close(tpot, serve["tpot_s"][key], 1e-12), f"serve: TPOT {key} {tpot} vs JSON {serve['tpot_s'][key]}")
    done = scalar(port, "max_over_time(fmsim_serving_requests_finished_total[1d])", series_end)
    check(done == serve["completed"], f"serve: finished {done} vs JSON {serve['completed']}")
    generated = scalar(port, "sum(max_over_time(fmsim_serving_generation_tokens_total[1d]))", series_end)
    check(generated == sum(r["decode_tokens"] for r in serve["replicas"]), f"serve: generated tokens {generated}")
    p99 = scalar(port, "histogram_quantile(0.99, max_over_time(fmsim_serving_time_to_first_token_seconds_bucket[1d]))", series_end)
    bounds = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0]
    upper = next(b for b in bounds if b >= serve["ttft_s"]["p99"])
    lower = max([b for b in bounds if b < serve["ttft_s"]["p99"]], default=0.0)
    check(lower - 1e-9 <= p99 <= upper + 1e-9, f"serve: histogram p99 TTFT {p99} outside the JSON p99's bucket ({lower}, {upper}]")

    # --- checkpoint: FSx bytes and the save time of the fsx strategy. ---
    ckpt = result["checkpoint"]
    fsx = next(s for s in ckpt["strategies"] if s["strategy"] == "fsx")
    ckpt_end = starts["checkpoint"] + 3600
    written = scalar(port, 'max_over_time(fsx_lustre_data_write_bytes_total{strategy="fsx"}[1d])', ckpt_end)
    check(close(written, ckpt["checkpoint_bytes"], 1e-9), f"checkpoint: FSx bytes {written} vs JSON {ckpt['checkpoint_bytes']}")
    meta = scalar(port, 'max_over_time(fsx_lustre_metadata_operations_total{strategy="fsx"}[1d])', ckpt_end)
    check(meta == 4 * ckpt["files"], f"checkpoint: metadata operations {meta} vs 4 x {ckpt['files']} files (create+close, open+close)")
    save = scalar(port, 'max_over_time(fmsim_checkpoint_save_seconds{strategy="fsx"}[1d])', ckpt_end)
    check(close(save, fsx["save_time_s"], 1e-12), f"checkpoint: save {save} vs JSON {fsx['save_time_s']}")

    # --- cluster: utilisation, failures, completions, XID series. ---
    cl = result["cluster"]
    span_s = cl["makespan_s"]
    cl_end = starts["cluster"] + span_s
    rng = f"{int(span_s) + 60}s"
    util = scalar(port, f"avg_over_time(fmsim_cluster_gpu_utilization_ratio[{rng}])", cl_end)
    check(abs(util - cl["utilization"]) <= 0.01, f"cluster: mean utilisation {util} vs JSON {cl['utilization']}")
    fails = scalar(port, f"sum(max_over_time(fmsim_cluster_node_failures_total[{rng}]))", cl_end)
    check(fails == cl["failures"]["node_failures"] and fails > 0, f"cluster: node failures {fails} vs JSON {cl['failures']['node_failures']}")
    check(sum(cl["failures"]["by_cause"].values()) == cl["failures"]["node_failures"], "cluster: failures by cause add up")
    completed = scalar(port, f"max_over_time(fmsim_cluster_jobs_completed_total[{rng}])", cl_end)
    check(completed == cl["completed"], f"cluster: completed {completed} vs JSON {cl['completed']}")
    # One XID series per GPU a GPU-attributed cause hit, with that cause's XID; memory causes count ECC errors.
    gpu_causes = {"Faulty GPU": 79, "GPU HBM3 Memory": 95, "GPU SRAM Memory": 95, "GPU System Processor": 119,
                  "GPU Thermal Interface + Sensor": 79}
    xid = query(port, f"max_over_time(DCGM_FI_DEV_XID_ERRORS[{rng}])", cl_end)
    expected_xids = {v for k, v in gpu_causes.items() if cl["failures"]["by_cause"].get(k)}
    check({float(r["value"][1]) for r in xid} == {float(v) for v in expected_xids},
          f"cluster: XIDs {[r['value'][1] for r in xid]} vs the drawn causes {cl['failures']['by_cause']}")
    memory = sum(cl["failures"]["by_cause"].get(k, 0) for k in ("GPU HBM3 Memory", "GPU SRAM Memory"))
    dbe = query(port, f"sum(max_over_time(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL[{rng}]))", cl_end)
    check(memory == 0 and not dbe or dbe and float(dbe[0]["value"][1]) == memory, f"cluster: ECC errors {dbe} vs {memory} memory failures")

    # --- the Grafana dashboard: every panel's queries return data over one of the four runs. ---
    dashboard = json.load(open(os.path.join(SRC, "configs/grafana/fmsim-dashboard.json")))
    check(dashboard.get("schemaVersion", 0) >= 30 and dashboard.get("uid"), "dashboard: schemaVersion and uid")
    names = [v["name"] for v in dashboard["templating"]["list"]]
    check(names == ["DS_PROMETHEUS", "scenario"], f"dashboard variables {names}")
    spans = {"run": (starts["run"], end), "serve": (starts["serve"], series_end),
             "checkpoint": (starts["checkpoint"], ckpt_end), "cluster": (starts["cluster"], cl_end)}
    panels = [p for p in dashboard["panels"] if p["type"] != "row"]
    check(len(panels) >= 20, f"dashboard: {len(panels)} panels")
    for panel in panels:
        check(panel["datasource"]["uid"] == "${DS_PROMETHEUS}", f"panel {panel['title']}: datasource variable")
        for target in panel["targets"]:
            found = False
            for kind, (start, stop) in spans.items():
                step = max(1.0, (stop - start) / 200)
                expr = target["expr"].replace("$__rate_interval", f"{int(4 * step)}s").replace("$scenario", ".*")
                if query_range(port, expr, start, stop + step, step):  # a dashboard's range runs past the last sample
                    found = True
                    break
            check(found, f"dashboard panel '{panel['title']}' query {target['expr']!r} returns no data for any fmsim run")
finally:
    if server:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    shutil.rmtree(tmp, ignore_errors=True)

if failures:
    print(f"{len(failures)} failure(s)")
    sys.exit(1)
print("prometheus tests: ok")
