#!/usr/bin/env python3
"""End-to-end tests of the Blackwell / Blackwell Ultra hardware: the catalog's B300, GB300, H800, DGX and
P6e-GB300 entries, the ready clusters built from them (totals checked against the catalog's own figures),
and jobs that do not fill an NVLink domain (part of an NVL72, several racks, NVLink partitions).
Usage: run_hardware_tests.py FMSIM SOURCE_DIR"""
import json
import os
import re
import tempfile

from cli_support import CONFIGS, TOPO, expect_bad_input, run, run_json, run_tests, test, write

CATALOG = os.path.join(TOPO, "catalog")
UNITS = {"": 1, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15}


def catalog(name):
    with open(os.path.join(CATALOG, name + ".json")) as f:
        return json.load(f)


def value(text, unit):
    """'279GB' -> 279e9, '6400Gbps' -> 6.4e12 (bits), '2.5PFLOPS' -> 2.5e15."""
    m = re.fullmatch(r"([0-9.]+)([KMGTP]?)" + unit, text)
    assert m, (text, unit)
    return float(m.group(1)) * UNITS[m.group(2)]


GPUS = catalog("gpus")["gpus"]
INSTANCES = catalog("instances")["instances"]
ULTRASERVERS = catalog("instances")["ultraservers"]


def hbm_per_gpu(instance):
    entry = INSTANCES[instance]
    figure = entry.get("gpu_memory") or GPUS[entry["gpu"]]["hbm_capacity"]
    return value(figure["value"], "B")


def topo(name):
    return run_json("topo", os.path.join(TOPO, name))


def collective(*args):
    return run_json("collective", *args)


@test
def catalog_has_blackwell_ultra_gpus_with_sourced_peaks_and_tdp():
    for name, fp4_pflops, bf16_pflops in (("B300", 13.5, 2.25), ("GB300", 15, 2.5)):
        gpu = GPUS[name]
        assert gpu["architecture"] == "blackwell-ultra", name
        assert value(gpu["fp4_dense"]["value"], "FLOPS") == fp4_pflops * 1e15, name
        assert value(gpu["bf16_dense"]["value"], "FLOPS") == bf16_pflops * 1e15, name
        for key in ("bf16_dense", "fp8_dense", "fp4_dense", "hbm_capacity", "hbm_bandwidth",
                    "nvlink_bandwidth_per_direction", "tdp_W"):
            assert gpu[key]["source"], (name, key)
    assert GPUS["GB300"]["tdp_W"]["value"] > GPUS["B300"]["tdp_W"]["value"]
    # H800: the H100 compute with NVLink cut to 400 GB/s bidirectional.
    assert value(GPUS["H800-SXM"]["nvlink_bandwidth_per_direction"]["value"], "Bps") == 200e9
    for name in ("p6-b300.48xlarge", "p6e-gb300.36xlarge", "dgx-b300", "dgx-gb300-tray", "dgx-a100", "hgx-h800"):
        assert name in INSTANCES, name
    assert ULTRASERVERS["u-p6e-gb300x72"]["instance"] == "p6e-gb300.36xlarge"
    assert ULTRASERVERS["dgx-gb300-nvl72"]["instances"]["value"] == 18


@test
def gb300_ultraservers_report_72_gpus_each_and_their_hbm():
    data = topo("p6e-gb300-4x72.json")
    instance = ULTRASERVERS["u-p6e-gb300x72"]["instance"]
    per_server = INSTANCES[instance]["gpus"]["value"] * ULTRASERVERS["u-p6e-gb300x72"]["instances"]["value"]
    assert per_server == 72
    assert data["gpu"] == "GB300" and data["gpus"] == 4 * 72
    assert data["nvlink_domains"] == [72, 72, 72, 72]
    # 72 x 279 GB = 20.1 TB per UltraServer (NVIDIA: "up to 20 TB").
    assert abs(data["hbm_bytes"] - 4 * 72 * hbm_per_gpu(instance)) < 1e3
    assert abs(data["hbm_bytes"] / 4 - 20.088e12) < 1e9
    node_Bps = value(INSTANCES[instance]["network_bandwidth"]["value"], "bps") / 8
    assert abs(data["injection_bandwidth_per_node_Bps"] - node_Bps) < 1


