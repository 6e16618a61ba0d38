#!/usr/bin/env python3
"""Kernel-efficiency sweep on one NVIDIA GPU (run on a lent H100; needs PyTorch).

Measures what docs/hardware.md costs operators with, at the shapes LLM
training and serving jobs produce:
  1. ceilings: a large bf16 GEMM and a device-to-device copy;
  2. bf16 GEMMs of Llama-3 8B/70B linear layers (fprop M x N x K, dgrad
     M x K x N, wgrad N x K x M) at tp 1..8 and 2K..16K tokens;
  3. fp8 (e4m3, per-tensor scales, torch._scaled_mm) GEMMs of the same
     shapes, and the cast of a bf16 activation to fp8 (one read, one write);
  4. attention through PyTorch's SDPA (flash = FlashAttention-2 and cuDNN
     backends), forward and backward: square causal/non-causal by sequence
     length and head dim, short query blocks against long keys (context
     parallelism), and decode (one query token against a KV cache).
Every figure is the median of timed repeats with CUDA events after
warm-ups, on random data. Writes JSON to $OUT/kernel_sweep.json (or the
path given) and prints a short table.
"""
import json, os, sys, time, math
import torch
import torch.nn.functional as F

dev = torch.device("cuda")
torch.manual_seed(0)
RESULTS = {"meta": {}, "gemm_bf16": [], "gemm_fp8": [], "cast_fp8": [], "attention": [], "decode": []}


def timeit(fn, min_ms=25.0, max_iters=200):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    s.record(); fn(); e.record(); torch.cuda.synchronize()
    one = max(s.elapsed_time(e), 1e-3)
    iters = int(max(5, min(max_iters, min_ms / one)))
    times = []
    for _ in range(iters):
        s.record(); fn(); e.record(); e.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2] / 1e3  # seconds, median


def meta():
    p = torch.cuda.get_device_properties(dev)
    RESULTS["meta"] = {"device": p.name, "sms": p.multi_processor_count,
                       "memory_gib": round(p.total_memory / 2**30, 1),
                       "torch": torch.__version__, "cuda": torch.version.cuda,
                       "cudnn": torch.backends.cudnn.version(),
                       "date": time.strftime("%Y-%m-%d")}
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    t = timeit(lambda: a @ b)
    RESULTS["meta"]["gemm_8192_bf16_tflops"] = 2 * 8192**3 / t / 1e12
    x = torch.empty(2**30, device=dev, dtype=torch.uint8); y = torch.empty_like(x)
    t = timeit(lambda: y.copy_(x))
    RESULTS["meta"]["copy_gbs_read_plus_write"] = 2 * 2**30 / t / 1e9
    del a, b, x, y


MODELS = {  # hidden, ffn, heads, kv heads, head dim
    "llama3-8b": (4096, 14336, 32, 8, 128),
    "llama3-70b": (8192, 28672, 64, 8, 128),
}


