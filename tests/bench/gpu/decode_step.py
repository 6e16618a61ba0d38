#!/usr/bin/env python3
"""Times a whole decode step of a Llama-3 stack on one GPU, without an
engine: the GPU work a serving iteration cannot avoid, against which
stagecraft's serving decode iteration is checked (docs/kernel-measurements.md,
"Whole decode steps"). Needs PyTorch with CUDA; never run by a test.

  python3 tests/bench/gpu/decode_step.py OUT.json

Models: Llama-3-8B (32 layers, tp 1) and one tp-4 shard of Llama-3-70B
(80 layers of its per-rank shapes, no all-reduce: the shard's own work).
Each step: per layer RMSNorm, qkv GEMM, a rotary-like element-wise op on q
and k, the new k/v written into a bf16 KV cache, SDPA decode attention
(GQA) over `context` positions, o GEMM, residual, RMSNorm, gate_up GEMM,
SiLU-and-multiply, down GEMM, residual; then the final norm, the LM head
and an argmax. Random bf16 weights. Timed two ways, median of 5:
  graph  the step captured in one CUDA graph and replayed (what vLLM and
         SGLang do for decode): device time plus graph launch;
  eager  the same Python issuing every kernel (PyTorch's own overhead).
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DEV = "cuda"
FUSED = [SDPBackend.FLASH_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.CUDNN_ATTENTION]

# name, layers, hidden, heads, kv_heads, ffn (per rank), vocab (per rank)
MODELS = [("llama3-8b tp1", 32, 4096, 32, 8, 14336, 128256),
          ("llama3-70b tp4 shard", 80, 8192, 16, 2, 7168, 32064)]


def build(layers, hidden, heads, kv, ffn, vocab):
    d = 128
    def w(n, k):
        return torch.randn(n, k, device=DEV, dtype=torch.bfloat16) * 0.02
    L = []
    for _ in range(layers):
        L.append({"qkv": w((heads + 2 * kv) * d, hidden), "o": w(hidden, heads * d),
                  "gu": w(2 * ffn, hidden), "down": w(hidden, ffn),
                  "n1": torch.ones(hidden, device=DEV, dtype=torch.bfloat16),
                  "n2": torch.ones(hidden, device=DEV, dtype=torch.bfloat16)})
    head = w(vocab, hidden)
    return L, head


def step_fn(L, head, hidden, heads, kv, x, kc, vc, pos):
    d = 128
    b = x.shape[0]
    def step():
        h = x
        for i, p in enumerate(L):
            y = F.rms_norm(h, (hidden,), p["n1"])
            qkv = F.linear(y, p["qkv"])
            q, k, v = qkv.split([heads * d, kv * d, kv * d], dim=-1)
            q = (q * 1.0001).view(b, heads, 1, d)  # stands in for the rotary embedding
            k = (k * 1.0001).view(b, kv, 1, d)
            kc[i].index_copy_(2, pos, k)
            vc[i].index_copy_(2, pos, v.view(b, kv, 1, d))
            with sdpa_kernel(FUSED):
                a = F.scaled_dot_product_attention(q, kc[i], vc[i], enable_gqa=True)
            h = h + F.linear(a.reshape(b, heads * d), p["o"])
            y = F.rms_norm(h, (hidden,), p["n2"])
            g, u = F.linear(y, p["gu"]).chunk(2, dim=-1)
            h = h + F.linear(F.silu(g) * u, p["down"])
        logits = F.linear(F.rms_norm(h, (hidden,)), head)
        return logits.argmax(dim=-1)
    return step


def time_it(fn, reps=5):
    out = []
    for _ in range(reps):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out)


def main():
    torch.manual_seed(0)
    p = torch.cuda.get_device_properties(0)
    res = {"gpu": p.name, "torch": torch.__version__, "rows": [],
           "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    for name, layers, hidden, heads, kv, ffn, vocab in MODELS:
        L, head = build(layers, hidden, heads, kv, ffn, vocab)
        weight_bytes = sum(t.numel() * 2 for p_ in L for t in p_.values()) + head.numel() * 2
        for batch, context in ((1, 512), (1, 2048), (8, 2048), (32, 2048), (64, 1024), (128, 1024)):
            try:
                x = torch.randn(batch, hidden, device=DEV, dtype=torch.bfloat16)
                kc = [torch.randn(batch, kv, context, 128, device=DEV, dtype=torch.bfloat16) for _ in L]
                vc = [torch.randn_like(t) for t in kc]
                pos = torch.tensor([context - 1], device=DEV)
                step = step_fn(L, head, hidden, heads, kv, x, kc, vc, pos)
                for _ in range(3):
                    step()
                eager = time_it(step)
                s = torch.cuda.Stream()
                s.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(s):
                    step()
                torch.cuda.current_stream().wait_stream(s)
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    step()
                g.replay()
                graph = time_it(g.replay)
                kv_bytes = 2 * sum(t.numel() * 2 for t in kc)
                row = {"model": name, "batch": batch, "context": context, "graph_ms": graph, "eager_ms": eager,
                       "weight_bytes": weight_bytes, "kv_bytes": kv_bytes}
                del g, kc, vc, step
            except Exception as e:  # noqa: BLE001 - recorded, the next case runs
                row = {"model": name, "batch": batch, "context": context, "error": str(e)[:300]}
            res["rows"].append(row)
            print(row, flush=True)
            torch.cuda.empty_cache()
            json.dump(res, open(sys.argv[1], "w"), indent=1)
        del L, head
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