@test
def p6_b300_reports_the_hbm_aws_exposes_and_its_efa_bandwidth():
    data = topo("p6-b300-16node.json")
    assert data["gpu"] == "B300" and data["gpus"] == 128 and data["nvlink_domains"] == [8] * 16
    # 268 GB per GPU as AWS exposes it (2,144 GB per instance), not the 288 GB of the datasheet.
    assert hbm_per_gpu("p6-b300.48xlarge") == 268e9
    assert abs(data["hbm_bytes"] - 128 * 268e9) < 1e3
    assert abs(data["injection_bandwidth_per_node_Bps"] - 6400e9 / 8) < 1


@test
def multi_rack_gb200_cluster_has_eight_nvl72_domains():
    data = topo("dgx-gb200-nvl72-8rack-ib.json")
    assert data["gpus"] == 576 and data["nvlink_domains"] == [72] * 8
    assert abs(data["hbm_bytes"] - 576 * hbm_per_gpu("dgx-gb200-tray")) < 1e3
    gb300 = topo("dgx-gb300-nvl72-4rack-ib.json")
    assert gb300["gpu"] == "GB300" and gb300["nvlink_domains"] == [72] * 4


@test
def collectives_run_on_every_new_cluster():
    for name, gpus in (("p6-b300-16node.json", "128"), ("p6e-gb300-4x72.json", "288"),
                       ("dgx-gb200-nvl72-8rack-ib.json", "576"), ("dgx-gb300-nvl72-4rack-ib.json", "288")):
        doc = collective(os.path.join(TOPO, name), "--op", "all_reduce", "-b", "1M", "-e", "64M", "-f", "8")
        assert doc["gpus"] == int(gpus), name
        assert all(row["busbw_GBps"] > 0 for row in doc["rows"]), name


@test
def part_of_an_ultraserver_stays_in_its_nvlink_domain():
    c = os.path.join(TOPO, "p6e-gb200-4x72.json")
    doc = collective(c, "--op", "all_reduce", "--gpus", "64", "-b", "1G", "-e", "1G")
    assert doc["nvlink_domains"] == 1
    assert doc["rows"][0]["algorithm"] == "nvls"


@test
def a_job_over_several_racks_gets_an_equal_share_of_each():
    # 256 GPUs on four NVL72 racks run as 4 x 64 (16 of 18 trays per rack), not 72+72+72+40.
    c = os.path.join(TOPO, "p6e-gb200-4x72.json")
    doc = collective(c, "--op", "all_reduce", "--gpus", "256", "-b", "1G", "-e", "1G")
    assert doc["nvlink_domains"] == 4
    proc = run("collective", c, "--op", "all_reduce", "--gpus", "256", "-b", "1G", "-e", "1G")
    assert proc.returncode == 0 and "4 NVLink domains of 64" in proc.stdout, proc.stdout + proc.stderr
    # 144 = 2 full racks; 96 = 2 x 48.
    assert collective(c, "--op", "all_gather", "--gpus", "144", "-b", "1M", "-e", "1M")["nvlink_domains"] == 2
    assert collective(c, "--op", "all_gather", "--gpus", "96", "-b", "1M", "-e", "1M")["nvlink_domains"] == 2


@test
def a_partial_domain_that_cannot_be_placed_exits_2_with_the_reason():
    c = os.path.join(TOPO, "p6e-gb200-4x72.json")
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out.json")
        # 100 GPUs: neither one rack nor equal whole trays (4 GPUs) in 2, 3 or 4 racks.
        expect_bad_input(["collective", c, "--op", "all_reduce", "--gpus", "100", "--json", out],
                         ["cannot place 100 ranks", "p6e-gb200-4x72", "4 domains of 72 GPUs", "nearest 96 or 104"], out)
        expect_bad_input(["collective", c, "--op", "all_reduce", "--gpus", "289", "--json", out],
                         ["--gpus 289", "only 288 GPUs"], out)