def linears(h, ffn, a, kv, d, tp):
    return [("qkv", (a + 2 * kv) * d // tp, h), ("proj", h, a * d // tp),
            ("fc1", 2 * ffn // tp, h), ("fc2", h, ffn // tp)]


def gemm_sweep():
    for model, (h, ffn, a, kv, d) in MODELS.items():
        for tp in (1, 2, 4, 8):
            for tokens in (2048, 4096, 8192, 16384):
                for name, n, k in linears(h, ffn, a, kv, d, tp):
                    for pas, (M, N, K) in (("fprop", (tokens, n, k)), ("dgrad", (tokens, k, n)),
                                           ("wgrad", (n, k, tokens))):
                        A = torch.randn(M, K, device=dev, dtype=torch.bfloat16)
                        B = torch.randn(K, N, device=dev, dtype=torch.bfloat16)
                        t = timeit(lambda: A @ B, min_ms=10)
                        RESULTS["gemm_bf16"].append({"model": model, "tp": tp, "tokens": tokens, "linear": name,
                                                     "pass": pas, "m": M, "n": N, "k": K, "seconds": t,
                                                     "tflops": 2 * M * N * K / t / 1e12})
                        if pas != "dgrad":
                            fp8_gemm(model, tp, tokens, name, pas, M, N, K)
                        del A, B


def fp8_gemm(model, tp, tokens, name, pas, M, N, K):
    try:
        A = torch.randn(M, K, device=dev, dtype=torch.bfloat16).to(torch.float8_e4m3fn)
        B = torch.randn(N, K, device=dev, dtype=torch.bfloat16).to(torch.float8_e4m3fn).t()  # column-major K x N
        one = torch.ones((), device=dev, dtype=torch.float32)
        t = timeit(lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16), min_ms=10)
        RESULTS["gemm_fp8"].append({"model": model, "tp": tp, "tokens": tokens, "linear": name, "pass": pas,
                                    "m": M, "n": N, "k": K, "seconds": t, "tflops": 2 * M * N * K / t / 1e12})
    except Exception as ex:  # noqa: BLE001 - record and go on
        RESULTS["gemm_fp8"].append({"model": model, "linear": name, "error": str(ex)[:200]})


def cast_sweep():
    for rows, cols in ((4096, 4096), (8192, 8192), (16384, 8192), (16384, 28672)):
        x = torch.randn(rows, cols, device=dev, dtype=torch.bfloat16)
        t_cast = timeit(lambda: x.to(torch.float8_e4m3fn))
        t_amax = timeit(lambda: x.abs().amax())
        nbytes = rows * cols
        RESULTS["cast_fp8"].append({"rows": rows, "cols": cols, "cast_seconds": t_cast,
                                    "cast_gbs": 3 * nbytes / t_cast / 1e9,  # 2 B read + 1 B written
                                    "amax_seconds": t_amax, "amax_gbs": 2 * nbytes / t_amax / 1e9})
        del x


def attention(sq, sk, d, heads, batch, causal, backend):
    from torch.nn.attention import sdpa_kernel, SDPBackend
    be = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    q = torch.randn(batch, heads, sq, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    k = torch.randn(batch, heads, sk, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    v = torch.randn(batch, heads, sk, d, device=dev, dtype=torch.bfloat16, requires_grad=True)
    with sdpa_kernel([be]):
        fwd = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)
        t_f = timeit(fwd)
        o = fwd(); g = torch.randn_like(o)
        t_b = timeit(lambda: torch.autograd.grad(o, (q, k, v), g, retain_graph=True))
    flops = 4 * batch * heads * sq * sk * d * (0.5 if causal else 1.0)
    return {"sq": sq, "sk": sk, "d": d, "heads": heads, "batch": batch, "causal": causal, "backend": backend,
            "fwd_seconds": t_f, "bwd_seconds": t_b, "fwd_tflops": flops / t_f / 1e12,
            "bwd_tflops": 2.5 * flops / t_b / 1e12}


def attention_sweep():
    for backend in ("flash", "cudnn"):
        for d in (64, 128):
            heads = 2048 // d
            for s in (512, 1024, 2048, 4096, 8192, 16384, 32768):
                for causal in (True, False):
                    try:
                        RESULTS["attention"].append(attention(s, s, d, heads, max(1, 16384 // s), causal, backend))
                    except Exception as ex:  # noqa: BLE001
                        RESULTS["attention"].append({"sq": s, "sk": s, "d": d, "backend": backend, "error": str(ex)[:200]})
        # context parallelism: a rank's query block against a longer key range
        for sq in (256, 1024, 4096):
            for sk in (8192, 32768, 131072):
                try:
                    RESULTS["attention"].append(attention(sq, sk, 128, 16, 1, False, backend))
                except Exception as ex:  # noqa: BLE001
                    RESULTS["attention"].append({"sq": sq, "sk": sk, "d": 128, "backend": backend, "error": str(ex)[:200]})


def decode_sweep():
    # one query token per sequence against its cache; GQA 8 KV heads of 128 (Llama-3 70B at tp 1)
    for batch in (1, 16, 64):
        for ctx in (1024, 4096, 16384, 65536):
            if batch * ctx > 64 * 16384:
                continue
            q = torch.randn(batch, 64, 1, 128, device=dev, dtype=torch.bfloat16)
            k = torch.randn(batch, 8, ctx, 128, device=dev, dtype=torch.bfloat16)
            v = torch.randn_like(k)
            try:
                t = timeit(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True))
                kv_bytes = 2 * batch * 8 * ctx * 128 * 2
                RESULTS["decode"].append({"batch": batch, "context": ctx, "q_heads": 64, "kv_heads": 8, "d": 128,
                                          "seconds": t, "kv_gbs": kv_bytes / t / 1e9})
            except Exception as ex:  # noqa: BLE001
                RESULTS["decode"].append({"batch": batch, "context": ctx, "error": str(ex)[:200]})
            del q, k, v


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.environ.get("OUT", "."), "kernel_sweep.json")
    t0 = time.time()
    for step in (meta, cast_sweep, attention_sweep, decode_sweep, gemm_sweep):
        step()
        print(f"[{time.time() - t0:6.1f}s] {step.__name__} done", flush=True)
        with open(out, "w") as f:
            json.dump(RESULTS, f, indent=1)
    m = RESULTS["meta"]
    print(json.dumps(m))
    print("attention (backend d sq sk causal: fwd / bwd TFLOP/s)")
    for r in RESULTS["attention"]:
        if "error" in r:
            print("  ERR", r); continue
        print(f"  {r['backend']:5} {r['d']:3} {r['sq']:6} {r['sk']:6} {str(r['causal']):5}: {r['fwd_tflops']:6.0f} / {r['bwd_tflops']:6.0f}")
    for r in RESULTS["decode"]:
        print("  decode", r)
    print("cast", RESULTS["cast_fp8"])
    g = [r for r in RESULTS["gemm_bf16"] if r["tokens"] == 8192]
    for r in g[:24]:
        print(f"  bf16 {r['model']} tp{r['tp']} {r['linear']} {r['pass']} {r['m']}x{r['n']}x{r['k']}: {r['tflops']:.0f}")


if __name__ == "__main__":
    main()
