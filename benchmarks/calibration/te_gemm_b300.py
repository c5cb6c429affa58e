#!/usr/bin/env python3
"""Blackwell Ultra GEMM efficiency from Transformer Engine's published B300 GEMM timings.

Source: NVIDIA/TransformerEngine docs/examples/gemm_profiling/gemm_profiling.rst (the GEMM profiling guide,
pull request #2863), "Worked Example: 5B Model on B300", pre-quantized mode (GEMM kernels only): the 12 GEMMs
of one layer (4 forward, 4 data-gradient, 4 weight-gradient) at M = 31 x 512 = 15,872 tokens, hidden 4096,
FFN 16384, on a B300 SXM6 AC, take 13.102 ms (BF16), 6.812 ms (FP8 current scaling: per-tensor scales)
and 7.161 ms (MXFP8: a UE8M0 scale per 32 elements) per layer.

This script prices the same 12 GEMMs with fmsim's GEMM model (src/compute/compute_model.cpp: output tiles
128x256, 256x128, 128x128, 64x128, whole waves over the SMs, each tile K + 150 elements deep (Blackwell's
per-tile pipeline fill and epilogue, gemm_tile_k_overhead), the HBM roofline, 3 us per kernel) for B300
(160 SMs, 2.25 / 4.5 PFLOPS dense BF16 / FP8, 8 TB/s at 88 % achievable) and solves for the fraction of
the dense peak each precision reaches: the catalog's gemm_peak_efficiency (FP8) and gemm_mxfp8_rate
(MXFP8 over per-tensor FP8). Prints a table; --json FILE writes it."""
import argparse
import json
import math

SMS, HBM_BPS = 160, 8e12 * 0.88
PEAK = {"bf16": 2.25e15, "fp8": 4.5e15}
TILES = ((128, 256), (256, 128), (128, 128), (64, 128))
TILE_K_OVERHEAD = 150  # topologies/catalog/gpus.json, B300 gemm_tile_k_overhead
LAUNCH_S = 3e-6  # compute::kGemmFixedOverhead_s
M, HIDDEN, FFN = 15872, 4096, 16384
FORWARD = [(M, 3 * HIDDEN, HIDDEN), (M, HIDDEN, HIDDEN), (M, FFN, HIDDEN), (M, HIDDEN, FFN)]  # (m, n, k)
GEMMS = FORWARD + [(m, k, n) for m, n, k in FORWARD] + [(n, k, m) for m, n, k in FORWARD]
MEASURED_MS = {"bf16": 13.102, "fp8 (current scaling)": 6.812, "mxfp8": 7.161}


def gemm_s(m, n, k, precision, efficiency):
    per_sm = PEAK[precision] * efficiency / SMS
    tensor = min(math.ceil(math.ceil(m / a) * math.ceil(n / b) / SMS) * 2.0 * a * b * (k + TILE_K_OVERHEAD) / per_sm for a, b in TILES)
    memory = ((m * k + k * n) * (2 if precision == "bf16" else 1) + m * n * 2.0) / HBM_BPS
    return max(tensor, memory) + LAUNCH_S


def efficiency_for(precision, measured_s):
    low, high = 0.05, 1.0
    for _ in range(60):
        mid = (low + high) / 2
        if sum(gemm_s(*g, precision, mid) for g in GEMMS) > measured_s:
            low = mid
        else:
            high = mid
    return mid


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the table as JSON")
    args = parser.parse_args()
    rows = []
    for name, ms in MEASURED_MS.items():
        precision = "bf16" if name == "bf16" else "fp8"
        rows.append({"precision": name, "measured_ms_per_layer": ms, "efficiency": round(efficiency_for(precision, ms * 1e-3), 4)})
    fp8, mx = rows[1]["efficiency"], rows[2]["efficiency"]
    print("| precision | measured ms / layer | fraction of dense peak |\n|---|---:|---:|")
    for r in rows:
        print(f"| {r['precision']} | {r['measured_ms_per_layer']:.3f} | {r['efficiency']:.4f} |")
    print(f"\nMXFP8 over per-tensor FP8: {MEASURED_MS['fp8 (current scaling)'] / MEASURED_MS['mxfp8']:.3f} (times), {mx / fp8:.3f} (efficiencies)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"source": "TransformerEngine gemm_profiling.rst, B300 pre-quantized", "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