@test
def nvlink_partitions_split_an_nvl72_into_8_gpu_domains():
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(TOPO, "p6e-gb200-4x72.json")
        spec = json.load(open(base))
        spec["nvlink_partition_gpus"] = 8
        c = write(d, "part.json", json.dumps(spec))
        data = run_json("topo", c)
        assert data["gpus"] == 288 and data["nvlink_domains"] == [8] * 36
        doc = collective(c, "--op", "all_reduce", "--gpus", "16", "-b", "1G", "-e", "1G")
        assert doc["nvlink_domains"] == 2
        whole = collective(base, "--op", "all_reduce", "--gpus", "16", "-b", "1G", "-e", "1G")
        assert whole["nvlink_domains"] == 1
        # Two 8-GPU partitions talk over EFA: slower than 16 GPUs in one NVLink domain.
        assert doc["rows"][0]["busbw_GBps"] < whole["rows"][0]["busbw_GBps"]
        out = os.path.join(d, "out.json")
        spec["nvlink_partition_gpus"] = 16
        bad = write(d, "bad.json", json.dumps(spec))
        expect_bad_input(["topo", bad, "--json", out], ["bad.json", "/nvlink_partition_gpus", "16", "divides"], out)
        p5 = write(d, "p5.json", '{"instance_type": "p5.48xlarge", "nodes": 2, "nvlink_partition_gpus": 8}')
        expect_bad_input(["topo", p5, "--json", out], ["p5.json", "/nvlink_partition_gpus", "ultraserver_type"], out)


def scenario(d, name, cluster, parallelism, precision="bf16"):
    doc = {
        "schema": "fmsim.scenario/1",
        "name": name,
        "cluster": cluster,
        "model": "llama3-8b",
        "parallelism": {"micro_batch_size": 1, "sequence_parallel": True, **parallelism},
        "training": {"seq_length": 8192, "precision": precision, "recompute_granularity": "none"},
    }
    return write(d, name + ".json", json.dumps(doc))


@test
def training_runs_on_part_of_a_rack_and_across_racks():
    with tempfile.TemporaryDirectory() as d:
        base = os.path.join(TOPO, "p6e-gb200-4x72.json")
        # 64 of the 72 GPUs of one UltraServer.
        s = scenario(d, "gb200-64", {"base": base, "ultraservers": 1},
                     {"tensor_model_parallel_size": 2, "data_parallel_size": 32, "global_batch_size": 128})
        one = run_json("run", s)
        assert one["derived"]["gpus"] == 64 and one["derived"]["data_parallel_size"] == 32
        # 256 GPUs over four racks (4 x 64).
        s = scenario(d, "gb200-256", base,
                     {"tensor_model_parallel_size": 2, "data_parallel_size": 128, "global_batch_size": 256})
        four = run_json("run", s)
        assert four["derived"]["gpus"] == 256
        # A job larger than the cluster: exit 2 with the reason.
        s = scenario(d, "too-big", base,
                     {"tensor_model_parallel_size": 2, "data_parallel_size": 145, "global_batch_size": 290})
        out = os.path.join(d, "out.json")
        expect_bad_input(["run", s, "--json", out],
                         ["too-big.json", "/parallelism/data_parallel_size", "290 GPUs", "the cluster has 288"], out)


