#!/usr/bin/env python3
"""`fmsim cluster CLUSTER.json JOBS.jsonl`: the shipped trace runs under every policy and placement, backfill
never waits longer than FIFO on it, GPU-hours are conserved, the result validates against its schema, the
time line holds every run, the same seed gives the same result, and bad traces or options exit 2 naming the
line and key with no output file. Usage: run_cluster_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, validate_schema, write

TMP = tempfile.mkdtemp(prefix="fmsim-cluster-tests-")
CLUSTER = os.path.join(TOPO, "p5-16node.json")
TRACE = os.path.join(CONFIGS, "cluster", "p5-16node-week.jsonl")


def validate_against_schema(doc):
    validate_schema(doc, "cluster.schema.json")


def eight_node_cluster(name):
    """8 p5 nodes under one non-blocking leaf switch."""
    return write(TMP, name, json.dumps({"name": "p5-8", "description": "test", "instance_type": "p5.48xlarge", "nodes": 8,
                                        "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 8, "oversubscription": 1.0}}))


@test
def every_policy_and_placement_runs_the_shipped_trace():
    waits = {}
    for policy in ("fifo", "backfill", "priority"):
        for placement in ("topology", "spread"):
            doc = run_json("cluster", CLUSTER, TRACE, "--policy", policy, "--placement", placement)
            assert doc["completed"] == doc["jobs"] == 150, doc["completed"]
            assert doc["policy"] == policy and doc["placement"] == placement
            waits[(policy, placement)] = doc["wait_s"]["mean"]
            if placement == "topology":
                topo_spread = doc["jobs_spread_beyond_needed"]
            else:
                assert doc["jobs_spread_beyond_needed"] > topo_spread
    assert waits[("backfill", "topology")] < waits[("fifo", "topology")], waits


@test
def gpu_hours_are_conserved_and_failures_cost_time():
    clean = run_json("cluster", CLUSTER, TRACE)
    jobs = [json.loads(l) for l in open(TRACE) if l.strip()]
    work = sum(j["nodes"] * 8 * float(j["duration"].replace("min", "")) / 60 for j in jobs)
    assert abs(clean["gpu_hours"]["busy"] - work) < 1e-6 * work, (clean["gpu_hours"], work)
    assert clean["gpu_hours"]["lost"] == 0 and clean["restarts"] == 0
    failing = run_json("cluster", CLUSTER, TRACE, "--node-failures-per-node-hour", "0.002", "--seed", "5")
    assert failing["failures"]["node_failures"] > 0 and failing["restarts"] > 0
    # Work plus what failures cost is what the nodes were held for.
    assert abs(failing["gpu_hours"]["busy"] - (work + failing["gpu_hours"]["lost"])) < 1e-6 * work
    lost_per_job = sum(j["lost_s"] * j["gpus"] for j in failing["per_job"]) / 3600
    assert abs(lost_per_job - failing["gpu_hours"]["lost"]) < 1e-6 * max(1.0, lost_per_job)
    again = run_json("cluster", CLUSTER, TRACE, "--node-failures-per-node-hour", "0.002", "--seed", "5")
    assert again["per_job"] == failing["per_job"]


@test
def the_result_validates_and_the_timeline_holds_every_run():
    out, timeline = os.path.join(TMP, "r.json"), os.path.join(TMP, "t.json")
    proc = run("cluster", CLUSTER, TRACE, "--json", out, "--timeline", timeline, "--node-failures-per-node-hour", "0.002",
               "--group-failures-per-group-hour", "0.005", "--seed", "3")
    assert proc.returncode == 0, proc.stderr
    doc, trace = json.load(open(out)), json.load(open(timeline))
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    busy = sum(e["dur"] for e in spans) / 1e6 * 8 / 3600
    assert abs(busy - doc["gpu_hours"]["busy"]) < 1e-6 * busy
    # Each group failure is marked, and no job runs on a node of a group while the group is out.
    outages = doc["failures"]["group_failures"]
    assert outages, "the seed draws no group failure"
    assert len([e for e in trace["traceEvents"] if e["ph"] == "i"]) == len(outages)
    per_group, repair_us = doc["cluster"]["nodes_per_switch_group"], doc["failures"]["group_repair_s"] * 1e6
    for g in outages:
        start = g["time_s"] * 1e6
        for e in spans:
            if e["tid"] // per_group == g["group"]:
                assert e["ts"] + e["dur"] <= start + 1e-3 or e["ts"] >= start + repair_us - 1e-3, (g, e)
    # No node runs two jobs at once.
    by_node = {}
    for e in spans:
        by_node.setdefault(e["tid"], []).append((e["ts"], e["ts"] + e["dur"]))
    for node, runs in by_node.items():
        runs.sort()
        assert all(a[1] <= b[0] + 1e-3 for a, b in zip(runs, runs[1:])), node
    validate_against_schema(doc)


@test
def per_job_runs_add_up_and_the_html_report_draws_them():
    out, html = os.path.join(TMP, "runs.json"), os.path.join(TMP, "cluster.html")
    proc = run("cluster", CLUSTER, TRACE, "--json", out, "--node-failures-per-node-hour", "0.002")
    assert proc.returncode == 0, proc.stderr
    doc = json.load(open(out))
    held = 0.0
    interrupted = 0
    for job in doc["per_job"]:
        runs = job["runs"]
        assert runs and runs[0]["start_s"] == job["start_s"] and runs[-1]["end_s"] == job["end_s"], job["id"]
        assert all(len(r["nodes"]) == job["nodes"] for r in runs), job["id"]
        assert sum(r["interrupted"] for r in runs) == job["restarts"] and not runs[-1]["interrupted"], job["id"]
        interrupted += job["restarts"]
        held += sum((r["end_s"] - r["start_s"]) * len(r["nodes"]) for r in runs)
    assert interrupted > 0, "the failure rate should interrupt some runs"
    assert abs(held * 8 / 3600 - doc["gpu_hours"]["busy"]) < 1e-6 * doc["gpu_hours"]["busy"], (held, doc["gpu_hours"])
    proc = run("report", out, "--html", html, "--prometheus", os.path.join(TMP, "cluster.prom"))
    assert proc.returncode == 0, proc.stderr
    page = open(html).read()
    assert "id='cluster-busy'" in page and "id='cluster-timeline'" in page and "Queues" in page
    assert page.count(">node ") == 16, page.count(">node ")  # a track per node of the 16-node cluster
    cut = sum(len(r["nodes"]) for job in doc["per_job"] for r in job["runs"] if r["interrupted"])
    assert page.count("fill='#e15759'") == cut, (page.count("fill='#e15759'"), cut)  # each interrupted run on each of its nodes
    prom = open(os.path.join(TMP, "cluster.prom")).read()
    assert f'fmsim_cluster_jobs_completed{{scenario="",simulated="true"}} {doc["completed"]}' in prom, prom[:400]


@test
def scenario_jobs_run_at_their_simulated_step_time_where_they_are_placed():
    # 16 p5 under leaf switches of 4 nodes, 4:1 oversubscribed: where a job lands changes what it crosses.
    cluster = write(TMP, "os4.json", json.dumps({"name": "p5-16node-os4", "description": "test", "instance_type": "p5.48xlarge",
                                                 "nodes": 16, "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 4,
                                                                         "oversubscription": 4.0}}))
    scenario = os.path.join(CONFIGS, "training", "llama3-70b-p5.json")
    trace = write(TMP, "scenario-jobs.jsonl", json.dumps({"id": "train", "nodes": 8, "scenario": scenario, "steps": 100}) + "\n")
    packed = run_json("cluster", cluster, trace)["per_job"][0]
    # Alone on the cluster, topology placement takes nodes 0-7: the step fmsim run simulates there.
    step = run_json("run", scenario, "--set", f"cluster.base={cluster}", "--set", "cluster.nodes=16",
                    "--set", "parallelism.data_parallel_size=2")["step_time_s"]
    assert abs(packed["duration_s"] - 100 * step) < 1e-9 * packed["duration_s"], (packed, step)
    spread = run_json("cluster", cluster, trace, "--placement", "spread")["per_job"][0]
    assert spread["switches_spanned"] > packed["switches_spanned"] == 2
    assert spread["duration_s"] > packed["duration_s"], (spread["duration_s"], packed["duration_s"])
    out = os.path.join(TMP, "bad.json")
    bad = write(TMP, "bad-scenario-jobs.jsonl", json.dumps({"id": "odd", "nodes": 3, "scenario": scenario, "steps": 10}) + "\n")
    expect_bad_input(["cluster", cluster, bad, "--json", out], ["odd", "not a multiple"], out)


@test
def a_sacct_export_replays_as_a_trace():
    doc = run_json("cluster", CLUSTER, os.path.join(CONFIGS, "cluster", "sacct-example.txt"))
    jobs = {j["id"]: j for j in doc["per_job"]}
    # Steps (1001.batch, 1001.0), the job cancelled while pending (1004) and the pending one (1007) are left out.
    assert sorted(jobs) == ["1001", "1002", "1003", "1005", "1006"], sorted(jobs)
    assert jobs["1001"]["nodes"] == 8 and jobs["1001"]["completion_s"] == 86400 and jobs["1003"]["queue"] == "debug"
    # 1005 asks for all 16 nodes: it waits for 1001 (8 nodes, one day), as it did on the real cluster.
    assert jobs["1005"]["start_s"] == 86400 and jobs["1005"]["submit_s"] == 3 * 3600
    out = os.path.join(TMP, "bad.json")
    header = "JobID|Submit|Elapsed|NNodes\n"
    for text, fragments in [("JobID|Submit|NNodes\n1|2026-01-01T00:00:00|1\n", [":1:", "Elapsed"]),
                            (header + "1|2026-01-01T00:00:00|1:2:3:4|1\n", [":2:", "Elapsed"]),
                            (header + "1|yesterday|01:00:00|1\n", [":2:", "Submit"]),
                            (header + "1|2026-01-01T00:00:00|01:00:00|99\n", [":2:", "NNodes", "16 nodes"]),
                            (header + "1|2026-01-01T00:00:00|01:00:00\n", [":2:", "fields"])]:
        trace = write(TMP, "bad-sacct.txt", text)
        expect_bad_input(["cluster", CLUSTER, trace, "--json", out], fragments, out)


@test
def a_sacct_json_export_replays_as_its_parsable2_twin():
    pairs = [os.path.join(CONFIGS, "cluster", "sacct-example." + ext) for ext in ("json", "txt")]
    docs = [run_json("cluster", CLUSTER, path) for path in pairs]
    key = lambda d: [(j["id"], j["queue"], j["nodes"], j["submit_s"], j["duration_s"], j["start_s"]) for j in d["per_job"]]
    assert key(docs[0]) == key(docs[1]) and docs[0]["makespan_s"] == docs[1]["makespan_s"], (key(docs[0]), key(docs[1]))
    # Slurm 21.08's form (data_parser v0.0.37): state a string, time.limit and priority plain numbers.
    old = {"jobs": [{"job_id": 7, "partition": "gpu", "allocation_nodes": 2, "priority": 10, "state": {"current": "COMPLETED"},
                     "time": {"submission": 1700000000, "elapsed": 3600, "limit": 120}},
                    {"job_id": 8, "partition": "gpu", "allocation_nodes": 1, "state": {"current": "CANCELLED"},
                     "time": {"submission": 1700000100, "elapsed": 0, "limit": 60}},
                    {"job_id": 9, "partition": "gpu", "allocation_nodes": 4, "state": {"current": "COMPLETED"},
                     "time": {"submission": 1700000600, "elapsed": 1800, "limit": 30}}]}
    path = write(TMP, "sacct-2108.json", json.dumps(old))
    doc = run_json("cluster", CLUSTER, path)
    assert [(j["id"], j["submit_s"], j["duration_s"], j["nodes"]) for j in doc["per_job"]] == [("7", 0, 3600, 2), ("9", 600, 1800, 4)], doc["per_job"]
    out = os.path.join(TMP, "bad-sacct.json")
    missing = {"jobs": [{"job_id": 1, "state": {"current": ["COMPLETED"]}, "time": {"submission": 1, "elapsed": 5}}]}
    expect_bad_input(["cluster", CLUSTER, write(TMP, "sacct-missing.json", json.dumps(missing)), "--json", out],
                     ["sacct-missing.json", "/jobs/0/allocation_nodes", "node count"], out)
    huge = {"jobs": [{"job_id": 1, "allocation_nodes": 99, "state": {"current": ["COMPLETED"]}, "time": {"submission": 1, "elapsed": 5}}]}
    expect_bad_input(["cluster", CLUSTER, write(TMP, "sacct-huge.json", json.dumps(huge)), "--json", out],
                     ["/jobs/0/allocation_nodes", "99", "never start"], out)
    weird = {"jobs": [{"job_id": 1, "allocation_nodes": 1, "state": {"current": ["COMPLETED"]}, "time": {"submission": 1, "elapsed": "soon"}}]}
    expect_bad_input(["cluster", CLUSTER, write(TMP, "sacct-weird.json", json.dumps(weird)), "--json", out],
                     ["/jobs/0/time/elapsed", "soon"], out)


@test
def a_slurm_topology_conf_gives_the_placement_groups():
    # The shipped 2-leaf layout of p5-16node as topology.conf: the same run as without it.
    same = write(TMP, "p5-16.conf", "SwitchName=a Nodes=p5-[01-08]\nSwitchName=b Nodes=p5-[09-16]  # comment\nSwitchName=top Switches=a,b\n")
    plain, conf = run_json("cluster", CLUSTER, TRACE), run_json("cluster", CLUSTER, TRACE, "--topology-conf", same)
    assert [j["start_s"] for j in plain["per_job"]] == [j["start_s"] for j in conf["per_job"]] and plain["makespan_s"] == conf["makespan_s"]
    # Uneven leaf switches (12 + 4 nodes): an 8-node job fits under one switch, and topology placement
    # keeps it there; the switches a 16-node job needs are 2.
    uneven = write(TMP, "uneven.conf", "SwitchName=big Nodes=n[1-12]\nSwitchName=small Nodes=n13,n14,n[15-16]\n")
    jobs = write(TMP, "two.jsonl", json.dumps({"id": "a", "nodes": 8, "duration": "1h"}) + "\n" +
                 json.dumps({"id": "b", "nodes": 16, "submit": 7200, "duration": "1h"}) + "\n")
    doc = run_json("cluster", CLUSTER, jobs, "--topology-conf", uneven)
    a, b = doc["per_job"]
    assert a["switches_needed"] == a["switches_spanned"] == 1 and max(a["runs"][0]["nodes"]) < 12, a
    assert b["switches_needed"] == 2 and b["switches_spanned"] == 2, b
    # Blocks (topology/block, NVLink domains) read the same way.
    blocks = write(TMP, "blocks.conf", "BlockName=b1 Nodes=gb[001-008]\nBlockName=b2 Nodes=gb[009-016]\nBlockSizes=8,16\n")
    assert run_json("cluster", CLUSTER, TRACE, "--topology-conf", blocks)["makespan_s"] == plain["makespan_s"]
    out = os.path.join(TMP, "bad-topology.json")
    for text, expected in [("SwitchName=a Nodes=n[1-8]\nSwitchName=b Nodes=n[8-16]\n", ["bad.conf:2", "n8", "already in a"]),
                           ("SwitchName=a Nodes=n[1-8]\n", ["bad.conf", "places 8 nodes", "16"]),
                           ("SwitchName=a Nodes=n[1-16] Speed=100\n", ["bad.conf:1", "Speed", "unknown key"]),
                           ("SwitchName=a Nodes=n[8-1]\n", ["bad.conf:1", "runs backwards"]),
                           ("SwitchName=a Nodes=n[1-16\n", ["bad.conf:1", "without its ']'"]),
                           ("NodeName=n1 Switch=a\n", ["bad.conf:1", "NodeName", "SwitchName"]),
                           ("SwitchName=a Nodes=n[1-8]\nBlockName=b Nodes=n[9-16]\n", ["bad.conf:2", "mixes"]),
                           # refused before a million names are built for a 16-node cluster (fuzz_topology_conf)
                           ("SwitchName=a Nodes=" + "x" * 200 + "[0-999999]\n", ["bad.conf:1", "more than 16 hosts", "the cluster has 16 nodes"]),
                           # an empty group after twenty of eight names each: refused, not 8^20 prefixes walked (fuzz_topology_conf)
                           ("SwitchName=a Nodes=" + "p[1-8]" * 20 + "[]\n", ["bad.conf:1", "empty [] group"])]:
        path = write(TMP, "bad.conf", text)
        expect_bad_input(["cluster", CLUSTER, TRACE, "--topology-conf", path, "--json", out], expected, out)


@test
def a_block_request_places_a_job_under_one_upper_switch():
    # 16 p5 nodes as four leaf switches of 4 under two upper switches (s1 over l1-l2, s2 over l3-l4).
    conf = write(TMP, "two-level.conf", "SwitchName=l1 Nodes=p[01-04]\nSwitchName=l2 Nodes=p[05-08]\nSwitchName=l3 Nodes=p[09-12]\n"
                 "SwitchName=l4 Nodes=p[13-16]\nSwitchName=s1 Switches=l[1-2]\nSwitchName=s2 Switches=l[3-4]\nSwitchName=core Switches=s[1-2]\n")
    # a and b (2 nodes each) share l1 (best fit); c (7 nodes) fits no leaf switch: anywhere, the emptiest
    # switches l2 and l3 (both blocks); asking for a block, s2's l3 and l4.
    trace = [{"id": "a", "nodes": 2, "duration": "2h"}, {"id": "b", "nodes": 2, "duration": "2h"},
             {"id": "c", "nodes": 7, "submit": 60, "duration": "1h"}]
    plain = run_json("cluster", CLUSTER, jobs_file("blocks-plain.jsonl", trace), "--topology-conf", conf)
    assert plain["cluster"]["blocks"] == 2, plain["cluster"]
    assert sorted(plain["per_job"][2]["runs"][0]["nodes"]) == [4, 5, 6, 7, 8, 9, 10], plain["per_job"][2]
    trace[2].update(topology="required", topology_level="block")
    doc = run_json("cluster", CLUSTER, jobs_file("blocks.jsonl", trace), "--topology-conf", conf)
    assert sorted(doc["per_job"][2]["runs"][0]["nodes"]) == [8, 9, 10, 11, 12, 13, 14] and doc["per_job"][2]["start_s"] == 60, doc["per_job"][2]
    validate_against_schema(doc)
    # Without a topology.conf, --block-groups: p5-16node's two leaf groups of 8 in one block.
    whole = jobs_file("blocks-whole.jsonl", [{"id": "w", "nodes": 16, "duration": "1h", "topology": "required", "topology_level": "block"}])
    doc = run_json("cluster", CLUSTER, whole, "--block-groups", "2")
    assert doc["cluster"]["blocks"] == 1 and doc["per_job"][0]["start_s"] == 0, doc["cluster"]
    out = os.path.join(TMP, "bad-blocks.json")
    expect_bad_input(["cluster", CLUSTER, whole, "--json", out], ["job w", "one block", "no level above", "--block-groups"], out)
    expect_bad_input(["cluster", CLUSTER, whole, "--block-groups", "3", "--json", out], ["--block-groups", "1 to 2"], out)
    expect_bad_input(["cluster", CLUSTER, whole, "--block-groups", "1", "--topology-conf", conf, "--json", out], ["--block-groups", "give one of them"], out)
    expect_bad_input(["cluster", CLUSTER, whole, "--block-groups", "1", "--json", out], ["job w", "requires its 16 nodes in one block", "largest holds 8"], out)
    level_alone = jobs_file("level-alone.jsonl", [{"id": "x", "nodes": 2, "duration": "1h", "topology_level": "block"}])
    expect_bad_input(["cluster", CLUSTER, level_alone, "--json", out], ["level-alone.jsonl:1", "topology_level", "with a topology"], out)
    odd_level = jobs_file("odd-level.jsonl", [{"id": "x", "nodes": 2, "duration": "1h", "topology": "preferred", "topology_level": "rack"}])
    expect_bad_input(["cluster", CLUSTER, odd_level, "--json", out], ["odd-level.jsonl:1", "topology_level", "rack", "group", "block"], out)
    twice = write(TMP, "twice.conf", "SwitchName=l1 Nodes=p[01-08]\nSwitchName=l2 Nodes=p[09-16]\nSwitchName=s1 Switches=l1\nSwitchName=s2 Switches=l[1-2]\n")
    expect_bad_input(["cluster", CLUSTER, whole, "--topology-conf", twice, "--json", out], ["twice.conf:4", "l1", "already under s1"], out)
    # A misspelt, repeated or doubly defined switch is refused rather than dropping the level (review of session 24).
    for name, text, expected in [
            ("typo.conf", "SwitchName=l1 Nodes=p[01-08]\nSwitchName=l2 Nodes=p[09-16]\nSwitchName=s1 Switches=L[1-2]\n", ["typo.conf:3", "L1", "no switch of the file"]),
            ("dup.conf", "SwitchName=l1 Nodes=p[01-08]\nSwitchName=l2 Nodes=p[09-16]\nSwitchName=s1 Switches=l1\nSwitchName=s1 Switches=l2\n",
             ["dup.conf:4", "s1", "already defined at", "dup.conf:3"]),
            ("repeat.conf", "SwitchName=l1 Nodes=p[01-08]\nSwitchName=l2 Nodes=p[09-16]\nSwitchName=s1 Switches=l1,l1\n", ["repeat.conf:3", "l1 twice"])]:
        expect_bad_input(["cluster", CLUSTER, whole, "--topology-conf", write(TMP, name, text), "--json", out], expected, out)
    # Hot spares are not placeable: a block of 12 nodes with 2 of them spares cannot hold a 12-node job.
    uneven = write(TMP, "uneven-blocks.conf", "SwitchName=l1 Nodes=p[01-04]\nSwitchName=l2 Nodes=p[05-16]\nSwitchName=s1 Switches=l1\nSwitchName=s2 Switches=l2\n")
    twelve = jobs_file("twelve.jsonl", [{"id": "t", "nodes": 12, "duration": "1h", "topology": "required", "topology_level": "block"}])
    assert run_json("cluster", CLUSTER, twelve, "--topology-conf", uneven)["completed"] == 1
    expect_bad_input(["cluster", CLUSTER, twelve, "--topology-conf", uneven, "--spares", "2", "--json", out],
                     ["twelve.jsonl", "job t", "largest holds 10 besides the hot spares", "never start"], out)


def kueue_yaml(name, queues, local=()):
    """ClusterQueues (name, cohort, nominal, borrowing_limit, within, reclaim) and LocalQueues (name, cq)."""
    docs = []
    for q, cohort, nominal, limit, within, reclaim in queues:
        gpu = f"      - name: nvidia.com/gpu\n        nominalQuota: {nominal}\n" + (f"        borrowingLimit: {limit}\n" if limit is not None else "")
        docs.append(f"apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata:\n  name: {q}\nspec:\n" +
                    (f"  cohort: {cohort}\n" if cohort else "") +
                    f"  resourceGroups:\n  - coveredResources: [nvidia.com/gpu]\n    flavors:\n    - name: h100\n      resources:\n{gpu}" +
                    f"  preemption:\n    withinClusterQueue: {within}\n    reclaimWithinCohort: {reclaim}\n")
    for lq, cq in local:
        docs.append(f"kind: LocalQueue\nmetadata:\n  name: {lq}\nspec:\n  clusterQueue: {cq}\n")
    return write(TMP, name, "---\n".join(docs))


def jobs_file(name, jobs):
    return write(TMP, name, "".join(json.dumps(j) + "\n" for j in jobs))


@test
def kueue_quotas_borrowing_and_preemption_follow_hand_worked_runs():
    hour = 3600
    three = jobs_file("k3.jsonl", [{"id": f"j{i}", "nodes": 8, "duration": "1h", "queue": "a"} for i in range(3)])
    # One queue of 64 GPUs on 128: its 64-GPU jobs run one at a time (3 h); backfill runs two at once (2 h).
    solo = kueue_yaml("solo.yaml", [("a", None, 64, None, "Never", "Never")])
    doc = run_json("cluster", CLUSTER, three, "--kueue", solo)
    assert doc["policy"] == "kueue" and doc["makespan_s"] == 3 * hour, doc["makespan_s"]
    assert run_json("cluster", CLUSTER, three)["makespan_s"] == 2 * hour
    # In a cohort with an idle twin, a borrows the twin's 64 GPUs: two at once; with borrowingLimit 0 it cannot.
    cohort = kueue_yaml("cohort.yaml", [("a", "ml", 64, None, "Never", "Any"), ("b", "ml", 64, None, "Never", "Any")])
    doc = run_json("cluster", CLUSTER, three, "--kueue", cohort)
    assert doc["makespan_s"] == 2 * hour, doc["makespan_s"]
    a = doc["kueue"]["cluster_queues"][0]
    assert a["peak_gpus"] == 128 and abs(a["borrowed_gpu_hours"] - 64) < 1e-9, a  # 64 GPUs beyond quota for 1 h
    capped = kueue_yaml("capped.yaml", [("a", "ml", 64, 0, "Never", "Any"), ("b", "ml", 64, None, "Never", "Any")])
    assert run_json("cluster", CLUSTER, three, "--kueue", capped)["makespan_s"] == 3 * hour
    # b reclaims its nominal quota at 30 min: a's borrowing job (the later started) is preempted, loses the
    # 30 min since its last checkpoint (interval 1 h: none kept) and runs again after b's job.
    jobs = jobs_file("reclaim.jsonl", [{"id": "a1", "nodes": 8, "duration": "2h", "queue": "a", "checkpoint_interval": "1h"},
                                       {"id": "a2", "nodes": 8, "submit": 1, "duration": "2h", "queue": "a", "checkpoint_interval": "1h"},
                                       {"id": "b1", "nodes": 8, "submit": 1800, "duration": "1h", "queue": "b"}])
    doc = run_json("cluster", CLUSTER, jobs, "--kueue", cohort)
    by_id = {j["id"]: j for j in doc["per_job"]}
    assert doc["kueue"]["preemptions"] == 1 and by_id["a2"]["preemptions"] == 1 and by_id["a1"]["preemptions"] == 0, by_id
    assert by_id["b1"]["start_s"] == 1800 and by_id["b1"]["end_s"] == 1800 + hour
    assert by_id["a2"]["runs"][0]["interrupted"] and by_id["a2"]["runs"][0]["end_s"] == 1800
    assert abs(by_id["a2"]["lost_s"] - (1799 + 600)) < 1e-6, by_id["a2"]["lost_s"]  # 29:59 of work + the 10-min restart
    assert doc["kueue"]["cluster_queues"][1]["preemptions_to_admit"] == 1
    # Without reclaim b waits for a quota to free up.
    never = kueue_yaml("never.yaml", [("a", "ml", 64, None, "Never", "Never"), ("b", "ml", 64, None, "Never", "Never")])
    doc = run_json("cluster", CLUSTER, jobs, "--kueue", never)
    assert doc["kueue"]["preemptions"] == 0 and {j["id"]: j for j in doc["per_job"]}["b1"]["start_s"] == 2 * hour
    # withinClusterQueue: LowerPriority: a high-priority job preempts its own queue's low one.
    within = kueue_yaml("within.yaml", [("a", None, 64, None, "LowerPriority", "Never")], [("team-a", "a")])
    jobs = jobs_file("within.jsonl", [{"id": "low", "nodes": 8, "duration": "2h", "queue": "team-a", "priority": 1},
                                      {"id": "high", "nodes": 8, "submit": 600, "duration": "1h", "queue": "team-a", "priority": 9}])
    doc = run_json("cluster", CLUSTER, jobs, "--kueue", within)
    by_id = {j["id"]: j for j in doc["per_job"]}
    assert by_id["high"]["start_s"] == 600 and by_id["low"]["preemptions"] == 1 and by_id["low"]["end_s"] > by_id["high"]["end_s"], by_id
    # The shipped two-team example runs, with borrowing and reclaiming.
    doc = run_json("cluster", CLUSTER, os.path.join(CONFIGS, "cluster", "p5-16node-two-teams.jsonl"),
                   "--kueue", os.path.join(CONFIGS, "cluster", "kueue-two-teams.yaml"))
    assert doc["completed"] == 60 and doc["kueue"]["preemptions"] > 0, doc["kueue"]
    validate_against_schema(doc)


@test
def bad_kueue_input_exits_2():
    out = os.path.join(TMP, "bad-kueue.json")
    three = jobs_file("k3b.jsonl", [{"id": "big", "nodes": 16, "duration": "1h", "queue": "a"}])
    small = kueue_yaml("small.yaml", [("a", None, 64, None, "Never", "Never")])
    expect_bad_input(["cluster", CLUSTER, three, "--kueue", small, "--json", out], ["job big", "128 GPUs", "quota that admits nothing"], out)
    other = jobs_file("other.jsonl", [{"id": "x", "nodes": 1, "duration": "1h", "queue": "nowhere"}])
    expect_bad_input(["cluster", CLUSTER, other, "--kueue", small, "--json", out], ["job x", "'nowhere'", "LocalQueue or ClusterQueue"], out)
    broken = write(TMP, "broken.yaml", "kind: ClusterQueue\nmetadata: {name: a\nspec: []\n")
    expect_bad_input(["cluster", CLUSTER, other, "--kueue", broken, "--json", out], ["broken.yaml", "malformed YAML"], out)
    quota = write(TMP, "quota.yaml", "kind: ClusterQueue\nmetadata: {name: a}\nspec:\n  resourceGroups:\n  - flavors:\n"
                                     "    - name: f\n      resources:\n      - name: nvidia.com/gpu\n        nominalQuota: lots\n")
    expect_bad_input(["cluster", CLUSTER, other, "--kueue", quota, "--json", out], ["quota.yaml", "nominalQuota", "'lots'"], out)
    orphan = write(TMP, "orphan.yaml", open(small).read() + "---\nkind: LocalQueue\nmetadata: {name: q}\nspec: {clusterQueue: ghost}\n")
    expect_bad_input(["cluster", CLUSTER, other, "--kueue", orphan, "--json", out], ["LocalQueue q", "ghost"], out)
    expect_bad_input(["cluster", CLUSTER, other, "--policy", "kueue", "--json", out], ["--policy kueue needs --kueue"], out)
    expect_bad_input(["cluster", CLUSTER, other, "--policy", "fifo", "--kueue", small, "--json", out], ["--kueue", "--policy fifo"], out)


@test
def an_elastic_job_goes_on_without_a_failed_node_and_grows_back():
    # 8 p5 nodes, one 10-hour job on all of them; node 0 fails at 2 h and is repaired 4 h later.
    c8 = eight_node_cluster("c8.json")
    hour = 3600.0
    rigid = jobs_file("rigid.jsonl", [{"id": "a", "nodes": 8, "duration": "10h"}])
    job = run_json("cluster", c8, rigid, "--fail-node", "0@2h")["per_job"][0]
    # Not elastic, no checkpoint: 2 h lost, 7 nodes free until the repair at 6 h, 10 min restart, 10 h again.
    assert job["end_s"] == 6 * hour + 600 + 10 * hour and job["restarts"] == 1, job
    elastic = jobs_file("elastic.jsonl", [{"id": "a", "nodes": 8, "min_nodes": 4, "duration": "10h"}])
    doc = run_json("cluster", c8, elastic, "--fail-node", "0@2h")
    job = doc["per_job"][0]
    # Elastic (global batch kept): 2 h at full speed; a 60 s pause, 7/8 speed until the node is back at 6 h;
    # a 60 s pause, full speed for the rest: 8 h - 7/8 (4 h - 60 s) of work left at 6 h.
    left = 8 * hour - 7 / 8 * (4 * hour - 60)
    assert abs(job["end_s"] - (6 * hour + 60 + left)) < 1e-6, job["end_s"]
    assert job["restarts"] == 0 and job["rescales"] == 2 and [len(r["nodes"]) for r in job["runs"]] == [8, 7, 8], job
    assert not any(r["interrupted"] for r in job["runs"])
    # Below min_nodes it is interrupted as a rigid job is.
    tight = jobs_file("tight.jsonl", [{"id": "a", "nodes": 8, "min_nodes": 8, "duration": "10h"}])
    assert run_json("cluster", c8, tight, "--fail-node", "0@2h")["per_job"][0]["restarts"] == 1
    validate_against_schema(doc)
    out = os.path.join(TMP, "bad-elastic.json")
    bad = jobs_file("bad-elastic.jsonl", [{"id": "a", "nodes": 8, "min_nodes": 9, "duration": "1h"}])
    expect_bad_input(["cluster", c8, bad, "--json", out], ["bad-elastic.jsonl:1", "min_nodes", "9"], out)
    expect_bad_input(["cluster", c8, elastic, "--fail-node", "9@1h", "--json", out], ["--fail-node", "9@1h", "0 to 7"], out)
    expect_bad_input(["cluster", c8, elastic, "--fail-node", "3@soon", "--json", out], ["--fail-node", "soon"], out)


@test
def hangs_software_failures_spares_and_stragglers_follow_hand_worked_runs():
    # 8 p5 nodes, a 10-hour job on 7 of them (checkpoint-free); node 0 fails at 2 h.
    c8 = eight_node_cluster("c8s.json")
    hour = 3600.0
    seven = jobs_file("seven.jsonl", [{"id": "a", "nodes": 7, "duration": "10h"}])
    # A hang: no progress until the 10 min watchdog, a 10 min restart on the same nodes, 10 h again.
    doc = run_json("cluster", c8, seven, "--fail-node", "0@2h:hang")
    job = doc["per_job"][0]
    assert job["end_s"] == 2 * hour + 600 + 600 + 10 * hour and job["hangs"] == 1, job
    assert job["runs"][0]["nodes"] == job["runs"][1]["nodes"]
    assert doc["failures"]["hangs"] == 1 and doc["gpu_hours"]["down"] == 0, doc["failures"]
    assert list(doc["failures"]["by_cause"]) == ["NCCL Watchdog Timeouts"]
    assert run_json("cluster", c8, seven, "--fail-node", "0@2h:hang", "--watchdog", "30min")["per_job"][0]["end_s"] == 2 * hour + 1800 + 600 + 10 * hour
    # Software: restarts at once on the same nodes; the node is not repaired.
    doc = run_json("cluster", c8, seven, "--fail-node", "0@2h:software")
    assert doc["per_job"][0]["end_s"] == 2 * hour + 600 + 10 * hour and doc["failures"]["software_restarts"] == 1
    # Hardware with the 8th node held as a spare: it replaces node 0 at once; without the spare the job would
    # restart on the free 8th node anyway, so the spare's cost shows as idle GPU-hours.
    doc = run_json("cluster", c8, seven, "--fail-node", "0@2h:hardware", "--spares", "1")
    job = doc["per_job"][0]
    assert job["end_s"] == 2 * hour + 600 + 10 * hour and job["spare_swaps"] == 1, job
    assert 7 in job["runs"][1]["nodes"] and 0 not in job["runs"][1]["nodes"], job["runs"]
    # Idle spare: node 7 until the failure at 2 h, then node 0 from its repair at 6 h to the end.
    spare = doc["failures"]["spares"]
    assert spare["swaps"] == 1 and spare["exhausted"] == 0, spare
    assert abs(spare["gpu_hours"] - 8 * (2 + (job["end_s"] / hour - 6))) < 1e-9, spare
    validate_against_schema(doc)
    # An elastic job that shrank, then hung, then had a node fail: it restarts on the nodes it had, holding
    # what it holds (review of session 21: the counts of free nodes went wrong and a hung job never finished).
    elastic = jobs_file("elastic-hang.jsonl", [{"id": "e", "nodes": 7, "min_nodes": 5, "duration": "10h"}])
    doc = run_json("cluster", c8, elastic, "--fail-node", "1@1h", "--fail-node", "2@2h:hang", "--fail-node", "3@125min",
                   "--fail-node", "4@3h:software", "--repair", "100h")
    job = doc["per_job"][0]
    assert job["end_s"] > 0 and doc["completed"] == 1, job
    held = sum(len(r["nodes"]) * (r["end_s"] - r["start_s"]) for r in job["runs"]) * 8 / 3600
    assert abs(held - doc["gpu_hours"]["busy"]) < 1e-6 * held, (held, doc["gpu_hours"])
    assert all(len(r["nodes"]) <= 7 for r in job["runs"])
    # Every node a straggler, 10 % slower: 11 h.
    doc = run_json("cluster", c8, seven, "--stragglers", "1")
    assert abs(doc["per_job"][0]["end_s"] - 11 * hour) < 1e-6 and abs(doc["per_job"][0]["straggler_s"] - hour) < 1e-6
    assert doc["failures"]["stragglers"]["nodes"] == list(range(8))
    text = run("cluster", c8, seven, "--fail-node", "0@2h:hang", "--spares", "1", "--stragglers", "1").stdout
    assert "1 hangs" in text and "spares: 1 nodes held" in text and "stragglers: 8 nodes 10 % slower" in text, text
    out = os.path.join(TMP, "bad-spares.json")
    expect_bad_input(["cluster", c8, seven, "--fail-node", "0@2h:flaky", "--json", out], ["--fail-node", "flaky", "hardware, software or hang"], out)
    expect_bad_input(["cluster", c8, seven, "--spares", "8", "--json", out], ["--spares", "0 to 7"], out)
    # Straggler detection: node 0 given slow, found after 1 h of training and evicted; the job restarts
    # (10 min) on the 8th node from its start (no checkpoint): 1 h + 10 min + 10 h, against 11 h without it.
    doc = run_json("cluster", c8, seven, "--straggler-node", "0", "--straggler-detect", "1h")
    job = doc["per_job"][0]
    assert abs(job["end_s"] - (hour + 600 + 10 * hour)) < 1e-6 and job["straggler_evictions"] == 1, job
    assert 0 not in job["runs"][1]["nodes"] and 7 in job["runs"][1]["nodes"], job["runs"]
    strag = doc["failures"]["stragglers"]
    assert strag["detect_s"] == hour and strag["nodes"] == [0] and strag["evictions"] == [{"time_s": hour, "node": 0, "job": "a"}], strag
    validate_against_schema(doc)
    assert abs(run_json("cluster", c8, seven, "--straggler-node", "0")["per_job"][0]["end_s"] - 11 * hour) < 1e-6
    text = run("cluster", c8, seven, "--straggler-node", "0", "--straggler-detect", "1h").stdout
    assert "stragglers: 1 nodes 10 % slower" in text and "1 evicted, each once a job had trained 1.0 h beside it" in text, text
    metrics = os.path.join(TMP, "evict-metrics.txt")
    run("cluster", c8, seven, "--straggler-node", "0", "--straggler-detect", "1h", "--metrics", metrics)
    samples = [line for line in open(metrics) if line.startswith("fmsim_cluster_straggler_evictions_total")]
    assert samples and samples[-1].split()[1] == "1" and samples[0].split()[1] == "0", samples[:2] + samples[-1:]
    timeline = os.path.join(TMP, "evict-timeline.json")
    run("cluster", c8, seven, "--straggler-node", "0", "--straggler-detect", "1h", "--timeline", timeline)
    assert any(e.get("name") == "straggler evicted (a)" and e.get("tid") == 0 for e in json.load(open(timeline))["traceEvents"])
    expect_bad_input(["cluster", c8, seven, "--straggler-node", "8", "--json", out], ["--straggler-node", "'8'", "0 to 7"], out)
    expect_bad_input(["cluster", c8, seven, "--straggler-node", "x1", "--json", out], ["--straggler-node", "'x1'"], out)
    expect_bad_input(["cluster", c8, seven, "--straggler-detect", "soon", "--json", out], ["--straggler-detect", "soon"], out)
    expect_bad_input(["cluster", c8, seven, "--spares", "2", "--json", out], ["job a needs 7 nodes", "--spares 2", "never start"], out)
    expect_bad_input(["cluster", c8, seven, "--stragglers", "1.5", "--json", out], ["--stragglers", "0 to 1"], out)
    expect_bad_input(["cluster", c8, seven, "--straggler-slowdown", "-1", "--json", out], ["--straggler-slowdown"], out)
    expect_bad_input(["cluster", c8, seven, "--watchdog", "later", "--json", out], ["--watchdog", "later"], out)


@test
def with_contention_scattered_jobs_slow_each_other_as_fmsim_contention_says():
    # Eight 4-node data-parallel jobs at once on the 2:1 oversubscribed 32-node cluster. Spread placement puts
    # each on one node of every leaf switch: together they run at the pace `fmsim contention` gives for
    # exactly those placements; topology placement packs each under one switch: no slowdown.
    ddp = os.path.join(CONFIGS, "training", "llama3-8b-ddp-p5-os2.json")
    os2 = os.path.join(TOPO, "p5-32node-os2.json")
    eight = jobs_file("eight.jsonl", [{"id": f"j{k}", "nodes": 4, "scenario": ddp, "steps": 1000} for k in range(8)])
    spread = run_json("cluster", os2, eight, "--placement", "spread", "--contention", "--contention-model", "full")
    placements = [job["runs"][0]["nodes"] for job in spread["per_job"]]
    shared = run_json("contention", os2, *[a for nodes in placements for a in ("--job", ddp + "@" + ",".join(map(str, nodes)))])
    for job, together in zip(spread["per_job"], shared["jobs"]):
        assert together["slowdown"] > 0.02, together
        assert abs(job["end_s"] - 1000 * together["shared_step_s"]) < 1e-6 * job["end_s"], (job["end_s"], together)
        assert abs(job["contention_s"] - 1000 * (together["shared_step_s"] - together["alone_step_s"])) < 1e-6 * job["end_s"]
    assert spread["contention"]["simulated"] and spread["contention"]["gpu_hours"] > 0 and spread["contention"]["model"] == "full"
    validate_against_schema(spread)
    alone = shared["jobs"][0]["alone_step_s"]
    for args in (["--placement", "topology", "--contention"], ["--placement", "topology", "--contention", "--contention-model", "full"],
                 ["--placement", "spread"]):
        doc = run_json("cluster", os2, eight, *args)
        for job in doc["per_job"]:
            assert abs(job["end_s"] - 1000 * alone) < 1e-6 * job["end_s"] and job["contention_s"] == 0, (args, job)
    # On a non-blocking fabric the option changes nothing.
    flat = run_json("cluster", os.path.join(TOPO, "p5-16node.json"), jobs_file("two.jsonl", [
        {"id": f"j{k}", "nodes": 4, "scenario": ddp, "steps": 10} for k in range(2)]), "--placement", "spread", "--contention")
    assert flat["contention"] == {"simulated": False, "gpu_hours": 0}, flat["contention"]


@test
def the_fast_contention_model_reproduces_the_full_one_when_transfers_coincide():
    # The same eight scattered jobs. `aligned` (every job's cross-leaf transfers at once, as the full model's
    # common start makes them) replays each job alone at its uplink share: it lands on the full model's
    # slowdown. `fast` (the default: independent phases, each job's transfers on for its duty) is far
    # smaller: eight one-node tenants on a four-rail uplink bind only when five or more send at once.
    ddp = os.path.join(CONFIGS, "training", "llama3-8b-ddp-p5-os2.json")
    os2 = os.path.join(TOPO, "p5-32node-os2.json")
    eight = jobs_file("eight-fast.jsonl", [{"id": f"j{k}", "nodes": 4, "scenario": ddp, "steps": 1000} for k in range(8)])
    slowdown = {}
    for model in ("fast", "aligned", "full"):
        doc = run_json("cluster", os2, eight, "--placement", "spread", "--contention", "--contention-model", model)
        assert doc["contention"]["model"] == model, doc["contention"]
        validate_against_schema(doc)
        slowdown[model] = [job["contention_s"] / (job["end_s"] - job["contention_s"]) for job in doc["per_job"]]
    for fast, aligned, full in zip(slowdown["fast"], slowdown["aligned"], slowdown["full"]):
        assert full > 0.05, slowdown
        assert abs(aligned - full) <= 0.1 * full, (aligned, full)
        assert 0 <= fast < aligned / 5, (fast, aligned)
    # More uplink never slows a job: at 4:1 the same placement slows more, at 1.5:1 less (both models).
    spec = json.load(open(os2))
    by_ratio = {}
    for ratio in (1.5, 4.0):
        spec["fabric"]["oversubscription"] = ratio
        twin = write(TMP, f"p5-32node-os{ratio}.json", json.dumps(spec))
        for model in ("fast", "aligned"):
            doc = run_json("cluster", twin, eight, "--placement", "spread", "--contention", "--contention-model", model)
            by_ratio[(ratio, model)] = [job["contention_s"] for job in doc["per_job"]]
    for model in ("fast", "aligned"):
        two = [doc_job["contention_s"] for doc_job in run_json("cluster", os2, eight, "--placement", "spread", "--contention",
                                                                "--contention-model", model)["per_job"]]
        for low, mid, high in zip(by_ratio[(1.5, model)], two, by_ratio[(4.0, model)]):
            assert low <= mid <= high, (model, low, mid, high)
    assert sum(by_ratio[(4.0, "aligned")]) > sum(by_ratio[(1.5, "aligned")]), by_ratio
    # Packed under their own leaf switches, neither fast model slows anyone.
    for model in ("fast", "aligned"):
        doc = run_json("cluster", os2, eight, "--placement", "topology", "--contention", "--contention-model", model)
        assert all(job["contention_s"] == 0 for job in doc["per_job"]), model
    out = os.path.join(os.path.dirname(eight), "never.json")
    expect_bad_input(["cluster", os2, eight, "--contention", "--contention-model", "quick", "--json", out], ["--contention-model", "quick"], out)


@test
def kueue_topology_aware_scheduling_holds_a_required_job_for_one_switch():
    # p5-16node: 16 nodes, 8 per leaf switch, one ClusterQueue of all 128 GPUs. Kueue TAS: a Topology and a
    # ResourceFlavor naming it. x and y take 7 nodes under each switch; z (2 nodes, required) waits for one
    # of them; with preferred it starts at once across the two switches.
    topology = ("apiVersion: kueue.x-k8s.io/v1alpha1\nkind: Topology\nmetadata:\n  name: aws\nspec:\n  levels:\n"
                "  - nodeLabel: topology.k8s.aws/network-node-layer-1\n  - nodeLabel: kubernetes.io/hostname\n---\n"
                "kind: ResourceFlavor\nmetadata:\n  name: h100\nspec:\n  topologyName: aws\n---\n")
    plain = kueue_yaml("tas-queues.yaml", [("all", None, 128, None, "Never", "Never")])
    tas = write(TMP, "tas.yaml", topology + open(plain).read())
    hour = 3600.0

    def trace(name, request):
        return jobs_file(name, [{"id": "x", "nodes": 7, "duration": "2h", "queue": "all"},
                                {"id": "y", "nodes": 7, "duration": "3h", "queue": "all"},
                                {"id": "z", "submit": "1min", "nodes": 2, "duration": "1h", "queue": "all", "topology": request}])
    doc = run_json("cluster", CLUSTER, trace("tas-required.jsonl", "required"), "--kueue", tas)
    z = doc["per_job"][2]
    assert z["start_s"] == 2 * hour and z["switches_spanned"] == 1, z
    assert doc["kueue"]["topology_aware"] is True
    validate_against_schema(doc)
    z = run_json("cluster", CLUSTER, trace("tas-preferred.jsonl", "preferred"), "--kueue", tas)["per_job"][2]
    assert z["start_s"] == 60 and z["switches_spanned"] == 2, z
    # Slurm's --switches=1 is the same request under the Slurm policies.
    z = run_json("cluster", CLUSTER, trace("slurm-required.jsonl", "required"))["per_job"][2]
    assert z["start_s"] == 2 * hour, z
    out = os.path.join(TMP, "bad-tas.json")
    expect_bad_input(["cluster", CLUSTER, trace("tas-off.jsonl", "required"), "--kueue", plain, "--json", out],
                     ["job z asks for a topology", "spec.topologyName"], out)
    expect_bad_input(["cluster", CLUSTER, jobs_file("too-big.jsonl", [{"id": "w", "nodes": 9, "duration": "1h", "topology": "required"}]),
                      "--json", out], ["job w requires its 9 nodes under one leaf switch", "largest holds 8"], out)
    expect_bad_input(["cluster", CLUSTER, jobs_file("bad-req.jsonl", [{"id": "w", "nodes": 2, "duration": "1h", "topology": "rack"}]),
                      "--json", out], ["bad-req.jsonl:1", "topology", "preferred or required"], out)
    dangling = write(TMP, "dangling.yaml", "kind: ResourceFlavor\nmetadata:\n  name: h100\nspec:\n  topologyName: nowhere\n---\n" + open(plain).read())
    expect_bad_input(["cluster", CLUSTER, trace("tas-d.jsonl", "required"), "--kueue", dangling, "--json", out],
                     ["ResourceFlavor h100", "nowhere", "not a Topology"], out)
    # Kueue's block level: a three-level Topology (block, rack, hostname) with the blocks given; a two-level
    # one has no level above the rack.
    block_job = jobs_file("tas-block.jsonl", [{"id": "b", "nodes": 16, "duration": "1h", "queue": "all", "topology": "required",
                                               "topology_level": "block"}])
    expect_bad_input(["cluster", CLUSTER, block_job, "--kueue", tas, "--block-groups", "2", "--json", out],
                     ["job b asks for a block", "2 levels", "block, rack, hostname"], out)
    three = write(TMP, "tas3.yaml", topology.replace("  - nodeLabel: topology.k8s.aws/network-node-layer-1\n",
                                                     "  - nodeLabel: topology.k8s.aws/network-node-layer-2\n"
                                                     "  - nodeLabel: topology.k8s.aws/network-node-layer-1\n") + open(plain).read())
    doc = run_json("cluster", CLUSTER, block_job, "--kueue", three, "--block-groups", "2")
    assert doc["per_job"][0]["start_s"] == 0 and doc["cluster"]["blocks"] == 1, doc["per_job"][0]


@test
def a_group_failure_restarts_its_jobs_or_they_go_on_checkpointless():
    # 16 nodes in two groups of 8 (leaf switches); one 4-node job, 2 h, checkpoints every 30 min, on group 0.
    cluster = write(TMP, "p5-16-2groups.json", json.dumps({
        "name": "p5-16", "description": "test", "instance_type": "p5.48xlarge", "nodes": 16,
        "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 8, "oversubscription": 1.0}}))
    trace = write(TMP, "one-job.jsonl", '{"id": "a", "nodes": 4, "duration": "2h", "checkpoint_interval": "30min"}\n')
    base = ["cluster", cluster, trace, "--fail-group", "0@40min", "--restart", "10min", "--group-repair", "3h"]
    doc = run_json(*base)
    validate_against_schema(doc)
    assert doc["failures"]["group_failures"] == [{"time_s": 2400.0, "group": 0, "nodes": 8, "jobs": ["a"]}], doc["failures"]["group_failures"]
    assert doc["failures"]["recovery"] == "restart"
    job = doc["per_job"][0]
    # from its 30 min checkpoint on group 1 at once: 40 min + 10 min + 90 min
    assert job["restarts"] == 1 and job["group_failures"] == 1 and abs(job["end_s"] - 8400) < 1e-6, job
    assert all(n >= 8 for n in job["runs"][-1]["nodes"]), job["runs"]
    doc = run_json(*base, "--recovery", "checkpointless", "--checkpointless-recovery", "2min")
    validate_against_schema(doc)
    job = doc["per_job"][0]
    # in process on group 1: 40 min + 2 min + 80 min, nothing but the pause lost
    assert job["restarts"] == 0 and job["checkpointless_recoveries"] == 1, job
    assert abs(job["end_s"] - 7320) < 1e-6 and abs(job["lost_s"] - 120) < 1e-6, job
    assert doc["failures"]["checkpointless_recoveries"] == 1
    # The metrics' node states count the failed group as down while it is out (8 nodes for 3 h).
    metrics = os.path.join(TMP, "group-metrics.txt")
    assert run(*base, "--metrics", metrics).returncode == 0
    down = [float(line.split()[1]) for line in open(metrics) if line.startswith('fmsim_cluster_nodes{state="down"')]
    assert max(down) == 8 and down[0] == 0, (max(down), down[:3])
    text = run(*base, "--recovery", "checkpointless").stdout
    assert "1 leaf switch group failures" in text and "checkpointless: 1 failures recovered in process" in text, text


@test
def bad_traces_and_options_exit_2():
    out = os.path.join(TMP, "bad.json")
    cases = [
        ('{"id": "big", "nodes": 17, "duration": "1h"}\n', [":1:", "nodes", "16 nodes"]),
        ('{"nodes": 1, "duration": "1h"}\n{"nodes": 1, "duration": "1h"\n', [":2:"]),
        ('{"gpus": 12, "duration": "1h"}\n', [":1:", "gpus", "multiple of"]),
        ('{"nodes": 1}\n', [":1:", "duration"]),
        ('{"nodes": 1, "duration": "1h", "steps": 10}\n', [":1:", "steps"]),
        ('{"nodes": 1, "scenario": "missing.json", "steps": 10}\n', ["missing.json"]),
        ('{"nodes": 1, "duration": "1h", "colour": "red"}\n', [":1:", "colour"]),
        ('{"nodes": 1, "duration": "1h", "time_limit": "30min"}\n', [":1:", "time_limit"]),
        ('{"nodes": 1, "gpus": 8, "duration": "1h"}\n', [":1:", "nodes", "gpus"]),
        ('{"nodes": 1, "duration": "1e99h"}\n', [":1:", "duration"]),
        ('# nothing here\n\n', ["no jobs"]),
    ]
    for i, (text, fragments) in enumerate(cases):
        trace = write(TMP, f"bad{i}.jsonl", text)
        expect_bad_input(["cluster", CLUSTER, trace, "--json", out], fragments, out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--policy", "lottery", "--json", out], ["--policy", "lottery"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--repair", "soon", "--json", out], ["--repair"], out)
    expect_bad_input(["cluster", CLUSTER, os.path.join(TMP, "missing.jsonl"), "--json", out], ["missing.jsonl"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--fail-group", "2@1h", "--json", out], ["--fail-group", "2@1h", "from 0 to 1"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--fail-group", "0at1h", "--json", out], ["--fail-group", "GROUP@TIME"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--recovery", "pray", "--json", out], ["--recovery", "pray", "checkpointless"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--group-failures-per-group-hour", "-1", "--json", out],
                     ["--group-failures-per-group-hour", "expected a rate"], out)
    expect_bad_input(["cluster", CLUSTER, TRACE, "--checkpointless-recovery", "fast", "--json", out], ["--checkpointless-recovery"], out)


if __name__ == "__main__":
    run_tests()
