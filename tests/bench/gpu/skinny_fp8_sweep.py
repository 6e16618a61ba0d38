#!/usr/bin/env python3
"""Measures, on one GPU, the kernel rates stagecraft's hardware profiles
assume (docs/hardware.md, "Measured on a GPU"; docs/kernel-measurements.md). Needs PyTorch with CUDA;
stagecraft itself never runs it (no test, no build step): its output is
committed under tests/bench/gpu/results/ (*-skinny-fp8.json) and the
derivations cite it. Complements kernel_sweep.py (training shapes, events).

  python3 tests/bench/gpu/skinny_fp8_sweep.py OUT.json [--quick]

Sections (each timed with CUDA graphs of many back-to-back kernels, so the
figures are device time without Python's launch cost; medians of 5
replays; weights rotated over enough copies to miss the 50-60 MB L2):
  env        GPU, driver, torch, clocks and power limit (nvidia-smi)
  copy       device-to-device copy of 1 GiB: HBM bytes read + written / s
  floor      an empty-ish kernel inside a graph, and launched from Python
  skinny     bf16 x @ W^T (vLLM's linear layers) for decode shapes of
             Llama-3-8B (tp1) and Llama-3-70B (tp4, tp8), M = 1 ... 2048
  fp8        training GEMMs (fprop, dgrad, wgrad) at M = 8192 tokens in
             bf16 and in fp8 e4m3 via torch._scaled_mm, tensorwise and
             rowwise scales, fast and split accumulation
  attention  causal fused attention, bf16, head dim 128, forward and
             forward+backward, through SDPA's cuDNN and flash backends
  decode     SDPA decode attention (one query per sequence, GQA) over a
             KV cache: KV bytes / s
"""
import json
import math
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DEV = "cuda"
QUICK = "--quick" in sys.argv


