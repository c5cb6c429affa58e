#!/usr/bin/env python3
"""Every result document fmsim writes validates against its JSON Schema in docs/schema/ (Draft
2020-12), and the schemas reject documents that lack a required field, carry a field of the wrong type
or an undocumented one, so that a change to an output cannot go unnoticed by notebooks.
Needs Debian's python3-jsonschema (scripts/install-deps.sh --test).
Usage: run_schema_tests.py FMSIM SOURCE_DIR"""
import copy
import json
import os
import tempfile

import jsonschema

from cli_support import CONFIGS, SOURCE, TOPO, run, run_json, run_tests, test, write

SCHEMAS = os.path.join(SOURCE, "docs", "schema")
TMP = tempfile.mkdtemp(prefix="fmsim-schema-tests-")


def validator(name):
    with open(os.path.join(SCHEMAS, name + ".schema.json")) as f:
        schema = json.load(f)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def assert_valid(name, doc, what):
    errors = sorted(validator(name).iter_errors(doc), key=lambda e: list(e.path))
    assert not errors, f"{what}: " + "; ".join(f"/{'/'.join(map(str, e.path))}: {e.message[:200]}" for e in errors[:5])


def training(name):
    return os.path.join(CONFIGS, "training", name)


def serving(name):
    return os.path.join(CONFIGS, "serving", name)


@test
def run_results_validate():
    for scenario in ["llama3-70b-p5.json", "llama3.1-405b-p5-2048.json", "mixtral-8x7b-p5.json", "deepseek-v3-p5en.json"]:
        assert_valid("run", run_json("run", training(scenario)), scenario)
    assert_valid("run", run_json("run", training("llama3-8b-p5.json"), "--fidelity", "full"), "llama3-8b full fidelity")


@test
def serve_results_validate():
    few = ["--set", "workload.requests=300"]
    assert_valid("serve", run_json("serve", serving("llama3.3-70b-p5en.json"), *few), "unified")
    assert_valid("serve", run_json("serve", serving("llama3.3-70b-p5en-disaggregated.json"), *few), "disaggregated")
    assert_valid("serve", run_json("serve", serving("llama3.3-70b-p5en.json"), *few, "--sweep-rate"), "rate sweep")
    # --allow-oom with a replica that does not fit: the short document with the reason, and only that.
    oom = run_json("serve", serving("llama3.3-70b-p5en.json"), *few, "--set", "serving.precision=bf16",
                   "--set", "serving.tensor_parallel_size=1", "--allow-oom")
    assert_valid("serve", oom, "replica that does not fit")
    no_reason = copy.deepcopy(oom)
    del no_reason["oom_reason"]
    assert list(validator("serve").iter_errors(no_reason)), "the serve schema accepts \"oom\": true without the reason"


@test
def checkpoint_collective_topo_and_trace_validate():
    assert_valid("checkpoint", run_json("checkpoint", training("llama3.1-405b-p5-2048.json")), "checkpoint")
    for op in ["all_reduce", "alltoall", "all_gather"]:
        assert_valid("collective", run_json("collective", os.path.join(TOPO, "p5-2node.json"), "--op", op, "-b", "8", "-e", "1M", "-f", "64"), op)
    for topo in ["p5-2node.json", "p6e-gb200-4x72.json", "p4de-2node.json"]:
        assert_valid("topo", run_json("topo", os.path.join(TOPO, topo)), topo)
    # A BF16 MoE trace, and FP8 ones (fp8, fp8_split_accumulator) in both fidelities.
    for scenario, fidelity in [("mixtral-8x7b-p5.json", "fast"), ("llama3-70b-p5.json", "fast"), ("llama3-8b-p5.json", "full")]:
        out = os.path.join(TMP, f"trace-{scenario}-{fidelity}.json")
        proc = run("trace", training(scenario), "--out", out, "--fidelity", fidelity)
        assert proc.returncode == 0, proc.stderr
        with open(out) as f:
            doc = json.load(f)
        assert_valid("trace", doc, f"{scenario} trace ({fidelity})")
        if scenario != "mixtral-8x7b-p5.json":
            assert any(n.get("fp8_split_accumulator") for n in doc["nodes"]), "an FP8 trace has split-accumulator GEMMs"


@test
def sweep_lines_validate():
    sweep = os.path.join(CONFIGS, "sweeps", "llama3-70b-p5-parallelism.json")
    out = os.path.join(TMP, "sweep.jsonl")
    proc = run("sweep", sweep, "--out", out)
    assert proc.returncode == 0, proc.stderr
    with open(out) as f:
        lines = [json.loads(line) for line in f]
    assert {l["status"] for l in lines} == {"ok", "invalid"}, "the sweep has both valid and invalid points"
    for line in lines:
        assert_valid("sweep-line", line, f"line {line['index']}")
        if line["status"] == "ok":
            assert_valid("run", line["result"], f"result of line {line['index']}")


@test
def schemas_reject_what_they_do_not_document():
    doc = run_json("run", training("llama3-8b-p5.json"))
    v = validator("run")
    missing = copy.deepcopy(doc)
    del missing["step_time_s"]
    wrong_type = copy.deepcopy(doc)
    wrong_type["mfu"] = "high"
    extra = copy.deepcopy(doc)
    extra["undocumented_s"] = 1.0
    wrong_version = copy.deepcopy(doc)
    wrong_version["schema"] = "fmsim.run/2"
    for name, bad in [("missing field", missing), ("wrong type", wrong_type), ("undocumented field", extra), ("version", wrong_version)]:
        assert list(v.iter_errors(bad)), f"the run schema accepts a document with a {name}"
    line = {"index": 0, "point": {}, "status": "ok"}
    assert list(validator("sweep-line").iter_errors(line)), "an ok sweep line needs a result"


@test
def every_schema_is_versioned_and_documented():
    for name in sorted(os.listdir(SCHEMAS)):
        with open(os.path.join(SCHEMAS, name)) as f:
            schema = json.load(f)
        assert schema["$schema"].endswith("2020-12/schema"), name
        assert schema["$id"].startswith("fmsim.") and schema["$id"].endswith("/1"), name
        assert schema.get("description"), f"{name} has no description"
        # Debian bookworm's jsonschema 4.10 joins a relative $id such as "fmsim.x/1" with itself when it
        # follows a $ref, and then fails to fetch "fmsim.x/fmsim.x/1": schemas stay free of $ref.
        assert "$ref" not in json.dumps(schema), f"{name} uses $ref"


if __name__ == "__main__":
    run_tests()
