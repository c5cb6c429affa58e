#!/usr/bin/env python3
"""End-to-end tests of fmsim checkpoint and the checkpoint part of fmsim run: save times against closed
forms (bytes over the binding resource), the S3 request-rate limit, async vs sync stalls, peer copies over
EFA, goodput against failure rate and the Young/Daly interval, determinism, and bad input.
Usage: run_checkpoint_tests.py FMSIM SOURCE_DIR"""
import json
import math
import os
import shutil
import tempfile

from cli_support import SOURCE, TOPO, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-checkpoint-tests-")
H2D_BPS = 8 * 51e9              # p5.48xlarge: 8 GPUs x 51 GB/s host <-> device (catalog)
LUSTRE_CLIENT_BPS = 100e9 / 8   # 100 Gbps per client over TCP (catalog)
EFA_BPS = 3200e9 / 8 * 0.82     # p5 EFA per direction x achieved fraction (collectives tuning)


def scenario(name, fsx=None, s3=None, checkpoint=None, failures=None, nodes=2, nvme=True):
    """Llama-3-8B, DP16 on 2 p5 nodes: 8.03e9 parameters x 14 bytes, 1/16 per GPU. The storage replaces
    the base cluster's (null removes a key in a merge patch)."""
    storage = {"nvme": nvme, "fsx_lustre": fsx, "s3": s3}
    doc = {"name": name,
           "cluster": {"base": os.path.join(TOPO, "p5-2node.json"), "nodes": nodes, "storage": storage},
           "model": "llama3-8b",
           "parallelism": {"tensor_model_parallel_size": 1, "micro_batch_size": 1, "global_batch_size": 64,
                           "use_distributed_optimizer": True},
           "training": {"seq_length": 4096, "precision": "bf16"},
           "checkpoint": checkpoint or {},
           "failures": failures or {}}
    return write(TMP, name + ".json", json.dumps(doc))


def checkpoint(path, *args):
    return run_json("checkpoint", path, *args)


def near(value, expected, tolerance, what):
    assert abs(value - expected) <= tolerance * expected, f"{what}: {value} vs {expected} (±{tolerance:.0%})"


@test
def fsx_save_is_bytes_over_the_aggregate_disk_throughput():
    # 19.2 TiB of PERSISTENT_2-125: 8 OSTs (2.4 TiB each), disk 125 MB/s/TiB -> 2.4 GB/s in all; the 16
    # one-stripe files land two per OST, so every OST carries the same bytes.
    path = scenario("fsx-small", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    checkpoint={"mode": "sync"})
    out = checkpoint(path, "--strategy", "fsx")
    total = out["checkpoint_bytes"]
    near(total, 8.03e9 * 14, 0.01, "checkpoint bytes = parameters x (2 + 12)")
    near(out["checkpoint_bytes_per_rank"]["mean"], total / 16, 1e-9, "bytes per rank")
    disk_Bps = 19.2 * 125e6
    expected = total / 2 / H2D_BPS + total / disk_Bps
    near(out["save_time_s"], expected, 0.01, "save time")
    assert out["bottleneck"] == "FSx disk throughput (OSTs)", out["bottleneck"]
    near(out["step_stall_s"], out["save_time_s"], 1e-9, "a sync save stalls for all of it")


@test
def fsx_save_is_bound_by_the_client_nics_when_the_file_system_is_large():
    # 480 TiB of PERSISTENT_2-1000 offers 480 GB/s; two clients at 100 Gbps each are the limit.
    path = scenario("fsx-large", fsx={"deployment_type": "PERSISTENT_2-1000", "capacity": "480TiB"},
                    checkpoint={"mode": "sync"})
    out = checkpoint(path, "--strategy", "fsx")
    total = out["checkpoint_bytes"]
    expected = total / 2 / H2D_BPS + total / (2 * LUSTRE_CLIENT_BPS)
    near(out["save_time_s"], expected, 0.01, "save time")
    assert out["bottleneck"] == "FSx per-client throughput", out["bottleneck"]
    # An EFA-enabled file system lifts the client limit (1200 Gbps): the save gets faster.
    # Striping each file over all 200 OSTs keeps the disks from becoming the limit in its place.
    efa = scenario("fsx-efa", fsx={"deployment_type": "PERSISTENT_2-1000", "capacity": "480TiB", "efa_enabled": True,
                                   "stripe_count": -1},
                   checkpoint={"mode": "sync"})
    assert checkpoint(efa, "--strategy", "fsx")["save_time_s"] < 0.5 * out["save_time_s"]


