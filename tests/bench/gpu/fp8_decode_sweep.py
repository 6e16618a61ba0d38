#!/usr/bin/env python3
"""Measures, on one GPU, what the FP8 serving rows of docs/inference.md run
on and no earlier sitting measured: decode GEMMs (1-2,048 rows) with FP8
weights and activations, decode attention at the 70B model's head counts
and the batches those rows reach, and whole decode steps of Llama-3.1-70B
layers at tp 1 with FP8 linear layers (docs/kernel-measurements.md, "FP8
decode on the H200"). Needs PyTorch with CUDA; stagecraft never runs it (no
test, no build step): its output is committed under
tests/bench/gpu/results/ (*-fp8-decode.json) and the docs cite it.

  python3 tests/bench/gpu/fp8_decode_sweep.py OUT.json [SECTION ...]

(SECTION: run only those, env always; the stored file of 2026-11-28 is one
run of all but `prefill` and one of `prefill` alone, merged.)

Sections (timing as skinny_fp8_sweep.py: CUDA graphs of many back-to-back
calls, medians of 5 replays, weights rotated over copies to miss the L2):
  env, copy     as skinny_fp8_sweep.py
  gemm          x @ W^T for decode shapes of Llama-3-8B (tp 1) and
                Llama-3-70B (tp 1, 2, 4, 8): bf16 (F.linear) and FP8 e4m3
                (torch._scaled_mm, per-tensor scales, bf16 out; fast
                accumulation, and split accumulation on the tp-1 70B shapes)
  cast          bf16 -> e4m3 cast of a decode batch's activations
  decode_attn   SDPA decode attention (one query per sequence, GQA, bf16
                cache) at Llama-3-70B tp 1 (64 heads, 8 KV heads) and 8B
  step          ten Llama-3.1-70B layers at tp 1 (one CUDA graph): FP8
                linears (activation cast + _scaled_mm), bf16 KV cache, and
                the same without the attention kernel, and with bf16 linears
  prefill       ten layers of one prompt's prefill (128 to 8,192 tokens,
                causal attention, the cache written): Llama-3.1-70B tp 1
                and Llama-3-8B, FP8 and bf16 linears
"""
import json
import os
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from skinny_fp8_sweep import copy, env, median_graph_ms, section, smi, weights  # noqa: E402

DEV = "cuda"
F8 = torch.float8_e4m3fn
FUSED = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]
ROWS = [1, 8, 16, 32, 48, 64, 96, 128, 160, 176, 192, 224, 256, 384, 512, 1024, 2048]

# hidden, heads, KV heads, FFN (head dim 128), vocab
MODELS = {"llama3-8b": (4096, 32, 8, 14336, 128256), "llama3-70b": (8192, 64, 8, 28672, 128256)}


