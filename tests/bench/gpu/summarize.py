#!/usr/bin/env python3
"""Prints docs/kernel-measurements.md's tables from kernel_sweep.py results.

Usage: python3 tests/bench/gpu/summarize.py tests/bench/gpu/results/h100-sxm-2026-11-26.json [h200.json]
"""
import json, sys

BF16_PEAK = 989.5  # dense bf16 TFLOP/s of an H100/H200 SXM (datasheet)


def summarize(path):
    r = json.load(open(path))
    m = r["meta"]
    print(f"### {m['device']} ({path.split('/')[-1]})\n")
    print(f"PyTorch {m['torch']}, CUDA {m['cuda']}, cuDNN {m['cudnn']}, {m['sms']} SMs, measured {m['date']}. "
          f"Ceilings: 8192³ bf16 GEMM {m['gemm_8192_bf16_tflops']:.0f} TFLOP/s "
          f"({m['gemm_8192_bf16_tflops'] / BF16_PEAK:.2f} of {BF16_PEAK}); device copy "
          f"{m['copy_gbs_read_plus_write']:.0f} GB/s (read + write).\n")
    print("Attention (SDPA; fwd / bwd TFLOP/s; bwd counted as 2.5× the forward FLOPs; causal counts half the square):\n")
    print("| backend | head dim | q len | k len | causal | fwd TFLOP/s | bwd TFLOP/s | fwd eff. | bwd eff. |")
    print("|---|---|---|---|---|---|---|---|---|")
    for a in r["attention"]:
        if "error" in a:
            continue
        print(f"| {a['backend']} | {a['d']} | {a['sq']} | {a['sk']} | {'yes' if a['causal'] else 'no'} | "
              f"{a['fwd_tflops']:.0f} | {a['bwd_tflops']:.0f} | {a['fwd_tflops'] / BF16_PEAK:.3f} | {a['bwd_tflops'] / BF16_PEAK:.3f} |")
    print("\nDecode attention (one query token, 64 query heads over 8 KV heads of 128, bf16 cache):\n")
    print("| batch | context | µs | KV GB/s |")
    print("|---|---|---|---|")
    for d in r["decode"]:
        if "error" in d:
            continue
        print(f"| {d['batch']} | {d['context']} | {d['seconds'] * 1e6:.1f} | {d['kv_gbs']:.0f} |")
    print("\nLinear-layer GEMMs, bf16 and fp8 (per-tensor scaled e4m3, `torch._scaled_mm`), whole layer "
          "(qkv, proj, fc1, fc2; fprop + dgrad + wgrad for bf16; fp8 timed for fprop and wgrad):\n")
    print("| model | tp | tokens | bf16 TFLOP/s | bf16 eff. | fp8 fprop+wgrad TFLOP/s | fp8 / bf16 speed-up (fprop+wgrad) |")
    print("|---|---|---|---|---|---|---|")
    models = sorted({g["model"] for g in r["gemm_bf16"]})
    for model in models:
        for tp in (1, 2, 4, 8):
            for tokens in (2048, 4096, 8192, 16384):
                b = [g for g in r["gemm_bf16"] if g["model"] == model and g["tp"] == tp and g["tokens"] == tokens]
                f = [g for g in r["gemm_fp8"] if g.get("model") == model and g.get("tp") == tp and g.get("tokens") == tokens]
                if not b or not f:
                    continue
                fl = sum(2 * g["m"] * g["n"] * g["k"] for g in b)
                t = sum(g["seconds"] for g in b)
                bf = [g for g in b if g["pass"] != "dgrad"]
                fl2 = sum(2 * g["m"] * g["n"] * g["k"] for g in f)
                t8 = sum(g["seconds"] for g in f)
                tb = sum(g["seconds"] for g in bf)
                print(f"| {model} | {tp} | {tokens} | {fl / t / 1e12:.0f} | {fl / t / 1e12 / BF16_PEAK:.3f} | "
                      f"{fl2 / t8 / 1e12:.0f} | {tb / t8:.2f} |")
    print("\nfp8 cast (bf16 → e4m3, one read + one write) and amax (`abs().amax()`, eager PyTorch: two kernels):\n")
    print("| tensor | cast µs | cast GB/s | amax µs | amax GB/s |")
    print("|---|---|---|---|---|")
    for c in r["cast_fp8"]:
        print(f"| {c['rows']}×{c['cols']} | {c['cast_seconds'] * 1e6:.1f} | {c['cast_gbs']:.0f} | "
              f"{c['amax_seconds'] * 1e6:.1f} | {c['amax_gbs']:.0f} |")
    print()


for p in sys.argv[1:]:
    summarize(p)
