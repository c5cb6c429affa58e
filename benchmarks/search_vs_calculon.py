#!/usr/bin/env python3
"""fmsim search side by side with Calculon's exhaustive search (calculon-ai/calculon, llm-optimal-execution) on the
same problem: GPT-3 13B (Calculon's models/gpt3-13B.json) on 16 H100 (2 DGX H100; Calculon's systems/h100_80g_nvl8.json),
global batch 512, 16-bit. Reports both tools' picks and each tool's verdict on the other's pick: fmsim runs Calculon's
best layout, Calculon (`calculon llm`) runs fmsim's. fmsim models no offloading to host memory, so Calculon runs on its
H100 system with the second memory tier removed (mem2 0 GiB: no weight, activation or optimizer offload), which also
cuts its search from 144,704 executions to 20,944. Calculon's search takes tens of minutes on this 2-core machine, so
its result file is an input (--calculon-result): PYTHONPATH=. python3 ./bin/calculon llm-optimal-execution
models/gpt3-13B.json 16 512 float16 SYSTEM OUT.json -m -c 1 -t 10, with SYSTEM the file this script writes with
--write-system. --calculon DIR is a Calculon checkout (run with /usr/bin/python3 and numpy).
Writes benchmarks/results/search_vs_calculon.json."""
import itertools
import json
import os
import subprocess
import tempfile

from bench_support import ROOT, parser, write_results

SEARCH = os.path.join(ROOT, "benchmarks", "calculon", "gpt3-13b-dgx-h100-16-search.json")
SCENARIO = os.path.join(ROOT, "benchmarks", "calculon", "gpt3-13b-dgx-h100-16.json")
SEQ, GPUS, BATCH = 2048, 16, 512
RECOMPUTE_TO_FMSIM = {"full": "full", "attn_only": "selective", "none": "none"}
RECOMPUTE_TO_CALCULON = {v: k for k, v in RECOMPUTE_TO_FMSIM.items()}


