#!/usr/bin/env python3
"""`fmsim report` reads result documents a user may have edited: every count it turns into an integer is
checked first (a GPU count of 0 divided by zero, 2e9 GPUs per pool looped for ever, 1e300 as a rank is
undefined behaviour in the conversion to int), and any edited number ends in exit 0 or a one-line exit 2.
Usage: run_report_input_tests.py FMSIM SOURCE_DIR"""
import copy
import json
import os
import tempfile

from cli_support import CONFIGS, expect_bad_input, run, run_json, run_tests, test, write

TMP = tempfile.mkdtemp(prefix="fmsim-report-input-tests-")
FEW = ["--set", "workload.requests=30"]
RUN = run_json("run", os.path.join(CONFIGS, "training", "llama3-70b-p5.json"))
SERVE = run_json("serve", os.path.join(CONFIGS, "serving", "llama3.3-70b-p5en.json"), *FEW)
CHECKPOINT = run_json("checkpoint", os.path.join(CONFIGS, "training", "llama3-8b-p5.json"))


def edited(doc, path, value):
    doc = copy.deepcopy(doc)
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return doc


def expect_refused(doc, output, must_contain):
    name = "edited-" + str(abs(hash(json.dumps(must_contain))))
    result = write(TMP, name + ".json", json.dumps(doc))
    expect_bad_input(["report", result, output, os.path.join(TMP, name + ".out")], [name + ".json"] + must_contain,
                     os.path.join(TMP, name + ".out"))


@test
def prometheus_refuses_zero_gpus_per_node():
    # Was SIGFPE: the GPU ordinal modulo 0.
    expect_refused(edited(SERVE, ["cluster", "gpus_per_node"], 0), "--prometheus", ["/cluster/gpus_per_node", "whole number from 1"])


@test
def prometheus_refuses_a_pool_of_two_billion_gpus():
    # Was a loop over 2e9 GPUs writing series until memory ran out.
    proc_doc = edited(SERVE, ["pools", 0, "gpus"], 2000000000)
    expect_refused(proc_doc, "--prometheus", ["/pools/0/gpus"])
    expect_refused(edited(SERVE, ["pools", 0, "replicas"], 0), "--prometheus", ["/pools/0/replicas"])


@test
def counts_beyond_int_are_refused_not_converted():
    # Were exit 0 with "stage -2147483648" (undefined behaviour: 1e300 converted to int).
    expect_refused(edited(RUN, ["memory", "pipeline_rank"], 1e300), "--html", ["/memory/pipeline_rank", "1e+300"])
    expect_refused(edited(RUN, ["derived", "gpus"], 4294967296), "--html", ["/derived/gpus"])
    expect_refused(edited(RUN, ["derived", "data_parallel_size"], 2.5), "--html", ["/derived/data_parallel_size", "2.5"])
    expect_refused(edited(RUN, ["scenario", "parallelism", "tensor_model_parallel_size"], 1e300), "--html",
                   ["/scenario/parallelism/tensor_model_parallel_size"])
    expect_refused(edited(RUN, ["pipeline_timeline", "stages", 0, "microbatch", 0], 1e300), "--html",
                   ["/pipeline_timeline/stages/0/microbatch/0"])
    expect_refused(edited(RUN, ["gpus", 0, "rank"], -1e300), "--prometheus", ["/gpus/0/rank"])
    expect_refused(edited(SERVE, ["cluster", "gpus"], 1e300), "--html", ["/cluster/gpus"])
    expect_refused(edited(SERVE, ["pools", 0, "tensor_parallel_size"], 1e300), "--html", ["/pools/tensor_parallel_size"])
    expect_refused(edited(CHECKPOINT, ["interval_steps"], 1.5), "--html", ["/interval_steps", "1.5"])


def leaves(doc, path=()):
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key != "resolved_scenario":
                yield from leaves(value, path + (key,))
    elif isinstance(doc, list):
        for i, value in enumerate(doc[:2]):
            yield from leaves(value, path + (i,))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path


@test
def any_edited_number_is_a_result_or_one_line_error():
    failures = []
    for name, doc in (("run", RUN), ("serve", SERVE), ("checkpoint", CHECKPOINT)):
        for path in leaves(doc):
            for value in (0, 1e300):
                result = write(TMP, "sweep.json", json.dumps(edited(doc, list(path), value)))
                proc = run("-q", "report", result, "--html", os.path.join(TMP, "sweep.html"), "--prometheus", os.path.join(TMP, "sweep.prom"),
                           timeout=60)
                lines = [l for l in proc.stderr.splitlines() if l.strip()]
                if proc.returncode not in (0, 2) or (proc.returncode == 2 and len(lines) != 1):
                    failures.append(f"{name} {'/'.join(map(str, path))} = {value}: exit {proc.returncode} {lines[-1:]}")
    assert not failures, "\n".join(failures[:20])


if __name__ == "__main__":
    run_tests()
