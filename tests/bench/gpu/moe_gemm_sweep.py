#!/usr/bin/env python3
"""Measures, on one GPU, the routed experts' GEMMs of the mixture-of-experts
rows in docs/fidelity.md ("Mixture of experts"), against one dense GEMM of
the same FLOPs. Needs PyTorch with CUDA; stagecraft never runs it (no test,
no build step): its output is committed under tests/bench/gpu/results/
(*-moe-gemm.json) and docs/kernel-measurements.md cites it.

  python3 tests/bench/gpu/moe_gemm_sweep.py OUT.json [--quick]

A routed expert layer on one expert-parallel rank multiplies each of its E
local experts' weights by the M tokens routed to that expert. Megatron-Core
(`moe_grouped_gemm`) runs the E products as one grouped GEMM (Transformer
Engine's GroupedLinear: cuBLAS GEMMs on several streams; CUTLASS grouped
kernels in other builds). Timed here, for each layer (fc1: hidden -> 2 x
ffn, gated; fc2: ffn -> hidden) and pass (fprop, dgrad, wgrad):

  dense     one GEMM of E*M rows (the same FLOPs, one launch)
  loop      E GEMMs back to back on one stream
  streams4  E GEMMs over 4 streams (TE's multi-stream default)
  grouped   torch._grouped_mm (one CUTLASS grouped kernel), bf16
  fp8_grouped  torch._scaled_grouped_mm, e4m3 with row-wise scales
  fp8_loop  E torch._scaled_mm with tensor-wise scales, one stream

Every figure is device time from CUDA graphs of back-to-back calls (median
of 5 replays), in TFLOP/s of the layer's 2 x E x M x N x K FLOPs.
A last section times MLA-shaped attention (DeepSeek-V3: q/k head dim 192,
v 128) through SDPA's backends, forward and backward.
"""
import json
import math
import statistics
import sys
import time

import torch
import torch.nn.functional as F

# The same CUDA-graph timing and nvidia-smi query as the decode/FP8 sweep.
from skinny_fp8_sweep import median_graph_ms, smi

DEV = "cuda"
QUICK = "--quick" in sys.argv
F8 = torch.float8_e4m3fn


def env():
    p = torch.cuda.get_device_properties(0)
    return {"gpu": p.name, "sms": p.multi_processor_count, "torch": torch.__version__,
            "cuda": torch.version.cuda,
            "smi": smi("name,driver_version,power.limit,clocks.max.sm,clocks.max.mem")}


# (row, hidden, expert ffn, local experts E, tokens per expert M): the
# check rows' expert layers on one ep rank with balanced routing
# (tokens per expert = ep x local tokens x top-k / experts).
LAYERS = [
    ("gpt-oss-120b ep8 b1", 2880, 2880, 16, 1024),
    ("gpt-oss-120b ep8 b4", 2880, 2880, 16, 4096),
    ("qwen3-30b-a3b ep8 b1", 2048, 768, 16, 2048),
    ("qwen3-30b-a3b ep8 b2", 2048, 768, 16, 4096),
    ("qwen3-30b-a3b ep16", 2048, 768, 8, 4096),
    ("qwen3-235b-a22b ep32", 4096, 1536, 4, 4096),
    ("deepseek-v3 ep64", 7168, 2048, 4, 4096),
    ("qwen3-30b-a3b ep8 m512", 2048, 768, 16, 512),
    ("qwen3-30b-a3b ep8 m8192", 2048, 768, 16, 8192),
]
if QUICK:
    LAYERS = LAYERS[:3]


def calls_for(flops):
    return int(min(40, max(2, math.ceil(0.02 / (flops / 4e14)))))


def timed(row, key, flops, fn, calls):
    try:
        ms = median_graph_ms(fn, calls)
        row[key] = round(flops / (ms * 1e-3) / 1e12, 2)
    except Exception as e:  # noqa: BLE001 - an unsupported variant is recorded
        row[key] = "error: %s" % str(e).splitlines()[0][:200] if str(e) else "error: %r" % e
        torch.cuda.synchronize()


