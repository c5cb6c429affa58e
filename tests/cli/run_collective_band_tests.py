#!/usr/bin/env python3
"""End-to-end tests of the error band of `fmsim collective`: the fabric group a sweep falls in (the groups of
benchmarks/calibration/validate_collectives.py), one band per size range it covers (bus bandwidth from
1 MiB, time below), the figures of configs/validation/error_bands.json, and "no validation data" with the
nearest group of the same fabric kind where no group applies.
Usage: run_collective_band_tests.py FMSIM SOURCE_DIR"""
import json
import os

from cli_support import SOURCE, run, run_json, run_tests, test

TOPO = os.path.join(SOURCE, "topologies")
BANDS = json.load(open(os.path.join(SOURCE, "configs", "validation", "error_bands.json")))


def band_of(fabric, compared):
    return next(b for b in BANDS["collectives"] if b["group"] == {"fabric": fabric, "compared": compared})


def sweep(topology, *args):
    return run_json("collective", os.path.join(TOPO, topology), *args)


@test
def p5_two_nodes_carry_both_bands_of_their_group():
    doc = sweep("p5-2node.json", "-b", "64K", "-e", "1G", "-f", "16384")
    eb = doc["error_band"]
    assert eb["fabric"] == "EFA p5, 2 nodes (H100, EFAv2)", eb
    large, small = eb["from_1MiB"], eb["below_1MiB"]
    expected = band_of(eb["fabric"], "busbw >= 1 MiB")
    assert large["validated"] and large["n"] == expected["n"], large
    assert abs(large["mean_abs_error"] - expected["mean_abs_error"]) < 1e-12
    assert small["validated"] and small["group"]["compared"] == "time < 1 MiB", small
    assert small["n"] == band_of(eb["fabric"], "time < 1 MiB")["n"]


@test
def only_the_size_ranges_swept_get_a_band():
    doc = sweep("p5-2node.json", "-b", "4M", "-e", "16M", "-f", "2")
    assert set(doc["error_band"]) == {"fabric", "from_1MiB"}, doc["error_band"]
    doc = sweep("p5-2node.json", "-b", "8", "-e", "64K", "-f", "8")
    assert set(doc["error_band"]) == {"fabric", "below_1MiB"}, doc["error_band"]


@test
def one_node_and_many_nodes_fall_in_their_fabric_groups():
    assert sweep("p5-2node.json", "--gpus", "8", "-b", "1G", "-e", "1G")["error_band"]["fabric"] == "NVLink 4 / NVLS, one node (H100, H200)"
    assert sweep("p5-16node.json", "-b", "1G", "-e", "1G")["error_band"]["fabric"] == "EFA p5, 4-32 nodes (H100, EFAv2)"
    assert sweep("p6e-gb200-4x72.json", "--gpus", "72", "-b", "1G", "-e", "1G")["error_band"]["fabric"] == "GB200 NVL72 rack(s)"
    assert sweep("p6-b200-64node.json", "--gpus", "8", "-b", "1G", "-e", "1G")["error_band"]["fabric"] == "NVLink 5 / NVLS, one node (B200, GB200)"


@test
def an_unvalidated_fabric_says_so_and_names_the_nearest_of_its_kind():
    doc = sweep("p6-b200-64node.json", "--gpus", "16", "-b", "64K", "-e", "1G", "-f", "16384")
    eb = doc["error_band"]
    assert eb["fabric"].startswith("EFA "), eb
    for part in ("from_1MiB", "below_1MiB"):
        b = eb[part]
        assert not b["validated"] and b["n"] == 0 and b["mean_abs_error"] is None, b
        assert b["nearest_validated_group"]["group"]["fabric"].startswith("EFA "), b
        assert b["description"].startswith("no validation data"), b


@test
def the_table_states_the_bands_under_it():
    out = run("collective", os.path.join(TOPO, "p5-2node.json"), "-b", "64K", "-e", "1G", "-f", "16384").stdout
    lines = [l for l in out.splitlines() if l.startswith("# error band")]
    assert len(lines) == 2, out
    assert "bus bandwidth from 1 MiB" in lines[0] and "EFA p5, 2 nodes" in lines[0], lines
    assert "time below 1 MiB" in lines[1], lines


if __name__ == "__main__":
    run_tests()
