#!/usr/bin/env python3
"""End-to-end tests of the fmsim command line (topo, collective): exit codes, one-line errors, no partial
output files, and JSON results checked against what the hardware implies. Usage: run_cli_tests.py FMSIM SOURCE_DIR"""
import json
import os
import tempfile

from cli_support import TOPO, expect_bad_input, run, run_json, run_tests, test, write


@test
def gb200_cluster_shows_288_gpus_in_four_domains_of_72():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "topo.json")
        dot = os.path.join(d, "topo.dot")
        proc = run("topo", os.path.join(TOPO, "p6e-gb200-4x72.json"), "--json", out, "--dot", dot)
        assert proc.returncode == 0, proc.stderr
        data = json.load(open(out))
        assert data["gpus"] == 288
        assert data["nvlink_domains"] == [72, 72, 72, 72]
        assert "4 (4 x 72 GPUs)" in proc.stdout, proc.stdout
        text = open(dot).read()
        assert text.startswith("graph ") and text.rstrip().endswith("}")
        assert text.count("-gpu") >= 288


@test
def every_shipped_cluster_summarizes_with_the_documented_keys():
    for name in sorted(os.listdir(TOPO)):
        if not name.endswith(".json"):
            continue
        proc = run("topo", os.path.join(TOPO, name), "--json", "-")
        assert proc.returncode == 0, (name, proc.stderr)
        data = json.loads(proc.stdout)
        for key in ("gpus", "nodes", "nvlink_domains", "bisection_bandwidth_Bps", "hbm_bytes", "usd_per_hour"):
            assert key in data, (name, key)
        assert sum(data["nvlink_domains"]) == data["gpus"], name
        assert data["bisection_bandwidth_Bps"] > 0, name


@test
def json_dash_writes_only_json_to_stdout():
    proc = run("topo", os.path.join(TOPO, "p5-2node.json"), "--json", "-")
    assert proc.returncode == 0
    data = json.loads(proc.stdout)
    assert data["gpus"] == 16 and data["nodes"] == 2
    # 2 nodes x 3,200 Gbps; the cut between them carries one node's injection bandwidth.
    assert abs(data["bisection_bandwidth_Bps"] - 400e9) < 1e3


@test
def unknown_instance_type_lists_the_known_ones():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{"instance_type": "p9.48xlarge", "nodes": 2}')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["c.json", "/instance_type", '"p9.48xlarge"', "p5.48xlarge"], out)


@test
def zero_and_negative_counts_are_rejected():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        for value in ("0", "-4"):
            c = write(d, "c.json", '{"instance_type": "p5.48xlarge", "nodes": %s}' % value)
            expect_bad_input(["topo", c, "--json", out], ["/nodes", value, "expected an integer >= 1"], out)
        c = write(d, "u.json", '{"ultraserver_type": "u-p6e-gb200x72", "ultraservers": 0}')
        expect_bad_input(["topo", c, "--json", out], ["/ultraservers", "expected an integer >= 1"], out)


@test
def malformed_json_gives_line_and_column():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{\n  "instance_type": "p5.48xlarge",\n  "nodes": 2,,\n}\n')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["c.json:3:", "malformed JSON"], out)


@test
def unknown_key_is_rejected():
    with tempfile.TemporaryDirectory() as d:
        c = write(d, "c.json", '{"instance_type": "p5.48xlarge", "nodes": 2, "fabric": {"oversub": 2}}')
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", c, "--json", out], ["/fabric/oversub", "unknown key 'oversub'", "oversubscription"], out)


@test
def topo_reports_the_fsx_throughput_that_binds():
    # PERSISTENT_2-500 (catalog): 500 MB/s/TiB disk, 1,300 MB/s/TiB network; 100 Gbps per TCP client.
    with tempfile.TemporaryDirectory() as d:
        for nodes, tib, bound, sustained in ((16, 96, "disk", 96 * 500e6), (2, 192, "clients", 2 * 100e9 / 8)):
            c = write(d, "c.json", json.dumps({"instance_type": "p5.48xlarge", "nodes": nodes, "storage": {
                "fsx_lustre": {"deployment_type": "PERSISTENT_2-500", "capacity": f"{tib}TiB"}}}))
            fsx = run_json("topo", c)["storage"]["fsx_lustre"]
            assert fsx["bound_by"] == bound, fsx
            assert abs(fsx["throughput_Bps"] - sustained) < 1e-6 * sustained, fsx
            assert abs(fsx["network_throughput_Bps"] - tib * 1300e6) < 1e-6 * tib * 1300e6, fsx
            assert fsx["throughput_Bps"] == min(fsx["disk_throughput_Bps"], fsx["network_throughput_Bps"],
                                                fsx["clients_throughput_Bps"])
            text = run("topo", c).stdout
            assert "sustained (" + bound in text, text


