#!/usr/bin/env python3
"""Times, on one GPU, the fused-attention launches of two Llama 3 405B
layouts that docs/plan.md ranks against each other (needs PyTorch with
CUDA; stagecraft never runs it; output committed under
tests/bench/gpu/results/ (*-cp-chunks.json), cited by docs/plan.md).

  python3 tests/bench/gpu/cp_chunk_attention.py OUT.json

Meta's layout (tp 8, cp 1, 8K tokens): per rank one causal launch of 8,192
queries against 8,192 keys, 16 query heads of 128 (128 / tp 8) sharing 1
KV head. The plan's best (tp 2, cp 8, all-gather): per rank 64 query heads
(8 KV heads / 2 = 4 shared), its two chunks of 512 queries (chunks r and
15 - r of the 16) each run against the keys up to that chunk's end, with
the causal mask aligned to the bottom right (the chunk's last query sees
every key). Both do the same FLOPs per rank; the question is the rate.

SDPA's cuDNN backend (Transformer Engine's fused attention on Hopper runs
cuDNN), bf16, forward and forward+backward, CUDA events, median of 7 after
warm-ups. Bottom-right causal masks through
torch.nn.attention.bias.causal_lower_right.
"""
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.bias import causal_lower_right

DEV = "cuda"
BF = torch.bfloat16


def timed(q_len, k_len, heads, kv_heads, mode):
    """mode: 'causal' (top-left, square), 'full' (no mask) or 'lower_right'
    (bottom-right causal mask, any backend PyTorch picks for it)."""
    q = torch.randn(1, heads, q_len, 128, device=DEV, dtype=BF, requires_grad=True)
    k = torch.randn(1, kv_heads, k_len, 128, device=DEV, dtype=BF).repeat_interleave(heads // kv_heads, 1)
    v = torch.randn(1, kv_heads, k_len, 128, device=DEV, dtype=BF).repeat_interleave(heads // kv_heads, 1)
    k.requires_grad_(True)
    v.requires_grad_(True)
    mask = causal_lower_right(q_len, k_len) if mode == "lower_right" else None
    backends = ([SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION, SDPBackend.FLASH_ATTENTION]
                if mode == "lower_right" else [SDPBackend.CUDNN_ATTENTION])

    def fwd():
        if mask is not None:
            return F.scaled_dot_product_attention(q, k, v, attn_mask=mask)
        return F.scaled_dot_product_attention(q, k, v, is_causal=(mode == "causal"))

    with sdpa_kernel(backends):
        o = fwd()
        go = torch.randn_like(o)
        for _ in range(3):
            o = fwd()
            o.backward(go)
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        tf, tb = [], []
        for _ in range(7):
            q.grad = k.grad = v.grad = None
            s.record(); o = fwd(); e.record(); e.synchronize(); tf.append(s.elapsed_time(e))
            s.record(); o.backward(go); e.record(); e.synchronize(); tb.append(s.elapsed_time(e))
    return statistics.median(tf), statistics.median(tb)


def run(q_len, k_len, heads, kv_heads, lower_right):
    # FLOPs of the unmasked part: queries x keys visited x heads x 4 x 128.
    if lower_right:
        visited = sum(min(k_len, k_len - q_len + i + 1) for i in range(q_len))
    else:
        visited = q_len * (q_len + 1) // 2
    flops = 4.0 * 128 * heads * visited
    out = {"queries": q_len, "keys": k_len, "heads": heads, "kv_heads": kv_heads, "flops_fwd": flops}
    if not lower_right:
        f_ms, b_ms = timed(q_len, k_len, heads, kv_heads, "causal")
    else:
        # One launch as Megatron runs it needs a bottom-right causal mask;
        # cuDNN through SDPA takes only top-left, so the chunk is timed as its
        # two cuDNN parts (the keys before the chunk, unmasked; the chunk's own
        # causal square), and as one launch with the bottom-right mask on
        # whatever backend PyTorch picks for it.
        f1, b1 = timed(q_len, q_len, heads, kv_heads, "causal")
        f2, b2 = (timed(q_len, k_len - q_len, heads, kv_heads, "full") if k_len > q_len else (0.0, 0.0))
        f_ms, b_ms = f1 + f2, b1 + b2
        try:
            lf, lb = timed(q_len, k_len, heads, kv_heads, "lower_right")
            out.update(lower_right_fwd_ms=lf, lower_right_bwd_ms=lb)
        except Exception as ex:  # noqa: BLE001
            out["lower_right_error"] = str(ex).splitlines()[0][:200] if str(ex) else repr(ex)
    out.update(fwd_ms=f_ms, bwd_ms=b_ms, fwd_tflops=flops / (f_ms * 1e-3) / 1e12,
               bwd_tflops=2.5 * flops / (b_ms * 1e-3) / 1e12)
    return out


def main():
    res = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "gpu": torch.cuda.get_device_properties(0).name, "torch": torch.__version__,
           "cudnn": torch.backends.cudnn.version(), "launches": []}
    res["launches"].append(dict(layout="meta tp8 cp1", rank_chunks="all", **run(8192, 8192, 16, 1, False)))
    for r in (0, 3, 7):
        for c in (r, 15 - r):
            res["launches"].append(dict(layout="plan tp2 cp8", rank=r, chunk=c,
                                        **run(512, 512 * (c + 1), 64, 4, True)))
        print(json.dumps(res["launches"][-2:]), flush=True)
        json.dump(res, open(sys.argv[1], "w"), indent=1)
    print(json.dumps(res["launches"][0]), flush=True)
    json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