def experts():
    out = []
    for name, h, f, E, M in LAYERS:
        for layer, (K, N) in (("fc1", (h, 2 * f)), ("fc2", (f, h))):
            for phase in ("fprop", "dgrad", "wgrad"):
                # Each pass as rows x cols x inner per expert.
                if phase == "fprop":
                    m, n, k = M, N, K          # X(M,K) W^T(K,N)
                elif phase == "dgrad":
                    m, n, k = M, K, N          # dY(M,N) W(N,K)
                else:
                    m, n, k = N, K, M          # dY^T(N,M) X(M,K)
                flops = 2.0 * E * m * n * k
                calls = calls_for(flops)
                row = {"layer": name, "gemm": layer, "phase": phase, "experts": E, "tokens_per_expert": M,
                       "m": m, "n": n, "k": k}
                # dense: one GEMM with the E products' FLOPs (rows stacked; for
                # wgrad the inner dimension stacked: E*M tokens reduced).
                if phase == "wgrad":
                    a = torch.randn(m, E * k, device=DEV, dtype=torch.bfloat16)
                    b = torch.randn(n, E * k, device=DEV, dtype=torch.bfloat16).t()
                    # same FLOPs as E products of m x n x k
                else:
                    a = torch.randn(E * m, k, device=DEV, dtype=torch.bfloat16)
                    b = torch.randn(n, k, device=DEV, dtype=torch.bfloat16).t()
                timed(row, "dense_tflops", flops, lambda i: torch.mm(a, b), calls)
                del a, b
                xs = [torch.randn(m, k, device=DEV, dtype=torch.bfloat16) for _ in range(E)]
                ws = [torch.randn(n, k, device=DEV, dtype=torch.bfloat16).t() for _ in range(E)]

                def loop(i):
                    for e in range(E):
                        torch.mm(xs[e], ws[e])
                timed(row, "loop_tflops", flops, loop, calls)

                streams = [torch.cuda.Stream() for _ in range(4)]

                def multi(i):
                    cur = torch.cuda.current_stream()
                    for st in streams:
                        st.wait_stream(cur)
                    for e in range(E):
                        with torch.cuda.stream(streams[e % 4]):
                            torch.mm(xs[e], ws[e])
                    for st in streams:
                        cur.wait_stream(st)
                timed(row, "streams4_tflops", flops, multi, calls)

                # grouped: rows of all experts stacked (fprop/dgrad: 2D x 3D),
                # or the reduced dimension stacked (wgrad: 2D x 2D -> 3D).
                offs = torch.arange(1, E + 1, device=DEV, dtype=torch.int32)
                if phase == "wgrad":
                    A = torch.randn(m, E * k, device=DEV, dtype=torch.bfloat16)
                    B = torch.randn(n, E * k, device=DEV, dtype=torch.bfloat16).t()
                    offs = offs * k
                else:
                    A = torch.randn(E * m, k, device=DEV, dtype=torch.bfloat16)
                    B = torch.randn(E, n, k, device=DEV, dtype=torch.bfloat16).transpose(-2, -1)
                    offs = offs * m
                if hasattr(torch, "_grouped_mm"):
                    timed(row, "grouped_tflops", flops, lambda i: torch._grouped_mm(A, B, offs=offs), calls)
                else:
                    row["grouped_tflops"] = "error: no torch._grouped_mm"
                if hasattr(torch, "_scaled_grouped_mm"):
                    try:
                        A8 = A.to(F8)
                        B8 = B.transpose(-2, -1).contiguous().to(F8).transpose(-2, -1)
                        if phase == "wgrad":
                            sa = torch.ones(m * E, device=DEV, dtype=torch.float32)
                            sb = torch.ones(n * E, device=DEV, dtype=torch.float32)
                        else:
                            sa = torch.ones(E * m, device=DEV, dtype=torch.float32)
                            sb = torch.ones(E, n, device=DEV, dtype=torch.float32)
                        timed(row, "fp8_grouped_tflops", flops,
                              lambda i: torch._scaled_grouped_mm(A8, B8, sa, sb, offs=offs, out_dtype=torch.bfloat16,
                                                                 use_fast_accum=True), calls)
                        del A8, B8
                    except Exception as e:  # noqa: BLE001
                        row["fp8_grouped_tflops"] = "error: %s" % str(e)[:200]
                try:
                    x8 = [x.to(F8) for x in xs]
                    w8 = [w.t().contiguous().to(F8).t() for w in ws]
                    one = torch.ones((), device=DEV, dtype=torch.float32)

                    def loop8(i):
                        for e in range(E):
                            torch._scaled_mm(x8[e], w8[e], one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
                    timed(row, "fp8_loop_tflops", flops, loop8, calls)
                    # one dense FP8 GEMM of the same shape as one expert's, for the ratio
                    timed(row, "fp8_one_expert_tflops", flops / E,
                          lambda i: torch._scaled_mm(x8[0], w8[0], one, one, out_dtype=torch.bfloat16,
                                                     use_fast_accum=True), calls * E)
                    del x8, w8
                except Exception as e:  # noqa: BLE001
                    row["fp8_loop_tflops"] = "error: %s" % str(e)[:200]
                timed(row, "one_expert_tflops", flops / E, lambda i: torch.mm(xs[0], ws[0]), calls * E)
                del xs, ws, A, B
                torch.cuda.empty_cache()
                out.append(row)
                print(json.dumps(row), flush=True)
    return out


def mla_attention():
    out = []
    for s, heads in ((4096, 64), (4096, 128), (8192, 64)):
        q = torch.randn(1, heads, s, 192, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        k = torch.randn(1, heads, s, 192, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        v = torch.randn(1, heads, s, 128, device=DEV, dtype=torch.bfloat16, requires_grad=True)
        flops_f = 2.0 * heads * s * s * (192 + 128) / 2  # causal
        for backend in ("cudnn", "flash", "efficient"):
            be = {"cudnn": torch.nn.attention.SDPBackend.CUDNN_ATTENTION,
                  "flash": torch.nn.attention.SDPBackend.FLASH_ATTENTION,
                  "efficient": torch.nn.attention.SDPBackend.EFFICIENT_ATTENTION}[backend]
            row = {"seq": s, "heads": heads, "dqk": 192, "dv": 128, "causal": True, "backend": backend}
            try:
                with torch.nn.attention.sdpa_kernel([be]):
                    o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    go = torch.randn_like(o)
                    torch.cuda.synchronize()
                    st, en = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    ts, tb = [], []
                    for _ in range(7):
                        st.record(); o = F.scaled_dot_product_attention(q, k, v, is_causal=True); en.record()
                        en.synchronize(); ts.append(st.elapsed_time(en))
                        st.record(); o.backward(go); en.record(); en.synchronize(); tb.append(st.elapsed_time(en))
                        q.grad = k.grad = v.grad = None
                    row["fwd_tflops"] = round(flops_f / (statistics.median(ts) * 1e-3) / 1e12, 1)
                    row["bwd_tflops"] = round(2.5 * flops_f / (statistics.median(tb) * 1e-3) / 1e12, 1)
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e).splitlines()[0][:200] if str(e) else repr(e)
            out.append(row)
            print(json.dumps(row), flush=True)
    return out


def main():
    torch.manual_seed(0)
    res = {"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, fn in (("env", env), ("experts", experts), ("mla_attention", mla_attention)):
        t0 = time.time()
        try:
            res[name] = fn()
        except Exception as e:  # noqa: BLE001
            res[name] = {"error": repr(e)}
        res.setdefault("seconds", {})[name] = round(time.time() - t0, 1)
        json.dump(res, open(sys.argv[1], "w"), indent=1)
    res["smi_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