@test
def missing_or_wrong_unit_is_rejected():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        base = '{"instance_type": "p5.48xlarge", "nodes": 2, "storage": {"fsx_lustre": {"deployment_type": "PERSISTENT_2-250", "capacity": %s}}}'
        for value, reason in (('"24"', "missing unit"), ('"24Gbps"', "unknown unit 'Gbps'"), ("24", "units are required")):
            c = write(d, "c.json", base % value)
            expect_bad_input(["topo", c, "--json", out], ["/storage/fsx_lustre/capacity", reason], out)


@test
def missing_file_and_bad_arguments_exit_2():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        expect_bad_input(["topo", os.path.join(d, "nope.json"), "--json", out], ["nope.json", "cannot open"], out)
        expect_bad_input(["topo", os.path.join(TOPO, "p5-2node.json"), "--bogus", "--json", out], ["--bogus"], out)
    proc = run("frobnicate")
    assert proc.returncode == 2


@test
def unwritable_output_is_a_clear_error():
    proc = run("topo", os.path.join(TOPO, "p5-2node.json"), "--json", "/nonexistent-dir/x.json")
    assert proc.returncode == 2
    assert "/nonexistent-dir/x.json" in proc.stderr


def collective(*args):
    return run_json("collective", *args)


@test
def collective_table_mirrors_nccl_tests():
    proc = run("collective", os.path.join(TOPO, "p5-2node.json"), "--op", "all_reduce", "-b", "8", "-e", "16G", "-f", "2")
    assert proc.returncode == 0, proc.stderr
    lines = [l for l in proc.stdout.splitlines() if l.strip()]
    header = [l for l in lines if l.startswith("#") and "size" in l][0]
    for column in ("size", "count", "type", "redop", "time(us)", "algbw(GB/s)", "busbw(GB/s)", "algorithm"):
        assert column in header, column
    rows = [l.split() for l in lines if not l.startswith("#")]
    assert len(rows) == 32, len(rows)  # 8 B .. 16 GiB by 2
    assert rows[0][0] == "8" and rows[-1][0] == "17179869184"
    for row in rows:
        size, time_us, algbw, busbw = float(row[0]), float(row[4]), float(row[5]), float(row[6])
        # Both columns are printed to 0.01: busbw and algbw x 1.875 each carry up to 0.005 (x 1.875) of rounding.
        assert abs(busbw - algbw * 2 * 15 / 16) <= 0.005 + 0.005 * 2 * 15 / 16 + 1e-3 * busbw, row
        assert abs(algbw - size / time_us / 1e3) <= 0.006 + 1e-3 * algbw, row


@test
def p5_two_node_all_reduce_is_within_10_percent_of_measured_at_large_sizes():
    # calibration coll-aws-p5-2node-allreduce-8B-16GB (out-of-place busbw, GB/s)
    measured = {4294967296: 465.87, 8589934592: 479.28, 17179869184: 487.09}
    data = collective(os.path.join(TOPO, "p5-2node.json"), "--op", "all_reduce", "-b", "4G", "-e", "16G", "-f", "2")
    for row in data["rows"]:
        m = measured[int(row["size_bytes"])]
        assert abs(row["busbw_GBps"] - m) / m <= 0.10, (row["size_bytes"], row["busbw_GBps"], m)


@test
def fast_mode_is_within_2_percent_of_full():
    cases = [("p5-16node.json", "all_reduce", "ring", "16"), ("p5-16node.json", "all_reduce", "ring", "64"),
             ("p5-16node.json", "all_gather", "ring", "32"), ("p5-16node.json", "reduce_scatter", "ring", "32"),
             ("p5-16node.json", "all_reduce", "hierarchical", "32"), ("p5-16node.json", "alltoall", "pairwise", "32"),
             ("p5-2node.json", "sendrecv", "pairwise", "16"), ("p5-2node.json", "all_reduce", "ring", "8"),
             # The upper end (256 GPUs), where full fidelity stays affordable: hierarchical all_reduce
             # at 256 GPUs (0.6 s), pairwise alltoall and ring all_reduce at 128 (2 s, 17 s; ring at 256 takes
             # two minutes of full simulation, which the benchmark rather than the suite pays).
             ("p5en-128node.json", "all_reduce", "hierarchical", "256"), ("p5en-128node.json", "alltoall", "pairwise", "128"),
             ("p5en-128node.json", "all_reduce", "ring", "128")]
    for cluster, op, algo, gpus in cases:
        args = [os.path.join(TOPO, cluster), "--op", op, "--algo", algo, "--proto", "Simple", "--gpus", gpus,
                "-b", "64K", "-e", "1G", "-f", "16"]
        fast = collective(*args)["rows"]
        full = collective(*args, "--fidelity", "full")["rows"]
        assert len(fast) == len(full) > 0
        for a, b in zip(fast, full):
            assert abs(a["time_s"] - b["time_s"]) / b["time_s"] <= 0.02, (cluster, op, algo, gpus, a, b)


