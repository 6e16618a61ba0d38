#!/usr/bin/env python3
"""Narayanan et al. 2021 Table 1 against the kernel cost model (issue 11).

Not a test: prints the markdown table of docs/hardware.md#calibration.
  python3 tests/bench/table1.py [path/to/stagecraft] ['{"cost_model": "roofline"}'] [full|selective]

Each row becomes a job (A100, fp16, micro-batch 1, 1F1B, grad reduce in
fp16); from `inspect --json`: the busiest stage's compute per iteration and
its tensor- and data-parallel bytes. Estimate of the step time (until the
whole-job simulator replaces it):
  est = (compute + tp_allreduce) * (1 + (p-1)/m) + dp_allreduce
with all-reduce time 2(n-1)/n * bytes / busbw, busbw 230 GB/s on NVLink
(8 x A100, nccl-tests #175) and 24 GB/s per HDR NIC (nccl #412).
Published step time: 96 B s L h^2 (1 + s/6h + V/16Lh) / (GPUs * TFLOP/s).
"""
import json
import subprocess
import sys
import tempfile

BIN = sys.argv[1] if len(sys.argv) > 1 else "build/native/stagecraft"
HW = json.loads(sys.argv[2]) if len(sys.argv) > 2 else {}
RECOMPUTE = sys.argv[3] if len(sys.argv) > 3 else "full"
ROWS = [  # params, a, h, L, t, p, GPUs, B, TFLOP/s per GPU (Table 1)
    ("1.7B", 24, 2304, 24, 1, 1, 32, 512, 137), ("3.6B", 32, 3072, 30, 2, 1, 64, 512, 138),
    ("7.5B", 32, 4096, 36, 4, 1, 128, 512, 142), ("18.4B", 48, 6144, 40, 8, 1, 256, 1024, 135),
    ("39.1B", 64, 8192, 48, 8, 2, 512, 1536, 138), ("76.1B", 80, 10240, 60, 8, 4, 1024, 1792, 140),
    ("145.6B", 96, 12288, 80, 8, 8, 1536, 2304, 148), ("310.1B", 128, 16384, 96, 8, 16, 1920, 2160, 155),
    ("529.6B", 128, 20480, 105, 8, 35, 2520, 2520, 163), ("1008.0B", 160, 25600, 128, 8, 64, 3072, 3072, 163)]
S, V = 2048, 51200
NVLINK, IB = 230e9, 24e9

print("| params | t | p | m | published s/iter | compute | tp | dp | bubble | estimate | error |")
print("|---|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
for name, a, h, L, t, p, G, B, tf in ROWS:
    dp = G // (t * p)
    published = 96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h)) / (G * tf * 1e12)
    hw = {"preset": "a100"}
    hw.update(HW)
    job = {"model": {"num_layers": L, "hidden": h, "num_heads": a, "vocab": V, "name": name},
           "parallel": {"tp": t, "pp": p, "dp": dp},
           "training": {"seq_len": S, "micro_batch_size": 1, "global_batch_size": B, "recompute": RECOMPUTE,
                        "dtype": "fp16", "grad_reduce_dtype": "fp16"},
           "hardware": hw}
    # inspect reads regular files only (not /dev/stdin).
    with tempfile.NamedTemporaryFile("w", suffix=".json") as f:
        json.dump(job, f)
        f.flush()
        r = subprocess.run([BIN, "inspect", "--config", f.name, "--json"], capture_output=True, text=True, check=True)
    s = json.loads(r.stdout)
    m = s["micro_batches_per_iteration"]
    st = max(s["stages"], key=lambda x: x["trace"]["compute_micros_per_rank"])
    compute = st["trace"]["compute_micros_per_rank"] * 1e-6
    axis = st["communication"]["per_rank_bytes_by_axis"]
    tp_t = 2 * (t - 1) / t * axis.get("tp", 0) / NVLINK if t > 1 else 0.0
    dp_t = 2 * (dp - 1) / dp * axis.get("dp", 0) / IB if dp > 1 else 0.0
    bubble = (p - 1) / m
    est = (compute + tp_t) * (1 + bubble) + dp_t
    print(f"| {name} | {t} | {p} | {m} | {published:.2f} | {compute:.2f} | {tp_t:.2f} | {dp_t:.2f} | "
          f"{bubble:.3f} | {est:.2f} | {100 * (est / published - 1):+.1f}% |", flush=True)
