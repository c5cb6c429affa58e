#!/usr/bin/env python3
"""The example notebooks (docs/notebooks/sweep-explore.ipynb, search-pareto.ipynb) execute top to bottom with Debian's
jupyter nbconvert on a fresh sweep, without errors, and draws its plots.
Needs jupyter-nbconvert, python3-ipykernel, python3-pandas, python3-matplotlib (install-deps.sh --test).
Usage: run_notebook_tests.py FMSIM SOURCE_DIR"""
import json
import os
import shutil
import subprocess
import tempfile

from cli_support import CONFIGS, SOURCE, run, run_tests, test

TMP = tempfile.mkdtemp(prefix="fmsim-notebook-tests-")


def execute(notebook_name, env_var, data_file, images_expected):
    """Runs a notebook of docs/notebooks/ with nbconvert on `data_file` (named by `env_var`); returns its
    outputs' text after checking that no cell failed and that it drew `images_expected` plots."""
    notebook = os.path.join(os.path.abspath(SOURCE), "docs", "notebooks", notebook_name)
    executed = os.path.join(TMP, "executed-" + notebook_name)
    jupyter = shutil.which("jupyter", path="/usr/bin") or "jupyter"
    env = dict(os.environ, MPLBACKEND="module://matplotlib_inline.backend_inline", PYDEVD_DISABLE_FILE_VALIDATION="1")
    env[env_var] = data_file
    proc = subprocess.run([jupyter, "nbconvert", "--to", "notebook", "--execute", "--ExecutePreprocessor.timeout=300",
                           notebook, "--output", executed], capture_output=True, text=True, env=env, cwd=TMP, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with open(executed) as f:
        cells = [c for c in json.load(f)["cells"] if c["cell_type"] == "code"]
    outputs = [o for c in cells for o in c.get("outputs", [])]
    errors = [o for o in outputs if o["output_type"] == "error"]
    assert not errors, f"cell errors: {[(e['ename'], e['evalue']) for e in errors]}"
    images = [o for o in outputs if "image/png" in o.get("data", {})]
    assert len(images) >= images_expected, f"expected {images_expected} plots, got {len(images)} images"
    return "".join("".join(o.get("text", "")) for o in outputs)


@test
def notebook_executes_on_a_fresh_sweep():
    sweep = os.path.join(TMP, "sweep.jsonl")
    proc = run("sweep", os.path.join(CONFIGS, "sweeps", "llama3-70b-p5-parallelism.json"), "--out", sweep)
    assert proc.returncode == 0, proc.stderr
    text = execute("sweep-explore.ipynb", "FMSIM_SWEEP", sweep, 2)  # the MFU heat map and the cost plot
    with open(sweep) as f:
        points = sum(1 for _ in f)
    assert f"{points} points" in text, "the notebook read every line of the sweep"


@test
def search_notebook_executes_on_a_fresh_search():
    result = os.path.join(TMP, "search.json")
    proc = run("search", os.path.join(CONFIGS, "search", "llama3.1-405b-aws.json"), "--json", result, "--top", "300",
               "--resimulate", "4", "--best", os.path.join(TMP, "search-best.json"))
    assert proc.returncode == 0, proc.stderr
    text = execute("search-pareto.ipynb", "FMSIM_SEARCH", result, 2)  # the Pareto plot and analytic vs simulated
    with open(result) as f:
        doc = json.load(f)
    assert f"{len(doc['pareto_front'])} on the Pareto front" in text, text[:500]
    assert "4 re-simulated" in text, text[-500:]


if __name__ == "__main__":
    run_tests()