@test
def s3_request_rate_dominates_for_many_small_shards():
    # Weights only (16 GB), 1,024 files per GPU of ~1 MB: 16,384 PUTs through one prefix at 3,500/s;
    # 100 requests in flight per GPU keep the clients from being the limit.
    ckpt = {"mode": "sync", "include_optimizer": False, "files_per_rank": 1024}
    one = scenario("s3-one-prefix", s3={"prefixes": 1, "max_concurrent_requests": 100}, checkpoint=ckpt)
    out = checkpoint(one, "--strategy", "s3")
    assert out["bottleneck"] == "S3 request rate (per prefix)", out["bottleneck"]
    near(out["save_time_s"], 16 * 1024 / 3500, 0.05, "save time = requests / PUT rate")
    # Four prefixes: four times the request rate, and the save is no longer request-bound.
    four = scenario("s3-four-prefixes", s3={"prefixes": 4, "max_concurrent_requests": 100}, checkpoint=ckpt)
    assert checkpoint(four, "--strategy", "s3")["save_time_s"] < 0.5 * out["save_time_s"]
    # The same bytes in one file per GPU need only ~1,000 parts: far faster.
    big = scenario("s3-big-files", s3={"prefixes": 1, "max_concurrent_requests": 100},
                   checkpoint={"mode": "sync", "include_optimizer": False})
    assert checkpoint(big, "--strategy", "s3")["save_time_s"] < 0.5 * out["save_time_s"]


@test
def a_data_repository_exports_to_s3_at_the_request_rate_and_lazy_loads_on_restore():
    fsx = {"deployment_type": "PERSISTENT_2-1000", "capacity": "480TiB", "stripe_count": -1,
           "data_repository": {"export": True}}
    path = scenario("dra", fsx=fsx, s3={"prefixes": 1}, checkpoint={"mode": "sync"})
    out = checkpoint(path, "--strategy", "fsx")
    row = out["strategies"][0]
    # 16 files of ~7 GB in 16 MB parts, one PUT each at 3,500/s, after one first-byte latency.
    parts = 16 * math.ceil(out["checkpoint_bytes_per_rank"]["mean"] / 16e6)
    near(row["export_to_s3_time_s"] - out["save_time_s"], 0.1 + parts / 3500, 0.03, "export after the FSx write")
    plain = checkpoint(path, "--strategy", "fsx", "--set", "cluster.storage.fsx_lustre.data_repository.export=false")
    near(plain["save_time_s"], out["save_time_s"], 1e-6, "the export does not delay durability on FSx")
    lazy = checkpoint(path, "--strategy", "fsx", "--set", "cluster.storage.fsx_lustre.data_repository.lazy_load=true",
                      "--set", "cluster.storage.s3.max_concurrent_requests=1")
    assert lazy["restore_time_s"] > out["restore_time_s"], (lazy["restore_time_s"], out["restore_time_s"])


@test
def an_async_save_stalls_only_for_the_copy_to_host_memory():
    fsx = {"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"}
    sync = checkpoint(scenario("sync", fsx=fsx, checkpoint={"mode": "sync"}), "--strategy", "fsx")
    asyn = checkpoint(scenario("async", fsx=fsx, checkpoint={"mode": "async"}), "--strategy", "fsx")
    assert asyn["step_stall_s"] < sync["step_stall_s"]
    near(asyn["step_stall_s"], asyn["checkpoint_bytes"] / 2 / H2D_BPS, 0.01, "async stall = device-to-host copy")
    near(asyn["save_time_s"], sync["save_time_s"], 0.01, "the write itself takes as long either way")


@test
def peer_replication_is_limited_by_efa():
    out = checkpoint(scenario("peer", checkpoint={"mode": "async"}), "--strategy", "peer")
    node_bytes = out["checkpoint_bytes"] / 2
    near(out["save_time_s"] - out["step_stall_s"], node_bytes / EFA_BPS, 0.01, "copy to the peer over EFA")
    assert out["bottleneck"] == "node network (EFA)", out["bottleneck"]
    # Restore: the replaced node pulls its state back from the peer, then copies it to its GPUs.
    near(out["restore_time_s"], node_bytes / EFA_BPS + node_bytes / H2D_BPS, 0.01, "restore from the peer")


@test
def nvme_restore_reads_remotely_only_for_the_replaced_node():
    fsx = {"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"}
    path = scenario("nvme", fsx=fsx)
    remote = checkpoint(path, "--strategy", "fsx")
    local = checkpoint(path, "--strategy", "nvme+fsx")
    assert local["restore_time_s"] < remote["restore_time_s"]
    # Saving through NVMe first never makes the checkpoint durable sooner than writing FSx directly.
    assert local["save_time_s"] >= remote["save_time_s"] * 0.999


