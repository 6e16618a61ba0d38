#!/usr/bin/env python3
"""Prints docs/kernel-measurements.md's tables from kernel_sweep.py results
and from skinny_fp8_sweep.py results (files named *-skinny-fp8.json),
including the derivation of the h100/h200 profiles' measured constants
(docs/hardware.md, "Measured on a GPU").

Usage: python3 tests/bench/gpu/summarize.py tests/bench/gpu/results/h100-sxm-2026-11-26.json [more.json ...]
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


HBM_PEAK = {"NVIDIA H100 80GB HBM3": 3.35e12, "NVIDIA H200": 4.8e12}  # datasheets, bytes/s


def line_fit(points):
    """Least squares t = t0 + x / B over (x, t) points: (t0, B)."""
    n = len(points)
    sx = sum(x for x, _ in points)
    sy = sum(t for _, t in points)
    sxx = sum(x * x for x, _ in points)
    sxy = sum(x * t for x, t in points)
    slope = (n * sxy - sx * sy) / (n * sxx - sx * sx)
    return (sy - slope * sx) / n, 1 / slope


def summarize_skinny_fp8(path):
    r = json.load(open(path))
    e = r["env"]
    peak = HBM_PEAK[e["gpu"]]
    print(f"### {e['gpu']}: decode GEMMs and FP8 accumulation ({path.split('/')[-1]})\n")
    print(f"PyTorch {e['torch']}, CUDA {e['cuda']}, {e['sms']} SMs, measured {r['started'][:10]}; nvidia-smi: "
          f"{e['smi']}. " + (f"A 1 GiB read (`x.sum()`) {r['copy']['sum_read_bytes_per_s'] / 1e12:.2f} TB/s; "
                             if "sum_read_bytes_per_s" in r["copy"] else "(no read test: an earlier script) ") +
          f"a tiny kernel in a CUDA graph {r['floor']['tiny_kernel_in_graph_us']:.2f} µs, launched from "
          f"Python {r['floor']['tiny_kernel_eager_python_us']:.1f} µs.\n")
    rows = sorted({g["m"] for g in r["skinny"]})
    print("Decode GEMMs `F.linear(x, W)` (bf16), bytes streamed per second (weight + activations + output), TB/s:\n")
    print("| model | tp | GEMM | N × K | " + " | ".join(f"{m} rows" for m in rows) + " |")
    print("|---|---|---|---|" + "---|" * len(rows))
    shapes = []
    for g in r["skinny"]:
        key = (g["model"], g["tp"], g["gemm"], g["n"], g["k"])
        if key not in shapes:
            shapes.append(key)
    for key in shapes:
        cells = {g["m"]: g["bytes_per_s"] for g in r["skinny"] if (g["model"], g["tp"], g["gemm"], g["n"], g["k"]) == key}
        print(f"| {key[0]} | {key[1]} | {key[2]} | {key[3]} × {key[4]} | "
              + " | ".join(f"{cells[m] / 1e12:.2f}" for m in rows) + " |")
    pts = [(2 * g["n"] * g["k"], g["us"] * 1e-6) for g in r["skinny"] if g["m"] <= 64]
    t0, bw = line_fit(pts)
    res = [abs(t0 + x / bw - t) / t for x, t in pts]
    print(f"\nLine over the {len(pts)} points with at most 64 rows, t = t0 + weight bytes / B: t0 = {t0 * 1e6:.2f} µs, "
          f"B = {bw / 1e12:.2f} TB/s = {bw / peak:.3f} of {peak / 1e12:.2f} TB/s; mean |residual| "
          f"{sum(res) / len(res) * 100:.1f}%, largest {max(res) * 100:.0f}% "
          f"(`skinny_gemm_micros`, `skinny_hbm_efficiency`).\n")
    if r.get("decode"):
        hbm = 0.9 * peak  # the profiles' hbm_efficiency
        d0 = r["decode"][0]
        start = d0["us"] - d0["kv_bytes"] / hbm * 1e6
        checks = ", ".join(f"{d['batch']} x {d['context']:,}: {start + d['kv_bytes'] / hbm * 1e6:.1f} against "
                           f"{d['us']:.1f} µs" for d in r["decode"][1:])
        print(f"Decode attention (`decode`) over its bytes at 0.9 of {peak / 1e12:.2f} TB/s: the batch-1 row "
              f"({d0['context']:,} positions) is {start:.2f} µs over (`attention_startup_micros`); with it the "
              f"other rows are {checks}.\n")
    f8 = r["fp8"]
    t_bf16 = sum(2 * g["m"] * g["n"] * g["k"] / g["bf16_tflops"] for g in f8)
    def speedup(fprop_key, other_key):
        t = sum(2 * g["m"] * g["n"] * g["k"] / g[fprop_key if g["phase"] == "fprop" else other_key] for g in f8)
        return t_bf16 / t
    print("FP8 (e4m3, `torch._scaled_mm`) against bf16, the fprop, dgrad and wgrad GEMMs of "
          f"{len(f8) // 3} linear layers at 8,192 tokens (total bf16 time over total FP8 time):\n")
    print("| scales | accumulation | speed-up |")
    print("|---|---|---|")
    print(f"| tensor-wise | Transformer Engine's: fast in fprop, split in dgrad and wgrad | "
          f"**{speedup('fp8_tensorwise_fast_tflops', 'fp8_tensorwise_split_tflops'):.3f}** (`fp8_gemm_speedup`) |")
    print(f"| tensor-wise | fast everywhere | {speedup('fp8_tensorwise_fast_tflops', 'fp8_tensorwise_fast_tflops'):.3f} |")
    print(f"| tensor-wise | split everywhere | {speedup('fp8_tensorwise_split_tflops', 'fp8_tensorwise_split_tflops'):.3f} |")
    print(f"| row-wise | split everywhere | {speedup('fp8_rowwise_split_tflops', 'fp8_rowwise_split_tflops'):.3f} |")
    print()

def summarize_moe_gemm(path):
    r = json.load(open(path))
    e = r["env"]
    print(f"### {e['gpu']}: routed experts' GEMMs ({path.split('/')[-1]})\n")
    print("Per layer on one ep rank: the six GEMMs (fc1, fc2 × fprop, dgrad, wgrad) of E experts with M tokens "
          "each; TFLOP/s of their total FLOPs over their total time (bf16 unless said). Ratios against "
          "`dense` (one GEMM of the same FLOPs).\n")
    print("| layer | E | M | dense | loop | 4 streams | grouped | one expert alone | loop / dense | grouped / dense "
          "| fp8 loop | fp8 grouped | fp8 loop / bf16 loop |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    layers = []
    for g in r["experts"]:
        if g["layer"] not in layers:
            layers.append(g["layer"])
    for name in layers:
        rows = [g for g in r["experts"] if g["layer"] == name]
        flops = sum(2.0 * g["experts"] * g["m"] * g["n"] * g["k"] for g in rows)

        def rate(key):
            if any(not isinstance(g.get(key), (int, float)) for g in rows):
                return float("nan")
            return flops / sum(2.0 * g["experts"] * g["m"] * g["n"] * g["k"] / g[key] for g in rows)
        d, lo, st, gr, one = (rate(k) for k in ("dense_tflops", "loop_tflops", "streams4_tflops",
                                                "grouped_tflops", "one_expert_tflops"))
        f8l, f8g = rate("fp8_loop_tflops"), rate("fp8_grouped_tflops")
        print(f"| {name} | {rows[0]['experts']} | {rows[0]['tokens_per_expert']} | {d:.0f} | {lo:.0f} | {st:.0f} | "
              f"{gr:.0f} | {one:.0f} | {lo / d:.2f} | {gr / d:.2f} | {f8l:.0f} | {f8g:.0f} | {f8l / lo:.2f} |")
    print()
    mla = [a for a in r.get("mla_attention", []) if "fwd_tflops" in a]
    if mla:
        print("MLA-shaped causal attention (q/k head dim 192, v 128), batch 1, TFLOP/s "
              "(backward counted as 2.5 × the forward's FLOPs):\n")
        print("| seq | heads | backend | forward | backward |")
        print("|---|---|---|---|---|")
        for a in mla:
            print(f"| {a['seq']} | {a['heads']} | {a['backend']} | {a['fwd_tflops']:.0f} | {a['bwd_tflops']:.0f} |")
        print()


def summarize_moe_host(path):
    r = json.load(open(path))
    e = r["env"]
    print(f"### {e['gpu']}: is an eager MoE layer host-bound? ({path.split('/')[-1]})\n")
    print(f"Host: {e['cpu'].split(':')[-1].strip()}; one tiny eager op costs {e['eager_tiny_op_us']:.1f} µs of host time. "
          "Four layers, forward + backward, wall time against the GPU's summed kernel time (torch.profiler).\n")
    print("| case | tokens | wall ms | kernel ms | kernels | wall / kernel |")
    print("|---|---|---|---|---|---|")
    for g in r["rows"]:
        if "wall_ms" not in g or "kernel_ms" not in g:
            print(f"| {g['case']} | {g['tokens']} | error | | | |")
            continue
        print(f"| {g['case']} | {g['tokens']} | {g['wall_ms']:.1f} | {g['kernel_ms']:.1f} | {g['kernels']} | "
              f"{g['wall_ms'] / g['kernel_ms']:.2f} |")
    print()


def summarize_cp_chunks(path):
    r = json.load(open(path))
    print(f"### {r['gpu']}: Llama 3 405B attention launches of two layouts ({path.split('/')[-1]})\n")
    print("cuDNN through SDPA, bf16, head dim 128. A cp chunk is timed as its two cuDNN parts (the keys before "
          "the chunk unmasked, the chunk's causal square); `one launch` is the same chunk with a bottom-right "
          "causal mask on the backend PyTorch picks for it.\n")
    print("| layout | rank | chunk | queries × keys | heads (KV) | forward ms | backward ms | forward TFLOP/s "
          "| backward TFLOP/s | one launch: forward / backward ms |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for g in r["launches"]:
        one = (f"{g['lower_right_fwd_ms']:.3f} / {g['lower_right_bwd_ms']:.3f}" if "lower_right_fwd_ms" in g else "–")
        print(f"| {g['layout']} | {g.get('rank', 'any')} | {g.get('chunk', 'all')} | {g['queries']} × {g['keys']} | "
              f"{g['heads']} ({g['kv_heads']}) | {g['fwd_ms']:.3f} | {g['bwd_ms']:.3f} | {g['fwd_tflops']:.0f} | "
              f"{g['bwd_tflops']:.0f} | {one} |")
    meta = [g for g in r["launches"] if g["layout"].startswith("meta")][0]
    print("\nPer rank (both chunks), against Meta's launch (rate = FLOPs / time):\n")
    print("| rank | forward rate / Meta's | backward rate / Meta's |")
    print("|---|---|---|")
    for rank in sorted({g["rank"] for g in r["launches"] if "rank" in g}):
        gs = [g for g in r["launches"] if g.get("rank") == rank]
        fl = sum(g["flops_fwd"] for g in gs)
        f = fl / sum(g["fwd_ms"] for g in gs) / (meta["flops_fwd"] / meta["fwd_ms"])
        b = fl / sum(g["bwd_ms"] for g in gs) / (meta["flops_fwd"] / meta["bwd_ms"])
        print(f"| {rank} | {f:.2f} | {b:.2f} |")
    print()


def summarize_decode_step(path):
    """The small-kernel floor (`kernel_floor_micros`) from the batch-1 whole
    decode steps: the step less its GEMMs as measured alone in the same
    host's -skinny-fp8.json (1 row; the 70B shard's LM head, not measured
    there, at the profile's skinny rate) less one decode attention per
    layer (its cache bytes at 0.9 of HBM plus the start-up of the skinny
    file's batch-1 `decode` row), over the step's other small kernels (10 a
    layer, the final norm and the argmax)."""
    r = json.load(open(path))
    sk = json.load(open(path.replace("-decode-step.json", "-skinny-fp8.json")))
    peak = HBM_PEAK[r["gpu"]]
    hbm = 0.9 * peak
    d0 = sk["decode"][0]
    start = d0["us"] - d0["kv_bytes"] / hbm * 1e6
    gemm = {(g["model"], g["tp"], g["gemm"]): g["us"] for g in sk["skinny"] if g["m"] == 1}
    print(f"### {r['gpu']}: the small-kernel floor from whole decode steps ({path.split('/')[-1]})\n")
    print("| model | batch | context | step µs | GEMMs µs | attention µs | per small kernel µs |")
    print("|---|---|---|---|---|---|---|")
    per = []
    for row in r["rows"]:
        if row.get("batch") != 1 or "graph_ms" not in row:
            continue
        if row["model"].startswith("llama3-8b"):
            layers, key, lm = 32, ("llama3-8b", 1), gemm[("llama3-8b", 1, "lm_head")]
        else:
            layers, key = 80, ("llama3-70b", 4)
            lm = 32064 * 8192 * 2 / (0.83 * peak) * 1e6 + 3.0  # skinny_hbm_efficiency, skinny_gemm_micros
        g = layers * sum(gemm[key + (n,)] for n in ("qkv", "o", "gate_up", "down")) + lm
        att = layers * (row["kv_bytes"] / layers / hbm * 1e6 + start)
        f = (row["graph_ms"] * 1e3 - g - att) / (10 * layers + 2)
        per.append(f)
        print(f"| {row['model']} | 1 | {row['context']:,} | {row['graph_ms'] * 1e3:.0f} | {g:.0f} | {att:.0f} | {f:.2f} |")
    per.sort()
    med = (per[len(per) // 2 - 1] + per[len(per) // 2]) / 2 if len(per) % 2 == 0 else per[len(per) // 2]
    print(f"\nMedian per small kernel: {med:.2f} µs (`kernel_floor_micros`).\n")


def summarize_fp8_decode(path):
    """fp8_decode_sweep.py's file: decode GEMMs by rows (weight TB/s up to
    256 rows, TFLOP/s above), FP8 over bf16; decode attention at the 70B
    model's heads; ten-layer steps per layer, with and without attention;
    the per-small-kernel time of the batch-1 steps (as summarize_decode_step
    does it, with this file's own GEMMs at one row and its own decode
    attention at 1 x 1,500)."""
    r = json.load(open(path))
    gpu = r["env"]["gpu"]
    name = path.split("/")[-1]
    g = {(x["model"], x["tp"], x["gemm"], x["m"], x["kind"]): x for x in r["gemm"] if "us" in x}
    shapes = list(dict.fromkeys((x["model"], x["tp"], x["gemm"], x["n"], x["k"]) for x in r["gemm"]))
    rows = sorted({x["m"] for x in r["gemm"]})
    print(f"### {gpu}: decode GEMMs, bf16 and FP8 ({name})\n")
    print("Per GEMM (N x K = the weight): µs at each row count, bf16 / FP8 (fast accumulation); "
          "FP8 over bf16 is the bf16 time over the FP8 time.\n")
    print("| GEMM | N x K | " + " | ".join(str(m) for m in rows) + " |")
    print("|---|---|" + "---|" * len(rows))
    for model, tp, gm, n, k in shapes:
        cells = []
        for m in rows:
            b, f = g.get((model, tp, gm, m, "bf16")), g.get((model, tp, gm, m, "fp8_fast"))
            cells.append(f"{b['us']:.0f} / {f['us']:.0f}" if b and f else "–")
        print(f"| {model} tp{tp} {gm} | {n} x {k} | " + " | ".join(cells) + " |")
    print("\nBy row range, over the 22 GEMMs: weight bytes / s (up to 256 rows) or FLOP/s (above), median "
          "[min–max]; FP8 over bf16.\n")
    print("| rows | bf16 | FP8 | FP8 over bf16 |")
    print("|---|---|---|---|")
    for m in rows:
        key = "weight_bytes_per_s" if m <= 256 else "flops_per_s"
        unit, scale = ("TB/s", 1e12) if m <= 256 else ("TFLOP/s", 1e12)
        b = sorted(x[key] / scale for x in r["gemm"] if x["m"] == m and x["kind"] == "bf16" and "us" in x)
        f = sorted(x[key] / scale for x in r["gemm"] if x["m"] == m and x["kind"] == "fp8_fast" and "us" in x)
        ratio = sorted(g[(a[0], a[1], a[2], m, "bf16")]["us"] / g[(a[0], a[1], a[2], m, "fp8_fast")]["us"]
                       for a in shapes if (a[0], a[1], a[2], m, "bf16") in g and (a[0], a[1], a[2], m, "fp8_fast") in g)
        fmt = "{:.2f}" if m <= 256 else "{:.0f}"
        cell = lambda v: f"{fmt.format(v[len(v) // 2])} [{fmt.format(v[0])}–{fmt.format(v[-1])}] {unit}"  # noqa: E731
        print(f"| {m} | {cell(b)} | {cell(f)} | {ratio[len(ratio) // 2]:.2f} [{ratio[0]:.2f}–{ratio[-1]:.2f}] |")
    print(f"\n### {gpu}: decode attention, bf16 cache ({name})\n")
    print("| model | batch | context | cache MB | µs | cache TB/s |")
    print("|---|---|---|---|---|---|")
    for x in r["decode_attn"]:
        if "us" in x:
            print(f"| {x['model']} | {x['batch']} | {x['context']:,} | {x['kv_bytes'] / 1e6:.0f} | {x['us']:.1f} | "
                  f"{x['kv_bytes_per_s'] / 1e12:.2f} |")
    print(f"\n### {gpu}: ten Llama-3.1-70B layers at tp 1, one CUDA graph ({name})\n")
    print("| weights | batch | context | per layer µs | without attention µs | attention µs |")
    print("|---|---|---|---|---|---|")
    st = {(x["weights"], x["batch"], x["context"], x["attention"]): x for x in r["step"] if "per_layer_us" in x}
    for (w, b, c, a), x in st.items():
        if a and (w, b, c, False) in st:
            y = st[(w, b, c, False)]["per_layer_us"]
            print(f"| {w} | {b} | {c:,} | {x['per_layer_us']:.0f} | {y:.0f} | {x['per_layer_us'] - y:.0f} |")
    att = {(x["model"], x["batch"], x["context"]): x["us"] for x in r["decode_attn"] if "us" in x}
    print("\nPer small kernel at one sequence (the layer less its four GEMMs at one row and decode attention "
          "at 1 x 1,500 as timed alone, over its other kernels):\n")
    per = []
    for w, kind, small in (("bf16", "bf16", 10), ("fp8", "fp8_fast", 14)):
        x = st.get((w, 1, 1500, True))
        if not x:
            continue
        gem = sum(g[("llama3-70b", 1, n, 1, kind)]["us"] for n in ("qkv", "o", "gate_up", "down"))
        left = x["per_layer_us"] - gem - att[("llama3-70b tp1", 1, 1500)]
        per.append(left / small)
        print(f"- {w}: {x['per_layer_us']:.1f} − {gem:.1f} (GEMMs) − {att[('llama3-70b tp1', 1, 1500)]:.1f} "
              f"(attention) = {left:.1f} µs over {small} kernels: {left / small:.2f} µs each")
    if per:
        print(f"\nMedian per small kernel: {sum(per) / len(per):.2f} µs (`kernel_floor_micros` of the h200, "
              f"rounded).")
    print()
    if r.get("prefill"):
        print(f"### {gpu}: ten layers of one prompt's prefill, one CUDA graph ({name})\n")
        print("Per layer µs (the linear layers' TFLOP/s over the whole layer's time in brackets).\n")
        print("| model | weights | 128 tokens | 512 | 2,048 | 8,192 |")
        print("|---|---|---|---|---|---|")
        pre = {(x["model"], x["weights"], x["tokens"]): x["per_layer_us"] for x in r["prefill"] if "per_layer_us" in x}
        for model in dict.fromkeys(x["model"] for x in r["prefill"] if "model" in x):
            h, a, kv, f = {"llama3-70b": (8192, 64, 8, 28672), "llama3-8b": (4096, 32, 8, 14336)}[model]
            params = h * ((a + 2 * kv) * 128 + a * 128 + 3 * f)
            for w in ("fp8", "bf16"):
                cells = []
                for t in (128, 512, 2048, 8192):
                    us = pre.get((model, w, t))
                    cells.append(f"{us:,.0f} ({2 * t * params / (us * 1e-6) / 1e12:.0f})" if us else "–")
                print(f"| {model} tp1 | {w} | " + " | ".join(cells) + " |")
        print()


for p in sys.argv[1:]:
    if p.endswith("-fp8-decode.json"):
        summarize_fp8_decode(p)
    elif p.endswith("-decode-step.json"):
        summarize_decode_step(p)
    elif p.endswith("-cp-chunks.json"):
        summarize_cp_chunks(p)
    elif p.endswith("-moe-host.json"):
        summarize_moe_host(p)
    elif p.endswith("-moe-gemm.json"):
        summarize_moe_gemm(p)
    elif p.endswith("-skinny-fp8.json"):
        summarize_skinny_fp8(p)
    else:
        summarize(p)