@test
def fast_mode_keeps_the_placement_within_5_percent_of_full_on_an_oversubscribed_fabric():
    # Issue 28: the fast mode's alltoall on a scattered 128-GPU placement of the 2:1 fabric was 12-20 %
    # slower than the message-by-message referee; every placement policy, several seeds, within 5 %.
    cluster = os.path.join(TOPO, "p5-32node-os2.json")
    for op, gpus in (("alltoall", "128"), ("alltoall", "64"), ("all_reduce", "256"), ("all_gather", "128")):
        for placement, seed in (("packed", "1"), ("topology-aware", "1"), ("scattered", "1"), ("scattered", "2"), ("scattered", "3")):
            args = [cluster, "--op", op, "--gpus", gpus, "-b", "16M", "-e", "1G", "-f", "64", "--placement", placement, "--seed", seed]
            fast = collective(*args)["rows"]
            full = collective(*args, "--fidelity", "full")["rows"]
            for a, b in zip(fast, full):
                assert abs(a["time_s"] - b["time_s"]) / b["time_s"] <= 0.05, (op, gpus, placement, seed, a, b)


@test
def full_fidelity_uses_the_tuners_choice_and_says_what_it_did_not_simulate():
    # Issue 22: 64-GPU all_reduce at 8 B was 165 us fast (tree/LL) and 812 us full (ring/Simple only).
    args = [os.path.join(TOPO, "p5-16node.json"), "--op", "all_reduce", "--gpus", "64", "-b", "8", "-e", "1G", "-f", "64"]
    fast = collective(*args)["rows"]
    full = collective(*args, "--fidelity", "full")["rows"]
    assert len(fast) == len(full) > 2
    for a, b in zip(fast, full):
        assert (a["algorithm"], a["protocol"]) == (b["algorithm"], b["protocol"]), (a, b)
        assert b["simulated"] == (b["algorithm"] in ("ring", "hierarchical", "pairwise")), b
        if not b["simulated"]:
            assert a["time_s"] == b["time_s"], (a, b)  # kept from the fast mode, and marked so
    # all_gather picks ring LL/LL128 for small sizes: those are simulated with the protocol's wire bytes.
    args = [os.path.join(TOPO, "p5-16node.json"), "--op", "all_gather", "--gpus", "64", "-b", "512", "-e", "1G", "-f", "64"]
    fast, full = collective(*args)["rows"], collective(*args, "--fidelity", "full")["rows"]
    for a, b in zip(fast, full):
        assert (a["algorithm"], a["protocol"]) == (b["algorithm"], b["protocol"]) and b["simulated"], (a, b)
        assert abs(a["time_s"] - b["time_s"]) / b["time_s"] <= 0.05, (a, b)
    assert any(b["protocol"] != "Simple" for b in full), full
    # An algorithm without a message-level program runs with its fast-mode time, and says so.
    proc = run("collective", os.path.join(TOPO, "p5-2node.json"), "--algo", "tree", "--fidelity", "full", "-b", "1M", "-e", "1M")
    assert proc.returncode == 0, proc.stderr
    assert "(fast)" in proc.stdout and "no message-level program" in proc.stderr, (proc.stdout, proc.stderr)


@test
def alltoall_past_the_simulated_flow_limit_agrees_with_the_simulation():
    # One node per leaf group: 128 nodes give 128 x 128 = 16,384 group flows (simulated by SimGrid),
    # 136 nodes 18,496 (timed by the bottleneck link). Uniform traffic: the two agree.
    with tempfile.TemporaryDirectory() as d:
        busbw = {}
        for nodes in (128, 136):
            for oversub in (1.0, 2.0):
                c = write(d, f"c{nodes}-{oversub}.json", json.dumps({"instance_type": "p5.48xlarge", "nodes": nodes,
                          "fabric": {"topology": "rail-optimized", "nodes_per_leaf": 1, "oversubscription": oversub}}))
                row = collective(c, "--op", "alltoall", "-b", "1G", "-e", "1G")["rows"][0]
                busbw[nodes, oversub] = row["busbw_GBps"]
        for oversub in (1.0, 2.0):
            a, b = busbw[128, oversub], busbw[136, oversub]
            assert abs(a - b) / a <= 0.03, busbw
        assert busbw[136, 2.0] < 0.75 * busbw[136, 1.0], busbw