@test
def training_runs_on_gb300_b300_and_nvlink_partitions():
    with tempfile.TemporaryDirectory() as d:
        gb300 = scenario(d, "gb300", os.path.join(TOPO, "dgx-gb300-nvl72-4rack-ib.json"),
                         {"tensor_model_parallel_size": 2, "data_parallel_size": 128, "global_batch_size": 256},
                         precision="fp8")
        doc = run_json("run", gb300)
        assert doc["derived"]["gpus"] == 256 and doc["derived"]["gpu"] == "GB300"
        b300 = scenario(d, "b300", os.path.join(TOPO, "p6-b300-16node.json"),
                        {"tensor_model_parallel_size": 2, "global_batch_size": 128}, precision="fp8")
        doc = run_json("run", b300)
        assert doc["derived"]["gpus"] == 128 and doc["derived"]["gpu"] == "B300"
        part = scenario(d, "part", {"base": os.path.join(TOPO, "p6e-gb200-4x72.json"), "ultraservers": 1,
                                    "nvlink_partition_gpus": 8},
                        {"tensor_model_parallel_size": 8, "data_parallel_size": 8, "global_batch_size": 64})
        doc = run_json("run", part)
        assert doc["derived"]["gpus"] == 64


@test
def training_runs_once_on_every_new_cluster():
    with tempfile.TemporaryDirectory() as d:
        for name, gpus, gpu in (("p6-b300-16node.json", 128, "B300"), ("p6e-gb300-4x72.json", 288, "GB300"),
                                ("dgx-gb200-nvl72-8rack-ib.json", 576, "GB200"),
                                ("dgx-gb300-nvl72-4rack-ib.json", 288, "GB300")):
            s = scenario(d, name[:-5], os.path.join(TOPO, name),
                         {"tensor_model_parallel_size": 2, "global_batch_size": gpus}, precision="fp8")
            doc = run_json("run", s)
            assert doc["derived"]["gpus"] == gpus and doc["derived"]["gpu"] == gpu, name
            assert doc["step_time_s"] > 0, name


@test
def fp4_training_runs_on_blackwell_and_is_refused_on_hopper():
    with tempfile.TemporaryDirectory() as d:
        # The shipped NVFP4 scenario: FP4 named in the result, faster than the same layout in MXFP8.
        shipped = os.path.join(CONFIGS, "training", "llama3.1-405b-p6e-gb300-nvfp4.json")
        fp4 = run_json("run", shipped)
        assert fp4["derived"]["precision"] == "fp4" and fp4["derived"]["fp4_recipe"] == "nvfp4", fp4["derived"]
        fp8 = run_json("run", shipped, "--set", "training.precision=fp8", "--unset", "training.fp4_recipe",
                       "--set", "training.fp8_recipe=mxfp8")
        assert fp4["step_time_s"] < fp8["step_time_s"], (fp4["step_time_s"], fp8["step_time_s"])
        # Hopper has no FP4 tensor cores: exit 2 naming the key, the GPU and the reason.
        s = scenario(d, "fp4-h100", {"instance_type": "p5.48xlarge", "nodes": 1},
                     {"global_batch_size": 8}, precision="fp4")
        out = os.path.join(d, "out.json")
        expect_bad_input(["run", s, "--json", out], ["fp4-h100.json", "/training/precision", "H100", "Blackwell"], out)


@test
def a_bad_host_op_time_factor_exits_2_naming_the_figure():
    import shutil
    with tempfile.TemporaryDirectory() as d:
        catalog_dir = os.path.join(d, "catalog")
        shutil.copytree(os.path.join(TOPO, "catalog"), catalog_dir)
        path = os.path.join(catalog_dir, "instances.json")
        instances = json.load(open(path))
        out = os.path.join(d, "out.json")
        for value, expected in ((0, "> 0"), (500, "(0, 100]")):
            instances["instances"]["p6e-gb200.36xlarge"]["host_op_time_factor"]["value"] = value
            json.dump(instances, open(path, "w"))
            expect_bad_input(["--catalog", catalog_dir, "topo", os.path.join(TOPO, "p5.json"), "--json", out],
                             ["instances.json", "/instances/p6e-gb200.36xlarge/host_op_time_factor/value", str(value), expected], out)


run_tests()