@test
def comparison_lists_every_strategy_and_checkpointless_and_says_why_one_is_unavailable():
    path = scenario("no-nvme", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"}, s3={"prefixes": 4},
                    nvme=False)
    out = checkpoint(path)
    rows = {row["strategy"]: row for row in out["strategies"]}
    assert sorted(rows) == sorted(["fsx", "s3", "nvme+fsx", "nvme+s3", "peer", "checkpointless"]), rows.keys()
    for name in ["nvme+fsx", "nvme+s3"]:
        assert not rows[name]["available"] and "storage.nvme = false" in rows[name]["reason"], rows[name]
    for name in ["fsx", "s3", "peer", "checkpointless"]:
        row = rows[name]
        assert row["available"] and 0 < row["goodput"] <= 1, row
        for key in ["save_time_s", "step_stall_s", "restore_time_s", "bottleneck", "young_daly_interval_s"]:
            assert key in row, key
    # The peer copy over EFA beats writing to a 2.4 GB/s file system.
    assert rows["peer"]["save_time_s"] < rows["fsx"]["save_time_s"]
    proc = run("checkpoint", path)
    assert proc.returncode == 0 and "unavailable" in proc.stdout and "goodput" in proc.stdout, proc.stdout


@test
def checkpointless_is_the_peer_copy_with_in_process_recovery():
    # At a high failure rate (job MTBF ~2.5 h on 2 nodes) the in-process recovery (30 s detection, 45 s
    # restart, 30 s NCCL init: 105 s) beats a relaunch (300 + 180 + 30 s) at the same Young/Daly interval.
    path = scenario("checkpointless", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    failures={"node_failures_per_node_hour": 0.2})
    out = checkpoint(path)
    rows = {row["strategy"]: row for row in out["strategies"]}
    cl, peer = rows["checkpointless"], rows["peer"]
    assert cl["interval_steps"] == peer["interval_steps"] and cl["recovery"] == "in_process" and peer["recovery"] == "restart", (cl, peer)
    assert cl["restart_s"] == 30 + 45 + 30 and peer["restart_s"] == 300 + 180 + 30, (cl["restart_s"], peer["restart_s"])
    assert cl["save_time_s"] == peer["save_time_s"] and cl["restore_time_s"] == peer["restore_time_s"]
    assert cl["goodput"] > peer["goodput"] > 0, (cl["goodput"], peer["goodput"])
    # Recovery time is restart + restore per failure (no failure during a recovery at this rate, nearly).
    near(cl["recovery_total_s"], cl["expected_interruptions"] * (cl["restart_s"] + cl["restore_time_s"]), 0.01, "recovery")
    assert out["failures"]["recovery"] == "restart"
    # --strategy checkpointless: that row alone; the scenario's own in-process recovery applies to any strategy.
    only = checkpoint(path, "--strategy", "checkpointless")
    assert [r["strategy"] for r in only["strategies"]] == ["checkpointless"], only["strategies"]
    fsx_in_process = checkpoint(path, "--strategy", "fsx", "--set", "failures.recovery=in_process")
    fsx_restart = checkpoint(path, "--strategy", "fsx")
    assert fsx_in_process["strategies"][0]["restart_s"] == 105 and fsx_in_process["goodput"] > fsx_restart["goodput"]
    out_file = os.path.join(TMP, "bad-recovery.json")
    expect_bad_input(["checkpoint", path, "--set", "failures.recovery=pray", "--json", out_file],
                     ["/failures/recovery", "pray", "in_process"], out_file)


def goodput(path, *sets):
    args = [a for s in sets for a in ("--set", s)]
    return checkpoint(path, "--strategy", "fsx", *args)


@test
def goodput_falls_as_the_failure_rate_rises():
    path = scenario("rates", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    checkpoint={"mode": "sync", "interval_steps": 100})
    values = [goodput(path, f"failures.node_failures_per_node_hour={rate}") for rate in (0.001, 0.01, 0.1)]
    assert values[0]["goodput"] > values[1]["goodput"] > values[2]["goodput"], [v["goodput"] for v in values]
    assert values[0]["expected_interruptions"] < values[1]["expected_interruptions"] < values[2]["expected_interruptions"]


@test
def goodput_peaks_near_the_young_daly_interval():
    path = scenario("young-daly", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    checkpoint={"mode": "sync"}, failures={"node_failures_per_node_hour": 0.05})
    best = goodput(path)
    assert best["interval_steps"] == best["strategies"][0]["young_daly_interval_steps"]
    # Daly: sqrt(2 delta M) - delta with delta = the stall and M = 1 / (job failure rate).
    mtbf = best["failures"]["mtbf_s"]
    delta = best["step_stall_s"]
    near(best["young_daly_interval_s"], (2 * delta * mtbf) ** 0.5 - delta, 1e-6, "Young/Daly interval")
    steps = best["interval_steps"]
    for factor in (0.25, 4):
        other = goodput(path, f"checkpoint.interval_steps={max(1, round(steps * factor))}")
        assert other["goodput"] < best["goodput"], (factor, other["goodput"], best["goodput"])


