#!/usr/bin/env python3
"""Is an eager PyTorch MoE transformer layer bound by its host? A probe on
one GPU (needs PyTorch with CUDA; stagecraft never runs it; its output is
committed under tests/bench/gpu/results/ (*-moe-host.json) and
docs/kernel-measurements.md cites it).

  python3 tests/bench/gpu/moe_host_probe.py OUT.json

Builds, in plain PyTorch (no Transformer Engine or Megatron on the lent
machine), a stack of 4 transformer layers the way Megatron-Core runs them
on one expert-parallel rank, and times forward + backward eagerly:

  qwen3-30b-a3b  hidden 2048, 32 query / 4 KV heads of 128 with QK-norm,
                 RoPE, causal attention (SDPA); MoE: router over 128
                 experts, top-8, tokens permuted to this rank's 16 local
                 experts (expert id mod 16: the load of one rank of ep 8,
                 about 2,048 tokens per expert at 4,096 tokens), expert
                 GEMMs of width 768 (gated SiLU), un-permuted with the
                 router's weights. No all-to-all (one GPU).
  llama3-8b      the dense control: hidden 4096, 32/8 heads, FFN 14336.

The MoE layer runs in two ways: `sync`, as Megatron-Core's all-to-all
dispatcher with Transformer Engine's GroupedLinear does it (the tokens per
expert copied to the host, which waits for the device, then one GEMM per
expert from the host-side split sizes), and `nosync` (the counts stay on
the device; one torch._grouped_mm per expert GEMM).

Reported per case: wall time per iteration (median of 5, after warm-ups),
the GPU's kernel time per iteration from torch.profiler (sum of kernel
durations on the one stream), and their ratio: a ratio near 1 means the
GPU is kept busy, a ratio well above 1 means the host (Python, dispatch,
synchronisation) sets the pace.
"""
import json
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

DEV = "cuda"
BF = torch.bfloat16


def p(*shape, scale=0.02):
    return torch.nn.Parameter(torch.randn(*shape, device=DEV, dtype=BF) * scale)


def rope(x, cos, sin):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