def fmsim_tokens(fmsim, exe):
    """fmsim's tokens/s/GPU for a Calculon execution (its layout, recompute, sequence parallelism, overlaps)."""
    sets = {"parallelism.tensor_model_parallel_size": exe["tensor_par"], "parallelism.pipeline_model_parallel_size": exe["pipeline_par"],
            "parallelism.virtual_pipeline_model_parallel_size": exe["pipeline_interleaving"],
            "parallelism.micro_batch_size": exe["microbatch_size"], "parallelism.global_batch_size": exe["batch_size"],
            "parallelism.sequence_parallel": str(exe["tensor_par_comm_type"] == "rs_ag" and exe["tensor_par"] > 1).lower(),
            "parallelism.use_distributed_optimizer": str(bool(exe["optimizer_sharding"])).lower(),
            "training.recompute_granularity": RECOMPUTE_TO_FMSIM[exe["activation_recompute"]],
            "training.tp_comm_overlap": str(exe["tensor_par_overlap"] != "none" and exe["tensor_par"] > 1).lower(),
            "training.overlap_grad_reduce": str(bool(exe["data_par_overlap"])).lower()}
    command = [fmsim, "-q", "run", SCENARIO, "--json", "-", "--allow-oom"]
    for key, value in sets.items():
        command += ["--set", f"{key}={value}"]
    proc = subprocess.run(command, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()
    doc = json.loads(proc.stdout)
    return doc["tokens_per_s_per_gpu"], ("does not fit: " + doc.get("memory", {}).get("verdict", "")) if doc.get("oom") else ""


def no_offload_system(calculon, path):
    """Calculon's H100 system file without its host-memory tier (fmsim does not model offloading)."""
    system = json.load(open(os.path.join(calculon, "systems", "h100_80g_nvl8.json")))
    system["mem2"]["GiB"] = 0
    json.dump(system, open(path, "w"), indent=1)
    return path


def calculon_tokens(calculon, layout, system):
    """Calculon's tokens/s/GPU for fmsim's layout: its best over the choices fmsim's layout leaves to the stack and
    that Calculon's own search explores (which network each parallel dimension uses, TP and DP overlap). Returns
    (tokens/s/GPU or None, Calculon's reason when no variant runs)."""
    tp, pp, vp, mb = layout["tensor_model_parallel_size"], layout["pipeline_model_parallel_size"], layout["virtual_pipeline_model_parallel_size"], layout["micro_batch_size"]
    dp = GPUS // (tp * pp)
    best, reasons = None, set()
    tmp = tempfile.mkdtemp(prefix="fmsim-calculon-")
    recompute = RECOMPUTE_TO_CALCULON[layout["recompute_granularity"]]
    for tn, pn, dn in itertools.product((0, 1), repeat=3):
        for tp_overlap in (("none", "ring", "pipe") if tp > 1 else ("none",)):
            for w_off, a_off, o_off in [(False, False, False)]:
                exe = {"num_procs": GPUS, "tensor_par": tp, "pipeline_par": pp, "data_par": dp, "tensor_par_net": tn,
                       "pipeline_par_net": pn, "data_par_net": dn, "batch_size": BATCH, "microbatch_size": mb, "datatype": "float16",
                       "fused_activation": True, "attention_type": "multihead", "activation_recompute": recompute,
                       "pipeline_interleaving": vp, "optimizer_sharding": True, "tensor_par_comm_type": "rs_ag" if tp > 1 else "ar",
                       "tensor_par_overlap": tp_overlap, "seq_par_ag_redo": False, "data_par_overlap": dp > 1,
                       "weight_offload": w_off, "activations_offload": a_off, "optimizer_offload": o_off, "training": True}
                path, stats = os.path.join(tmp, "exe.json"), os.path.join(tmp, "stats.json")
                json.dump(exe, open(path, "w"))
                proc = subprocess.run(["/usr/bin/python3", "./bin/calculon", "llm", "models/gpt3-13B.json", path, system, stats],
                                      cwd=calculon, capture_output=True, text=True, env=dict(os.environ, PYTHONPATH="."))
                if proc.returncode != 0:
                    lines = [l for l in (proc.stdout + proc.stderr).splitlines() if "ERROR" in l or "Error" in l]
                    reasons.add(lines[-1].strip() if lines else "failed")
                    continue
                rate = json.load(open(stats))["sample_rate"] * SEQ / GPUS
                best = rate if best is None or rate > best else best
    return best, "" if best is not None else "; ".join(sorted(reasons))


def main():
    p = parser(__doc__, "search_vs_calculon")
    p.add_argument("--calculon", default=os.environ.get("CALCULON", "/work/calculon"))
    p.add_argument("--calculon-result", help="llm-optimal-execution output (JSON), run on the --write-system file")
    p.add_argument("--write-system", help="write Calculon's H100 system without host-memory offload here and stop")
    args = p.parse_args()
    if args.write_system:
        no_offload_system(args.calculon, args.write_system)
        return
    if not args.calculon_result:
        raise SystemExit("--calculon-result FILE (or --write-system FILE first)")
    system = no_offload_system(args.calculon, os.path.join(tempfile.mkdtemp(prefix="fmsim-calculon-"), "h100_nooffload.json"))
    proc = subprocess.run([args.fmsim, "-q", "search", SEARCH, "--json", "-", "--best", os.path.join(tempfile.mkdtemp(), "best.json")],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(proc.stderr)
    top = json.loads(proc.stdout)["top"]

    def layout_of(candidate):
        par = candidate["parallelism"]
        return {"tensor_model_parallel_size": par["tp"], "pipeline_model_parallel_size": par["pp"],
                "virtual_pipeline_model_parallel_size": par["vp"], "micro_batch_size": par["micro_batch"],
                "recompute_granularity": candidate["recompute"], "context_parallel_size": par["cp"], "layout": candidate["layout"]}

    fm = top[0]
    layout = layout_of(fm)
    calc = json.load(open(args.calculon_result))
    calc_best = calc[0] if isinstance(calc, list) else calc[sorted(calc.keys(), key=int)[0]]
    exe, stats = calc_best["execution"], calc_best["stats"]
    calc_tokens = stats["sample_rate"] * SEQ / GPUS
    fm_on_calc, note = fmsim_tokens(args.fmsim, exe)
    calc_on_fm, calc_note = calculon_tokens(args.calculon, layout, system)
    # fmsim's best layout that Calculon also thinks fits (its memory model keeps more activations).
    accepted = None
    for rank, candidate in enumerate(top, 1):
        if candidate["parallelism"]["cp"] != 1:
            continue  # Calculon has no context parallelism
        tokens, _ = calculon_tokens(args.calculon, layout_of(candidate), system)
        if tokens is not None:
            accepted = {"rank": rank, "layout": candidate["layout"], "fmsim": candidate["tokens_per_s_per_gpu"], "calculon": tokens}
            break
    row = {"problem": "GPT-3 13B, 16 H100, global batch 512, seq 2048, 16-bit",
           "fmsim_best_that_calculon_fits": accepted,
           "fmsim_pick": layout,
           "fmsim_pick_tokens_per_s_per_gpu": {"fmsim": fm["tokens_per_s_per_gpu"], "calculon": calc_on_fm, "calculon_note": calc_note},
           "calculon_pick": {k: exe[k] for k in ("tensor_par", "pipeline_par", "data_par", "pipeline_interleaving", "microbatch_size",
                                                 "activation_recompute", "tensor_par_overlap", "data_par_overlap", "optimizer_sharding",
                                                 "tensor_par_net", "pipeline_par_net", "data_par_net")},
           "calculon_pick_tokens_per_s_per_gpu": {"calculon": calc_tokens, "fmsim": fm_on_calc, "fmsim_note": note}}
    print(json.dumps(row, indent=1))
    write_results(args.out, [row])


if __name__ == "__main__":
    main()