@test
def the_same_seed_gives_the_same_result():
    path = scenario("seeded", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    failures={"node_failures_per_node_hour": 0.05, "seed": 11})
    first, second = goodput(path), goodput(path)
    assert first["goodput"] == second["goodput"] and first["expected_interruptions"] == second["expected_interruptions"]
    other = goodput(path, "failures.seed=12")
    assert other["goodput"] != first["goodput"]


@test
def run_amortises_the_checkpoint_stall_over_the_interval():
    path = scenario("run", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"},
                    checkpoint={"strategy": "fsx", "mode": "sync", "interval_steps": 50})
    out = run_json("run", path)
    ckpt = out["checkpoint"]
    assert ckpt["interval_steps"] == 50
    near(ckpt["amortized_stall_per_step_s"], ckpt["step_stall_s"] / 50, 1e-9, "stall per step")
    near(out["step_time_with_checkpoint_s"], out["step_time_s"] + ckpt["step_stall_s"] / 50, 1e-9, "effective step")


@test
def bad_checkpoint_input_exits_2_with_one_line():
    out_file = os.path.join(TMP, "out.json")
    fsx = {"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB"}
    path = scenario("bad", fsx=fsx)
    expect_bad_input(["checkpoint", path, "--strategy", "tape", "--json", out_file], ["--strategy", "tape", "nvme+fsx"], out_file)
    # 1.2 TiB (1.32 TB) holds 11 checkpoints of 112 GB but not 12.
    tiny = scenario("tiny-fsx", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "1.2TiB"}, checkpoint={"keep": 12})
    expect_bad_input(["checkpoint", tiny, "--strategy", "fsx", "--json", out_file],
                     ["tiny-fsx.json", "/cluster/storage/fsx_lustre/capacity", "too small"], out_file)
    expect_bad_input(["checkpoint", path, "--set", "checkpoint.interval_steps=-5", "--json", out_file],
                     ["bad.json", "/checkpoint/interval_steps", "-5"], out_file)
    expect_bad_input(["checkpoint", path, "--set", "checkpoint.interval=-30min", "--json", out_file],
                     ["bad.json", "/checkpoint/interval"], out_file)
    expect_bad_input(["checkpoint", path, "--set", "checkpoint.strategy=floppy", "--json", out_file],
                     ["/checkpoint/strategy", "floppy"], out_file)
    expect_bad_input(["checkpoint", path, "--set", "failures.gpu_failures_per_gpu_hour=-1", "--json", out_file],
                     ["/failures/gpu_failures_per_gpu_hour"], out_file)
    no_bucket = scenario("no-bucket", fsx={"deployment_type": "PERSISTENT_2-125", "capacity": "19.2TiB",
                                           "data_repository": {"export": True}})
    expect_bad_input(["checkpoint", no_bucket, "--json", out_file], ["fsx_lustre", "s3"], out_file)
    expect_bad_input(["run", path, "--set", "checkpoint.stratgy=fsx", "--json", out_file],
                     ["/checkpoint", "stratgy"], out_file)


@test
def goodput_finishes_when_failures_outpace_checkpoints():
    # Issue 22: these never finished (the replay draws ~e^(interval / MTBF) failures per interval).
    big = os.path.join(SOURCE, "configs", "training", "llama3.1-405b-p5-2048.json")
    proc = run("checkpoint", big, "--strategy", "fsx", "--set", "checkpoint.interval_steps=100000", "--json", "-",
               timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["strategies"][0]
    assert row["goodput_method"] == "closed_form", row
    assert 0 <= row["goodput"] < 0.01, row["goodput"]
    proc = run("checkpoint", big, "--strategy", "fsx", "--set", "failures.gpu_failures_per_gpu_hour=0.01", "--json", "-",
               timeout=120)
    assert proc.returncode == 0, proc.stderr
    row = json.loads(proc.stdout)["strategies"][0]
    assert row["goodput_method"] == "closed_form" and 0 < row["goodput"] < 0.1, row
    # A recovery of 1,000 h against a job MTBF of ~25 h: e^40 restarts per failure.
    out_file = os.path.join(TMP, "never.json")
    expect_bad_input(["checkpoint", big, "--strategy", "fsx", "--set", "failures.relaunch=1000h", "--json", out_file],
                     ["never ends", "failures.relaunch"], out_file)
    expect_bad_input(["checkpoint", big, "--strategy", "fsx", "--set", "failures.trials=2147483647", "--json", out_file],
                     ["/failures/trials", "2147483647"], out_file)
    # No checkpoint in the whole 15.6 T-token run (~3 years of steps) against a ~25 h MTBF: refused, not a hang.
    expect_bad_input(["checkpoint", big, "--strategy", "fsx", "--set", "checkpoint.interval_steps=2147483647",
                      "--json", out_file], ["never ends"], out_file)


try:
    run_tests()
finally:
    shutil.rmtree(TMP, ignore_errors=True)