def median_graph_ms(fn, calls, reps=5):
    """Per-call device ms: `calls` invocations of fn(i) captured in one CUDA
    graph, replayed `reps` times (after a warm replay); the median."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for i in range(3):
            fn(i)
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for i in range(calls):
            fn(i)
    g.replay()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / calls)
    del g
    return statistics.median(times)


def smi(query):
    try:
        return subprocess.run(["nvidia-smi", "--query-gpu=" + query, "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:  # noqa: BLE001 - recorded, not fatal
        return "error: %s" % e


def section(results, name, fn):
    t0 = time.time()
    try:
        results[name] = fn()
    except Exception as e:  # noqa: BLE001 - one section failing keeps the others
        results[name] = {"error": repr(e)}
    results.setdefault("seconds", {})[name] = round(time.time() - t0, 2)
    print("section %s: %.1f s" % (name, time.time() - t0), flush=True)
    json.dump(results, open(sys.argv[1], "w"), indent=1)


def env():
    p = torch.cuda.get_device_properties(0)
    return {
        "gpu": p.name, "sms": p.multi_processor_count, "memory_bytes": p.total_memory,
        "l2_bytes": getattr(p, "L2_cache_size", None), "torch": torch.__version__,
        "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version(),
        "smi": smi("name,driver_version,power.limit,clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem"),
    }


def copy():
    n = 1 << 30
    a = torch.empty(n, dtype=torch.uint8, device=DEV)
    b = torch.empty_like(a)
    ms = median_graph_ms(lambda i: b.copy_(a), 10)
    x = torch.randn(n // 2, device=DEV, dtype=torch.bfloat16)
    ms_read = median_graph_ms(lambda i: x.sum(), 10)  # reads 1 GiB, writes one value
    return {"bytes": n, "ms": ms, "read_plus_write_bytes_per_s": 2 * n / (ms * 1e-3),
            "sum_read_bytes_per_s": n / (ms_read * 1e-3)}


def floor():
    x = torch.zeros(1, device=DEV)
    in_graph = median_graph_ms(lambda i: x.add_(1), 2000)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(2000):
        x.add_(1)
    torch.cuda.synchronize()
    eager = (time.perf_counter() - t0) / 2000 * 1e3
    return {"tiny_kernel_in_graph_us": in_graph * 1e3, "tiny_kernel_eager_python_us": eager * 1e3}


def weights(n, k, dtype, total=400 << 20, cap=32):
    per = n * k * torch.finfo(dtype).bits // 8 if dtype.is_floating_point else n * k
    copies = max(2, min(cap, math.ceil(total / per)))
    return [torch.randn(n, k, device=DEV, dtype=torch.bfloat16).to(dtype) for _ in range(copies)]


# Llama-3 dimensions: hidden, heads, KV heads, FFN (head dim 128).
MODELS = {"llama3-8b": (4096, 32, 8, 14336), "llama3-70b": (8192, 64, 8, 28672),
          "llama31-405b": (16384, 128, 8, 53248)}


def linears(model, tp, names):
    """(model, tp, name, N, K) of the layer's four linear GEMMs y = x @ W^T
    on one tp rank (W: N x K, the local shard): qkv, attention output,
    gate+up (fc1), down (fc2), named by `names`."""
    h, a, kv, f = MODELS[model]
    shapes = [((a + 2 * kv) * 128 // tp, h), (h, a * 128 // tp), (2 * f // tp, h), (h, f // tp)]
    return [(model, tp, name, n, k) for name, (n, k) in zip(names, shapes)]


DECODE = ("qkv", "o", "gate_up", "down")
DECODE_SHAPES = (linears("llama3-8b", 1, DECODE) + linears("llama3-70b", 4, DECODE) +
                 linears("llama3-70b", 8, DECODE) + [("llama3-8b", 1, "lm_head", 128256, 4096)])


def skinny():
    rows = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    if QUICK:
        rows = [1, 8, 64, 256, 1024]
    out = []
    for model, tp, name, n, k in DECODE_SHAPES:
        ws = weights(n, k, torch.bfloat16)
        for m in rows:
            x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
            calls = 8 * len(ws) if m <= 256 else 2 * len(ws)
            ms = median_graph_ms(lambda i: F.linear(x, ws[i % len(ws)]), calls)
            byts = 2 * (n * k + m * k + m * n)
            out.append({"model": model, "tp": tp, "gemm": name, "m": m, "n": n, "k": k, "us": ms * 1e3,
                        "bytes_per_s": byts / (ms * 1e-3), "flops_per_s": 2 * m * n * k / (ms * 1e-3)})
        del ws
        torch.cuda.empty_cache()
    return out


# The training linear layers (M = tokens), Megatron's names.
TRAIN = ("qkv", "proj", "fc1", "fc2")
TRAIN_SHAPES = [layer[i] for model, tp in (("llama3-8b", 1), ("llama3-70b", 4), ("llama31-405b", 8))
                for layer in [linears(model, tp, TRAIN)] for i in (0, 2, 3, 1)]  # qkv, fc1, fc2, proj


def fp8():
    m_tokens = 8192
    f8 = torch.float8_e4m3fn
    out = []
    shapes = TRAIN_SHAPES[:4] + TRAIN_SHAPES[8:10] if QUICK else TRAIN_SHAPES
    for model, tp, name, n, k in shapes:
        # fprop: (M,K) x (K,N); dgrad: (M,N) x (N,K); wgrad: (N,M) x (M,K).
        for phase, (mm, kk, nn) in (("fprop", (m_tokens, k, n)), ("dgrad", (m_tokens, n, k)),
                                     ("wgrad", (n, m_tokens, k))):
            a = torch.randn(mm, kk, device=DEV, dtype=torch.bfloat16)
            b = torch.randn(nn, kk, device=DEV, dtype=torch.bfloat16).t()  # (kk, nn), column-major
            flops = 2.0 * mm * nn * kk
            row = {"model": model, "tp": tp, "gemm": name, "phase": phase, "m": mm, "n": nn, "k": kk}
            ms = median_graph_ms(lambda i: torch.mm(a, b), 10)
            row["bf16_tflops"] = flops / (ms * 1e-3) / 1e12
            a8, b8 = a.to(f8), b.t().contiguous().to(f8).t()
            one = torch.ones((), device=DEV, dtype=torch.float32)
            sa, sb = torch.ones(mm, 1, device=DEV), torch.ones(1, nn, device=DEV)
            for label, scales in (("tensorwise", (one, one)), ("rowwise", (sa, sb))):
                for fast in (True, False):
                    key = "fp8_%s_%s_tflops" % (label, "fast" if fast else "split")
                    try:
                        fn = lambda i: torch._scaled_mm(a8, b8, scales[0], scales[1],  # noqa: E731
                                                        out_dtype=torch.bfloat16, use_fast_accum=fast)
                        ms = median_graph_ms(fn, 10)
                        row[key] = flops / (ms * 1e-3) / 1e12
                    except Exception as e:  # noqa: BLE001 - an unsupported variant is recorded
                        row[key] = "error: %s" % str(e)[:200]
            out.append(row)
            del a, b, a8, b8
        torch.cuda.empty_cache()
    return out


def attention():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    out = []
    cases = [(1, 32, 8192, 128), (1, 32, 4096, 128), (2, 16, 4096, 128), (1, 16, 8192, 128), (1, 8, 8192, 128),
             (1, 32, 2048, 128), (1, 32, 1024, 128), (1, 32, 16384, 128)]
    if QUICK:
        cases = cases[:2]
    for backend in ("CUDNN_ATTENTION", "FLASH_ATTENTION"):
        be = getattr(SDPBackend, backend)
        for b, h, s, d in cases:
            q, k, v = (torch.randn(b, h, s, d, device=DEV, dtype=torch.bfloat16, requires_grad=True)
                       for _ in range(3))
            causal_flops = 4.0 * b * h * s * s * d / 2  # QK^T and AV, half the square
            row = {"backend": backend, "b": b, "heads": h, "seq": s, "head_dim": d}
            try:
                with sdpa_kernel([be]):
                    fwd = lambda i: F.scaled_dot_product_attention(q, k, v, is_causal=True)  # noqa: E731
                    with torch.no_grad():
                        ms = median_graph_ms(fwd, 5)
                    row["fwd_tflops"] = causal_flops / (ms * 1e-3) / 1e12
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    g = torch.randn_like(o)
                    torch.cuda.synchronize()
                    times = []
                    for _ in range(5):
                        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                        torch.cuda.synchronize()
                        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        e0.record()
                        torch.autograd.grad(o, (q, k, v), g)
                        e1.record()
                        e1.synchronize()
                        times.append(e0.elapsed_time(e1))
                    row["bwd_tflops"] = 2.5 * causal_flops / (statistics.median(times) * 1e-3) / 1e12
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e)[:200]
            out.append(row)
            del q, k, v
    return out


def decode():
    from torch.nn.attention import SDPBackend, sdpa_kernel
    fused = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
    out = []
    for batch, ctx in ((1, 4096), (8, 4096), (32, 2048), (64, 4096), (128, 1024)):
        h, hkv, d = 32, 8, 128
        q = torch.randn(batch, h, 1, d, device=DEV, dtype=torch.bfloat16)
        k = torch.randn(batch, hkv, ctx, d, device=DEV, dtype=torch.bfloat16)
        v = torch.randn_like(k)
        kv_bytes = 2 * k.numel() * 2
        row = {"batch": batch, "context": ctx, "heads": h, "kv_heads": hkv, "head_dim": d, "kv_bytes": kv_bytes}
        try:
            with sdpa_kernel(fused):  # never the unfused math fallback
                ms = median_graph_ms(lambda i: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), 20)
            row["us"] = ms * 1e3
            row["kv_bytes_per_s"] = kv_bytes / (ms * 1e-3)
        except Exception as e:  # noqa: BLE001
            row["error"] = str(e)[:200]
        out.append(row)
    return out


def main():
    torch.manual_seed(0)
    results = {"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, fn in (("env", env), ("copy", copy), ("floor", floor), ("skinny", skinny), ("fp8", fp8),
                     ("attention", attention), ("decode", decode)):
        section(results, name, fn)
    results["smi_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    json.dump(results, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
