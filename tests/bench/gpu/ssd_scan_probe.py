#!/usr/bin/env python3
"""Times mamba_ssm's chunked Mamba-2 (SSD) scan kernels on one GPU, at the
shapes of the Nemotron-H rows in docs/fidelity.md. Needs PyTorch with CUDA,
Triton and mamba_ssm's pure-Triton scan (mamba_ssm/ops/triton/ and
mamba_ssm/utils/ of state-spaces/mamba; not the CUDA extensions: the scan
is Triton only). stagecraft never runs it (no test, no build step); its
output is committed under tests/bench/gpu/results/ (*-ssd-scan.json) and
docs/hardware.md ("Mamba-2 scan kernels") cites it.

  PYTHONPATH=<dir holding mamba_ssm/> python3 tests/bench/gpu/ssd_scan_probe.py OUT.json

What it times, per shape (batch, tokens, heads H of P, groups G, state N,
chunk 128, bf16 x/z/B/C/dt as Megatron-Core's MambaMixer passes them, D
per head, dt_bias, dt_softplus, z gating in the scan as
mamba_split_conv1d_scan_combined does without its RMSNorm):
  fwd_ms      mamba_chunk_scan_combined forward alone
  fwdbwd_ms   forward + backward (autograd, dout of ones-like random)
  bwd_ms      their difference
each the median over 5 timed rounds of 10 calls (CUDA events, after
warm-ups that include Triton's autotuning), and per kernel the device
time of one forward + backward from torch.profiler (kernel name, calls,
total us), so each of the forward's and backward's Triton kernels can be
set beside docs/hardware.md's FLOPs and bytes per kernel.
"""
import json
import statistics
import subprocess
import sys
import time

import torch

SHAPES = [
    # name, batch, tokens, heads, head_dim, groups, state
    ("nemotron-h-56b tp8", 1, 8192, 32, 64, 1, 256),
    ("nemotron-h-56b tp4", 1, 8192, 64, 64, 2, 256),
    ("nemotron-h-8b tp1", 1, 8192, 128, 64, 8, 128),
    ("mamba2-2.7b 4k", 1, 4096, 80, 64, 1, 128),
]


def smi(query):
    try:
        return subprocess.run(["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        return f"error: {e}"


def timed_ms(fn, calls=10, rounds=5):
    times = []
    for _ in range(rounds):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        for _ in range(calls):
            fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) / calls)
    return statistics.median(times), times


def main():
    out_path = sys.argv[1]
    from mamba_ssm.ops.triton.ssd_combined import mamba_chunk_scan_combined

    result = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "env": {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
                      "triton": __import__("triton").__version__,
                      "clocks": smi("clocks.sm,clocks.max.sm,clocks.mem,power.limit")},
              "rows": []}

    def save():
        with open(out_path, "w") as f:
            json.dump(result, f, indent=1)

    torch.manual_seed(0)
    dev, dt_ = "cuda", torch.bfloat16
    for name, b, L, H, P, G, N in SHAPES:
        t0 = time.time()
        x = (torch.randn(b, L, H, P, device=dev, dtype=dt_) * 0.5).requires_grad_()
        z = (torch.randn(b, L, H, P, device=dev, dtype=dt_) * 0.5).requires_grad_()
        dt = (torch.randn(b, L, H, device=dev, dtype=dt_) * 0.5 - 2).requires_grad_()
        A = (-torch.exp(torch.rand(H, device=dev, dtype=torch.float32) * 2)).requires_grad_()
        B = (torch.randn(b, L, G, N, device=dev, dtype=dt_) * 0.1).requires_grad_()
        C = (torch.randn(b, L, G, N, device=dev, dtype=dt_) * 0.1).requires_grad_()
        D = torch.ones(H, device=dev, dtype=torch.float32).requires_grad_()
        dt_bias = torch.zeros(H, device=dev, dtype=torch.float32).requires_grad_()
        dout = torch.randn(b, L, H, P, device=dev, dtype=dt_)

        def fwd():
            with torch.no_grad():
                mamba_chunk_scan_combined(x, dt, A, B, C, 128, D=D, z=z, dt_bias=dt_bias, dt_softplus=True)

        def fwdbwd():
            y = mamba_chunk_scan_combined(x, dt, A, B, C, 128, D=D, z=z, dt_bias=dt_bias, dt_softplus=True)
            y.backward(dout)

        for _ in range(3):  # autotune + warm
            fwd()
            fwdbwd()
        torch.cuda.synchronize()
        warm_s = time.time() - t0
        f_ms, f_all = timed_ms(fwd)
        fb_ms, fb_all = timed_ms(fwdbwd)

        kernels = {}
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            fwdbwd()
            torch.cuda.synchronize()
        for ev in prof.key_averages():
            if ev.device_type.name == "CUDA" or getattr(ev, "self_device_time_total", 0) > 0:
                us = getattr(ev, "self_device_time_total", None)
                if us is None:
                    us = ev.self_cuda_time_total
                if us > 0:
                    kernels[ev.key] = {"calls": ev.count, "us": us}
        row = {"case": name, "batch": b, "tokens": L, "heads": H, "head_dim": P, "groups": G,
               "state": N, "chunk": 128, "warmup_s": warm_s, "fwd_ms": f_ms, "fwdbwd_ms": fb_ms,
               "bwd_ms": fb_ms - f_ms, "fwd_rounds_ms": f_all, "fwdbwd_rounds_ms": fb_all,
               "kernels": kernels, "kernel_us_total": sum(k["us"] for k in kernels.values())}
        result["rows"].append(row)
        save()
        print(f"{name}: fwd {f_ms*1e3:.0f} us, fwd+bwd {fb_ms*1e3:.0f} us (warm-up {warm_s:.0f} s)", flush=True)
        del x, z, dt, A, B, C, D, dt_bias, dout
        torch.cuda.empty_cache()
    result["env"]["clocks_after"] = smi("clocks.sm,clocks.max.sm,clocks.mem,power.limit")
    save()


if __name__ == "__main__":
    main()