class Layer:
    def __init__(self, h, heads, kv, ffn, moe, experts=128, local=16, topk=8, sync=True):
        self.h, self.heads, self.kv, self.moe, self.sync = h, heads, kv, moe, sync
        self.experts, self.local, self.topk = experts, local, topk
        self.ln1, self.ln2 = p(h, scale=1.0), p(h, scale=1.0)
        self.qkv = p((heads + 2 * kv) * 128, h)
        self.o = p(h, heads * 128)
        self.qn, self.kn = p(128, scale=1.0), p(128, scale=1.0)
        if moe:
            self.router = p(experts, h)
            self.w1 = p(local, 2 * ffn, h)   # (E, N, K): grouped_mm wants B as (E, K, N) column-major
            self.w2 = p(local, h, ffn)
        else:
            self.w1 = p(2 * ffn, h)
            self.w2 = p(h, ffn)

    def attention(self, x, cos, sin):
        T = x.shape[0]
        y = F.rms_norm(x, (self.h,), self.ln1)
        qkv = y @ self.qkv.t()
        q, k, v = qkv.split([self.heads * 128, self.kv * 128, self.kv * 128], dim=-1)
        q = F.rms_norm(q.view(T, self.heads, 128), (128,), self.qn)
        k = F.rms_norm(k.view(T, self.kv, 128), (128,), self.kn)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        q = q.transpose(0, 1).unsqueeze(0)
        k = k.transpose(0, 1).unsqueeze(0).repeat_interleave(self.heads // self.kv, dim=1)
        v = v.view(T, self.kv, 128).transpose(0, 1).unsqueeze(0).repeat_interleave(self.heads // self.kv, dim=1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        a = a.squeeze(0).transpose(0, 1).reshape(T, self.heads * 128)
        return x + a @ self.o.t()

    def mlp(self, x):
        y = F.rms_norm(x, (self.h,), self.ln2)
        if not self.moe:
            g, u = (y @ self.w1.t()).chunk(2, dim=-1)
            return x + (F.silu(g) * u) @ self.w2.t()
        T = y.shape[0]
        logits = (y @ self.router.t()).float()
        probs, idx = torch.topk(torch.softmax(logits, dim=-1), self.topk, dim=-1)
        local = (idx % self.local).reshape(-1)                  # (T*topk,)
        order = torch.argsort(local, stable=True)
        token = torch.arange(T, device=DEV).repeat_interleave(self.topk)[order]
        xs = y.index_select(0, token)                           # permute
        counts = torch.bincount(local, minlength=self.local)
        if self.sync:
            splits = counts.tolist()                            # device-to-host sync, as the dispatcher's
            outs = []
            for e, part in enumerate(xs.split(splits, dim=0)):
                g, u = (part @ self.w1[e].t()).chunk(2, dim=-1)
                outs.append((F.silu(g) * u) @ self.w2[e].t())
            z = torch.cat(outs, dim=0)
        else:
            offs = torch.cumsum(counts, 0).to(torch.int32)
            hmid = torch._grouped_mm(xs, self.w1.transpose(-2, -1), offs=offs)
            g, u = hmid.chunk(2, dim=-1)
            z = torch._grouped_mm((F.silu(g) * u), self.w2.transpose(-2, -1), offs=offs)
        w = probs.reshape(-1)[order].to(BF).unsqueeze(-1)
        out = torch.zeros_like(y).index_add(0, token, z * w)    # un-permute
        return x + out

    def __call__(self, x, cos, sin):
        return self.mlp(self.attention(x, cos, sin))


def run_case(name, layers, T, iters=5):
    x0 = torch.randn(T, layers[0].h, device=DEV, dtype=BF, requires_grad=True)
    pos = torch.arange(T, device=DEV, dtype=torch.float32)
    inv = 1.0 / (500000 ** (torch.arange(0, 64, device=DEV, dtype=torch.float32) / 64))
    ang = torch.outer(pos, inv)
    cos = torch.cat((ang.cos(), ang.cos()), -1).to(BF).unsqueeze(1)
    sin = torch.cat((ang.sin(), ang.sin()), -1).to(BF).unsqueeze(1)

    def step():
        x = x0
        for layer in layers:
            x = layer(x, cos, sin)
        x.float().sum().backward()

    for _ in range(3):
        step()
    torch.cuda.synchronize()
    walls = []
    for _ in range(iters):
        t0 = time.perf_counter()
        step()
        torch.cuda.synchronize()
        walls.append(time.perf_counter() - t0)
    wall = statistics.median(walls)
    row = {"case": name, "tokens": T, "layers": len(layers), "wall_ms": wall * 1e3}
    try:
        from torch.profiler import profile, ProfilerActivity
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        kern = 0.0
        n = 0
        for e in prof.events():
            if getattr(e, "device_type", None) == torch.autograd.DeviceType.CUDA:
                kern += e.device_time if hasattr(e, "device_time") else e.cuda_time
                n += 1
        row["kernel_ms"] = kern / 1e3
        row["kernels"] = n
        row["wall_over_kernel"] = wall * 1e3 / (kern / 1e3) if kern > 0 else None
    except Exception as ex:  # noqa: BLE001
        row["profiler_error"] = str(ex)[:200]
    print(json.dumps(row), flush=True)
    return row


def main():
    torch.manual_seed(0)
    res = {"started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    pr = torch.cuda.get_device_properties(0)
    res["env"] = {"gpu": pr.name, "torch": torch.__version__,
                  "cpu": subprocess.run(["sh", "-c", "lscpu | grep 'Model name'"], capture_output=True,
                                        text=True).stdout.strip()}
    x = torch.zeros(1, device=DEV)
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(5000):
        x.add_(1)
    torch.cuda.synchronize()
    res["env"]["eager_tiny_op_us"] = (time.perf_counter() - t0) / 5000 * 1e6
    rows = []
    for T in (4096, 8192):
        for sync in (True, False):
            layers = None
            try:
                layers = [Layer(2048, 32, 4, 768, True, sync=sync) for _ in range(4)]
                rows.append(run_case("qwen3-30b-a3b moe " + ("sync" if sync else "nosync"), layers, T))
            except Exception as ex:  # noqa: BLE001
                rows.append({"case": "qwen3 sync=%s" % sync, "tokens": T, "error": str(ex)[:300]})
            del layers
            torch.cuda.empty_cache()
        layers = None
        try:
            layers = [Layer(4096, 32, 8, 14336, False) for _ in range(4)]
            rows.append(run_case("llama3-8b dense", layers, T))
        except Exception as ex:  # noqa: BLE001
            rows.append({"case": "llama3-8b", "tokens": T, "error": str(ex)[:300]})
        del layers
        torch.cuda.empty_cache()
        res["rows"] = rows
        json.dump(res, open(sys.argv[1], "w"), indent=1)
    json.dump(res, open(sys.argv[1], "w"), indent=1)


if __name__ == "__main__":
    main()