@test
def full_fidelity_says_its_cost_and_refuses_what_does_not_fit():
    with open("/proc/meminfo") as f:
        available = next(int(l.split()[1]) * 1024 for l in f if l.startswith("MemAvailable:"))
    with tempfile.TemporaryDirectory() as d:
        small = write(d, "p5-16.json", json.dumps({"instance_type": "p5.48xlarge", "nodes": 16}))
        proc = run("-v", "collective", small, "--op", "all_reduce", "--algo", "ring", "-b", "1M", "-e", "1M", "--fidelity", "full")
        assert proc.returncode == 0, proc.stderr
        assert "full fidelity on 128 GPUs:" in proc.stderr and "(estimate)" in proc.stderr, proc.stderr
        # 4,096-GPU pairwise alltoall: 16.8 M messages, all in flight at once: about 57 GB.
        if available < 48 * 2**30:
            big = write(d, "p5-512.json", json.dumps({"instance_type": "p5.48xlarge", "nodes": 512}))
            out = os.path.join(d, "out.json")
            expect_bad_input(["collective", big, "--op", "alltoall", "-b", "1G", "-e", "1G", "--fidelity", "full",
                              "--json", out], ["--fidelity full on 4096 GPUs would need about", "available"], out)


@test
def leaf_oversubscription_2_to_1_halves_cross_leaf_alltoall_bandwidth():
    with tempfile.TemporaryDirectory() as d:
        busbw = {}
        for ratio in (1, 2):
            # One node per leaf: every byte between the two nodes crosses the leaf uplinks.
            c = write(d, f"c{ratio}.json", '{"instance_type": "p5.48xlarge", "nodes": 2, "fabric": '
                      '{"topology": "fat-tree", "nodes_per_leaf": 1, "oversubscription": %d}}' % ratio)
            busbw[ratio] = collective(c, "--op", "alltoall", "-b", "16G", "-e", "16G")["rows"][0]["busbw_GBps"]
        assert abs(busbw[2] / busbw[1] - 0.5) <= 0.01, busbw


@test
def more_network_bandwidth_or_less_latency_is_never_slower():
    with tempfile.TemporaryDirectory() as d:
        slow = write(d, "slow.json", '{"instance_type": "p5e.48xlarge", "nodes": 4}')   # EFAv2
        fast = write(d, "fast.json", '{"instance_type": "p5en.48xlarge", "nodes": 4}')  # EFAv3, same GPU and bandwidth
        for op in ("all_reduce", "all_gather", "alltoall", "broadcast"):
            a = collective(slow, "--op", op, "-b", "1K", "-e", "4G", "-f", "8")["rows"]
            b = collective(fast, "--op", op, "-b", "1K", "-e", "4G", "-f", "8")["rows"]
            for x, y in zip(a, b):
                assert y["time_s"] <= x["time_s"] * (1 + 1e-9), (op, x, y)


@test
def gb200_ultraservers_use_nvlink_inside_and_efa_between():
    c = os.path.join(TOPO, "p6e-gb200-4x72.json")
    inside = collective(c, "--op", "all_reduce", "--gpus", "72", "-b", "8G", "-e", "8G")["rows"][0]
    across = collective(c, "--op", "all_reduce", "-b", "8G", "-e", "8G")["rows"][0]
    assert inside["algorithm"] == "nvls"
    assert inside["busbw_GBps"] > across["busbw_GBps"]


@test
def collective_bad_input_exits_2_with_one_line():
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        p5 = os.path.join(TOPO, "p5-2node.json")
        expect_bad_input(["collective", p5, "--op", "allreduce", "--json", out], ["unknown collective operation 'allreduce'", "all_reduce"], out)
        expect_bad_input(["collective", p5, "--algo", "butterfly", "--json", out], ["unknown algorithm 'butterfly'"], out)
        expect_bad_input(["collective", p5, "-b", "1G", "-e", "1M", "--json", out], ["-e", "below"], out)
        expect_bad_input(["collective", p5, "-b", "1.5G", "--json", out], ["-b", "1.5G"], out)
        expect_bad_input(["collective", p5, "--gpus", "64", "--json", out], ["--gpus 64", "only 16 GPUs"], out)
        expect_bad_input(["collective", os.path.join(TOPO, "p4de-2node.json"), "--gpus", "8", "--algo", "nvls", "--json", out],
                         ["nvls", "NVLink SHARP"], out)
        expect_bad_input(["collective", p5, "--gpus", "12", "--json", out], ["unevenly"], out)


run_tests()
