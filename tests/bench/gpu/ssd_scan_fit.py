#!/usr/bin/env python3
"""Derives a profile's `ssd_scan_hbm_efficiency` (docs/hardware.md, "Mamba-2
scan kernels") from ssd_scan_probe.py's measurements, and checks it on the
shapes it was not fitted on. Plain Python, no GPU:

  python3 tests/bench/gpu/ssd_scan_fit.py RESULTS.json MEM_BANDWIDTH KERNEL_FLOOR_US

(h100: tests/bench/gpu/results/h100-sxm-2026-11-27-ssd-scan.json 3350e9 3.5;
 h200: tests/bench/gpu/results/h200-2026-11-27-ssd-scan.json 4800e9 2.4)

The measured time of a shape is the device time of the scan's Triton
kernels in one forward + backward (torch.profiler): the forward's five and
the backward's fourteen, as core/cost/ssd_cost.cc lists them; PyTorch's
own kernels in the profile (the gradient accumulation into the probe's leaf
tensors, fills, and the dA / dD / d dt_bias reductions that stagecraft
times as ssd_scan_wgrad) are left out. The model is ssd_cost.cc's:
each kernel max(floor, FLOPs / (peak_bf16 x attention efficiency), bytes /
(bandwidth x e)); the FLOPs never bind at these shapes, so e is the one
number that makes the fit shape's sum equal its measured sum (bisection).
The bytes per kernel are ssd_cost.cc's formulas, written again here (the
doctest in tests/unit/cost/ssd_cost_test.cc checks the C++ against hand
counts, and the timing against this file's measured figure).
"""
import json
import math
import sys

FIT = "nemotron-h-56b tp8"  # the shape of docs/fidelity.md's Nemotron-H rows
FWD = ["_chunk_cumsum_fwd_kernel", "_chunk_state_fwd_kernel", "_state_passing_fwd_kernel",
       "_bmm_chunk_fwd_kernel", "_chunk_scan_fwd_kernel"]
BWD_ONLY = ["_chunk_scan_bwd_dz_kernel", "_chunk_scan_bwd_dstates_kernel", "_state_passing_bwd_kernel",
            "_chunk_scan_chunk_state_bwd_dx_kernel", "_chunk_state_bwd_db_kernel", "_chunk_scan_bwd_dc_kernel",
            "_chunk_scan_bwd_dcb_kernel", "_bmm_chunk_bwd_kernel", "_chunk_scan_bwd_ddAcs_stable_kernel"]


def kernel_bytes(r):
    """Bytes of the forward's 5 and the backward's 14 kernels (ssd_cost.cc)."""
    e = 2
    t = r["batch"] * r["tokens"]
    ch = r["batch"] * math.ceil(r["tokens"] / r["chunk"])
    h, p, g, n, q = r["heads"], r["head_dim"], r["groups"], r["state"], r["chunk"]
    x, bc, st, cb, d = t * h * p, t * g * n, ch * h * p * n, ch * g * q * q, t * h
    cumsum, state, bmm = e * d + 8 * d, e * x + e * bc + 8 * d + 4 * st, 2 * e * bc + 4 * cb
    fwd = [cumsum, state, 4 * st + e * st, bmm, 4 * cb + 2 * e * x + e * bc + e * st + 8 * d + 2 * e * x]
    bwd = [cumsum, bmm, state, 8 * st, 6 * e * x, e * x + e * bc + 4 * d + 4 * st, 8 * st + 2 * e * st,
           2 * e * x + e * bc + 4 * cb + e * st + 8 * d + e * x + 4 * d, e * x + e * st + 8 * d + e * bc,
           e * st + e * x + e * bc, 2 * e * x + 8 * d + 4 * cb, 3 * e * bc + 4 * cb, 3 * e * bc + 4 * cb,
           2 * e * x + 4 * cb + 12 * d]
    return fwd, bwd


def measured_us(r):
    """The Triton kernels' device time of one forward + backward (us); the
    forward's kernels ran twice (again in the backward's recomputation)."""
    k = r["kernels"]
    fwd = sum(k[name]["us"] / k[name]["calls"] for name in FWD)
    return fwd, sum(k[name]["us"] for name in FWD) + sum(k[name]["us"] for name in BWD_ONLY) - fwd


def model_us(r, bw, eff, floor):
    fwd, bwd = kernel_bytes(r)
    f = sum(max(floor, b / (bw * eff) * 1e6) for b in fwd)
    return f, sum(max(floor, b / (bw * eff) * 1e6) for b in bwd)


def main():
    rows = json.load(open(sys.argv[1]))["rows"]
    bw, floor = float(sys.argv[2]), float(sys.argv[3])
    fit = next(r for r in rows if r["case"] == FIT)
    target = sum(measured_us(fit))
    lo, hi = 0.01, 1.0
    for _ in range(100):
        mid = (lo + hi) / 2
        if sum(model_us(fit, bw, mid, floor)) > target:
            lo = mid
        else:
            hi = mid
    eff = (lo + hi) / 2
    print(f"fitted on {FIT}: ssd_scan_hbm_efficiency = {eff:.4f} ({eff:.2f})")
    print("| shape | measured fwd / bwd us | model fwd / bwd us (e = %.2f) | error fwd+bwd |" % round(eff, 2))
    print("|---|---|---|---|")
    for r in rows:
        mf, mb = measured_us(r)
        pf, pb = model_us(r, bw, round(eff, 2), floor)
        tag = " (fit)" if r is fit else ""
        print(f"| {r['case']}{tag} | {mf:.0f} / {mb:.0f} | {pf:.0f} / {pb:.0f} | {((pf + pb) / (mf + mb) - 1) * 100:+.1f}% |")


if __name__ == "__main__":
    main()