def linears(model, tp):
    h, a, kv, f, _ = MODELS[model]
    shapes = [("qkv", (a + 2 * kv) * 128 // tp, h), ("o", h, a * 128 // tp), ("gate_up", 2 * f // tp, h),
              ("down", h, f // tp)]
    return [(model, tp, name, n, k) for name, n, k in shapes]


SHAPES = (linears("llama3-8b", 1) + [("llama3-8b", 1, "lm_head", 128256, 4096)] + linears("llama3-70b", 1) +
          [("llama3-70b", 1, "lm_head", 128256, 8192)] + linears("llama3-70b", 2) + linears("llama3-70b", 4) +
          linears("llama3-70b", 8))


def scaled(x8, w8t, one, fast):
    return torch._scaled_mm(x8, w8t, one, one, out_dtype=torch.bfloat16, use_fast_accum=fast)


def gemm():
    one = torch.ones((), device=DEV, dtype=torch.float32)
    out = []
    for model, tp, name, n, k in SHAPES:
        accs = (True, False) if (model, tp) == ("llama3-70b", 1) else (True,)
        for dtype in (torch.bfloat16, F8):
            ws = weights(n, k, dtype)
            wts = [w.t() for w in ws]  # (K, N) column-major, as _scaled_mm takes it
            for m in ROWS:
                x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
                calls = 8 * len(ws) if m <= 256 else 2 * len(ws)
                variants = [("bf16", lambda i: F.linear(x, ws[i % len(ws)]))] if dtype == torch.bfloat16 else [
                    ("fp8_fast" if fast else "fp8_split",
                     (lambda fast_: lambda i: scaled(x8, wts[i % len(wts)], one, fast_))(fast)) for fast in accs]
                x8 = x.to(F8)
                for label, fn in variants:
                    row = {"model": model, "tp": tp, "gemm": name, "m": m, "n": n, "k": k, "kind": label}
                    try:
                        ms = median_graph_ms(fn, calls)
                        wbytes = n * k * (1 if dtype == F8 else 2)
                        row.update(us=ms * 1e3, weight_bytes_per_s=wbytes / (ms * 1e-3),
                                   flops_per_s=2.0 * m * n * k / (ms * 1e-3))
                    except Exception as e:  # noqa: BLE001 - an unsupported shape is recorded
                        row["error"] = str(e)[:200]
                    out.append(row)
            print("gemm %s tp%d %s %s done" % (model, tp, name, dtype), flush=True)
            del ws, wts
            torch.cuda.empty_cache()
    return out


def cast():
    out = []
    for m, k in ((64, 8192), (176, 8192), (176, 28672), (1024, 8192), (2048, 28672)):
        x = torch.randn(m, k, device=DEV, dtype=torch.bfloat16)
        ms = median_graph_ms(lambda i: x.to(F8), 50)
        out.append({"m": m, "k": k, "us": ms * 1e3})
    return out


def decode_attn():
    out = []
    cases = [(1, 1500), (8, 2048), (32, 2048), (64, 2048), (104, 2176), (128, 1024), (174, 1500), (192, 2048),
             (256, 1024), (16, 8192)]
    for heads, label in ((64, "llama3-70b tp1"), (32, "llama3-8b tp1")):
        for batch, ctx in cases:
            hkv, d = 8, 128
            row = {"model": label, "batch": batch, "context": ctx, "heads": heads, "kv_heads": hkv, "head_dim": d}
            try:
                q = torch.randn(batch, heads, 1, d, device=DEV, dtype=torch.bfloat16)
                kc = torch.randn(batch, hkv, ctx, d, device=DEV, dtype=torch.bfloat16)
                vc = torch.randn_like(kc)
                kv_bytes = 2 * kc.numel() * 2
                with sdpa_kernel(FUSED):
                    ms = median_graph_ms(lambda i: F.scaled_dot_product_attention(q, kc, vc, enable_gqa=True), 20)
                row.update(kv_bytes=kv_bytes, us=ms * 1e3, kv_bytes_per_s=kv_bytes / (ms * 1e-3))
                del q, kc, vc
            except Exception as e:  # noqa: BLE001
                row["error"] = str(e)[:200]
            out.append(row)
            torch.cuda.empty_cache()
    return out


def step():
    h, a, kv, f, _ = MODELS["llama3-70b"]
    d, layers = 128, 10
    one = torch.ones((), device=DEV, dtype=torch.float32)
    names = [("qkv", (a + 2 * kv) * d, h), ("o", h, a * d), ("gu", 2 * f, h), ("down", h, f)]
    out = []
    for wdt in ("fp8", "bf16"):
        L = []
        for _ in range(layers):
            p = {}
            for nm, n, k in names:
                w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16) * 0.02
                p[nm] = w.to(F8).t() if wdt == "fp8" else w
            p["n1"] = torch.ones(h, device=DEV, dtype=torch.bfloat16)
            p["n2"] = torch.ones(h, device=DEV, dtype=torch.bfloat16)
            L.append(p)

        def lin(x, w):
            if wdt == "fp8":  # the activation cast an FP8 engine fuses into the kernel before; here its own
                return torch._scaled_mm(x.to(F8), w, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
            return F.linear(x, w)

        for batch, ctx in ((1, 1500), (64, 2048), (104, 2176), (174, 1500), (192, 1024)):
            for attn in (True, False):
                row = {"weights": wdt, "layers": layers, "batch": batch, "context": ctx, "attention": attn}
                try:
                    x = torch.randn(batch, h, device=DEV, dtype=torch.bfloat16)
                    kc = [torch.randn(batch, kv, ctx, d, device=DEV, dtype=torch.bfloat16) for _ in range(layers)]
                    vc = [torch.randn_like(t) for t in kc]
                    pos = torch.tensor([ctx - 1], device=DEV)

                    def run(_i, x=x, kc=kc, vc=vc, pos=pos, batch=batch, attn=attn):
                        hs = x
                        for i, p in enumerate(L):
                            y = F.rms_norm(hs, (h,), p["n1"])
                            q, k, v = lin(y, p["qkv"]).split([a * d, kv * d, kv * d], dim=-1)
                            q = (q * 1.0001).view(batch, a, 1, d)  # stands in for the rotary embedding
                            k = (k * 1.0001).view(batch, kv, 1, d)
                            kc[i].index_copy_(2, pos, k)
                            vc[i].index_copy_(2, pos, v.view(batch, kv, 1, d))
                            if attn:
                                with sdpa_kernel(FUSED):
                                    o = F.scaled_dot_product_attention(q, kc[i], vc[i], enable_gqa=True)
                            else:
                                o = q
                            hs = hs + lin(o.reshape(batch, a * d), p["o"])
                            y = F.rms_norm(hs, (h,), p["n2"])
                            g, u = lin(y, p["gu"]).chunk(2, dim=-1)
                            hs = hs + lin(F.silu(g) * u, p["down"])
                        return hs

                    ms = median_graph_ms(run, 1)
                    row.update(step_us=ms * 1e3, per_layer_us=ms * 1e3 / layers)
                    del kc, vc
                except Exception as e:  # noqa: BLE001
                    row["error"] = str(e)[:200]
                print(row, flush=True)
                out.append(row)
                torch.cuda.empty_cache()
        del L
        torch.cuda.empty_cache()
    return out


GQA_CAUSAL = [True]


def prefill():
    """Ten layers of one prompt's prefill (one sequence of `tokens`, causal
    attention over itself, K and V written into a cache), one CUDA graph:
    Llama-3.1-70B at tp 1 (FP8 or bf16 linears, as `step`) and Llama-3-8B
    (bf16 and FP8)."""
    out = []
    one = torch.ones((), device=DEV, dtype=torch.float32)
    d, layers = 128, 10
    try:
        t = torch.randn(1, 8, 256, d, device=DEV, dtype=torch.bfloat16)
        with sdpa_kernel(FUSED):
            F.scaled_dot_product_attention(torch.randn(1, 64, 256, d, device=DEV, dtype=torch.bfloat16), t, t,
                                           is_causal=True, enable_gqa=True)
    except Exception as e:  # noqa: BLE001
        GQA_CAUSAL[0] = False
        out.append({"note": "causal GQA refused by the fused backends, K/V heads repeated: %s" % str(e)[:200]})
    for model in ("llama3-70b", "llama3-8b"):
        h, a, kv, f, _ = MODELS[model]
        names = [("qkv", (a + 2 * kv) * d, h), ("o", h, a * d), ("gu", 2 * f, h), ("down", h, f)]
        for wdt in ("fp8", "bf16"):
            L = []
            for _ in range(layers):
                p = {}
                for nm, n, k in names:
                    w = torch.randn(n, k, device=DEV, dtype=torch.bfloat16) * 0.02
                    p[nm] = w.to(F8).t() if wdt == "fp8" else w
                p["n1"] = torch.ones(h, device=DEV, dtype=torch.bfloat16)
                p["n2"] = torch.ones(h, device=DEV, dtype=torch.bfloat16)
                L.append(p)

            def lin(x, w, wdt=wdt):
                if wdt == "fp8":
                    return torch._scaled_mm(x.to(F8), w, one, one, out_dtype=torch.bfloat16, use_fast_accum=True)
                return F.linear(x, w)

            for tokens in (128, 512, 2048, 8192):
                row = {"model": model, "weights": wdt, "layers": layers, "tokens": tokens}
                try:
                    x = torch.randn(tokens, h, device=DEV, dtype=torch.bfloat16)
                    kc = [torch.zeros(1, kv, tokens, d, device=DEV, dtype=torch.bfloat16) for _ in range(layers)]
                    vc = [torch.zeros_like(t) for t in kc]

                    def run(_i, x=x, kc=kc, vc=vc, tokens=tokens, h=h, a=a, kv=kv, L=L, lin=lin):
                        hs = x
                        for i, p in enumerate(L):
                            y = F.rms_norm(hs, (h,), p["n1"])
                            q, k, v = lin(y, p["qkv"]).split([a * d, kv * d, kv * d], dim=-1)
                            q = (q * 1.0001).view(tokens, a, d).transpose(0, 1).unsqueeze(0)
                            k = (k * 1.0001).view(tokens, kv, d).transpose(0, 1).unsqueeze(0)
                            v = v.view(tokens, kv, d).transpose(0, 1).unsqueeze(0)
                            kc[i].copy_(k)
                            vc[i].copy_(v)
                            with sdpa_kernel(FUSED):
                                if GQA_CAUSAL[0]:
                                    o = F.scaled_dot_product_attention(q, kc[i], vc[i], is_causal=True,
                                                                       enable_gqa=True)
                                else:  # no fused backend takes GQA with a causal mask: heads repeated
                                    o = F.scaled_dot_product_attention(q, kc[i].repeat_interleave(a // kv, 1),
                                                                       vc[i].repeat_interleave(a // kv, 1),
                                                                       is_causal=True)
                            hs = hs + lin(o.squeeze(0).transpose(0, 1).reshape(tokens, a * d), p["o"])
                            y = F.rms_norm(hs, (h,), p["n2"])
                            g, u = lin(y, p["gu"]).chunk(2, dim=-1)
                            hs = hs + lin(F.silu(g) * u, p["down"])
                        return hs

                    ms = median_graph_ms(run, 1)
                    row.update(step_us=ms * 1e3, per_layer_us=ms * 1e3 / layers)
                    del kc, vc
                except Exception as e:  # noqa: BLE001
                    row["error"] = str(e)[:200]
                print(row, flush=True)
                out.append(row)
                torch.cuda.empty_cache()
            del L
            torch.cuda.empty_cache()
    return out


def main():
    torch.manual_seed(0)
    results = {"argv": sys.argv[1:], "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    only = [a for a in sys.argv[2:] if not a.startswith("-")]
    for name, fn in (("env", env), ("copy", copy), ("cast", cast), ("decode_attn", decode_attn), ("step", step),
                     ("gemm", gemm), ("prefill", prefill)):
        if only and name not in only and name != "env":
            continue
        section(results, name, fn)
    results["smi_after"] = smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
    json.dump(results, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
