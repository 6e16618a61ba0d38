#!/usr/bin/env python3
"""Serving memory by hand: KV-cache bytes per token, weights per rank and
the sequences that fit, from a model's published config.json, compared
with `stagecraft inspect --json`.

usage: serving_memory.py CLI            check every job of JOBS (exit 1 on a mismatch)
       serving_memory.py --examples     print docs/inference.md's worked examples

Independent of the C++ core: the formulas below are written from the
models' papers and modelling code (which tensor a layer caches, which
weight tensor parallelism splits), Python 3 standard library only. The
engine's own workspace figure (activations + workspace per rank) is the
one number taken from its output: the check then verifies that the
sequences it reports are exactly those whose cache fits beside it.

The sequences that fit are summed over the attention-dp ranks (each
caches its own sequences), as summary.inference.max_concurrent_sequences
counts them.

Conventions (docs/inference.md, "Formulas"):
- KV cache per token, whole model, all layers: GQA/MQA/MHA 2 (K and V)
  x layers x kv_heads x head_dim x dtype bytes; MLA (DeepSeek) layers x
  (kv_lora_rank + qk_rope_head_dim) x dtype bytes: the compressed latent
  and the shared RoPE key are what is cached, not per-head K and V.
- Per rank: tensor parallelism splits the KV heads (a rank holds
  max(kv_heads / tp, 1) heads: with tp > kv_heads they are replicated);
  MLA's latent has no head axis, so every tp rank holds all of it.
- Weights: vocab-parallel embedding and output layer (V/tp rows each),
  Megatron column/row splits of attention and MLP over tp, routed experts
  over ep (E/ep per rank) and expert tp, norms and the router replicated;
  MLA's down-projections (q_a, kv_a) and their norms replicated, the
  up-projections (q_b, kv_b) and the output projection split by heads.
- Paged cache: a sequence of n tokens takes ceil(n / page) pages of page
  tokens.
"""
import json
import math
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.dirname(os.path.dirname(HERE))
BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}


def config(name):
    for d in (os.path.join(HERE, "serving"), os.path.join(SRC, "tests", "fixtures", "hf")):
        p = os.path.join(d, name + ".config.json")
        if os.path.exists(p):
            return json.load(open(p))
    raise SystemExit(f"no config {name}")


def is_mla(c):
    return bool(c.get("kv_lora_rank"))


def head_dim(c):
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def kv_bytes_per_token(c, kv_dtype):
    """Whole model, all layers, one token."""
    b = BYTES[kv_dtype]
    L = c["num_hidden_layers"]
    if is_mla(c):
        return L * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * b
    kv = c.get("num_key_value_heads") or c["num_attention_heads"]
    return 2 * L * kv * head_dim(c) * b


def kv_bytes_per_token_per_rank(c, kv_dtype, tp, layers=None):
    b = BYTES[kv_dtype]
    L = layers if layers is not None else c["num_hidden_layers"]
    if is_mla(c):
        return L * (c["kv_lora_rank"] + c["qk_rope_head_dim"]) * b
    kv = c.get("num_key_value_heads") or c["num_attention_heads"]
    return 2 * L * max(kv // tp, 1) * head_dim(c) * b


def moe_layer(c, i):
    if c.get("n_routed_experts"):  # deepseek
        return i >= c.get("first_k_dense_replace", 0) and i % c.get("moe_layer_freq", 1) == 0
    return bool(c.get("num_local_experts"))  # mixtral: every layer


def weights_params_per_rank(c, tp, ep=1, etp=None):
    """Parameters held by one rank of a pp=1 job (the largest rank)."""
    etp = tp if etp is None else etp
    h, L, a = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"]
    V = c["vocab_size"]
    tied = c.get("tie_word_embeddings", False)
    n = V * h // tp * (1 if tied else 2) + h  # embedding (+ output layer) + final norm
    for i in range(L):
        n += 2 * h  # input and post-attention norms
        if is_mla(c):
            qr, kvr, dr = c.get("q_lora_rank") or 0, c["kv_lora_rank"], c["qk_rope_head_dim"]
            dn, dv = c["qk_nope_head_dim"], c["v_head_dim"]
            q = (h * qr + qr + qr * a * (dn + dr) // tp) if qr else h * a * (dn + dr) // tp
            n += q + h * (kvr + dr) + kvr + kvr * a * (dn + dv) // tp + a * dv * h // tp
        else:
            kv, d = c.get("num_key_value_heads") or a, head_dim(c)
            n += h * a * d // tp + 2 * h * max(kv // tp, 1) * d + a * d * h // tp
        if moe_layer(c, i):
            E = c.get("n_routed_experts") or c["num_local_experts"]
            fe = c.get("moe_intermediate_size") or c["intermediate_size"]
            n += h * E  # router, replicated
            if c.get("topk_method") == "noaux_tc":
                n += E  # DeepSeek-V3's routing correction bias
            n += E // ep * 3 * h * fe // etp
            n += (c.get("n_shared_experts") or 0) * 3 * h * fe // tp
        else:
            n += 3 * h * c["intermediate_size"] // tp
    return n


def seq_bytes_per_rank(c, kv_dtype, tp, tokens, page):
    pages = math.ceil(tokens / page)
    return pages * page * kv_bytes_per_token_per_rank(c, kv_dtype, tp)


def fit(capacity, weights, workspace, per_seq):
    return int(max(0, (capacity - weights - workspace) // per_seq))


# ---------------------------------------------------------------- examples
GB = 1e9
# What CUDA reports on the lent GPUs (torch total_memory; docs/hardware.md).
H100 = 85_017_493_504  # H100 SXM 80GB HBM3: 79.18 GiB
H200 = 150_109_880_320  # H200 141GB: 139.80 GiB


def examples():
    rows = []
    for name, title in [("meta-llama-3-70b", "Llama 3 70B (GQA: 64 query heads, 8 KV heads)"),
                        ("llama-3.1-8b", "Llama 3 8B (GQA: 32 query heads, 8 KV heads)"),
                        ("deepseek-v3", "DeepSeek-V3 (MLA: latent 512 + RoPE key 64)"),
                        ("deepseek-coder-v2-lite-base", "DeepSeek-V2-Lite (MLA: latent 512 + RoPE key 64)")]:
        c = config(name)
        print(f"## {title}")
        for kvd in ("bf16", "fp8"):
            t = kv_bytes_per_token(c, kvd)
            print(f"  kv/token {kvd}: {t:,} B ({t / 1024:.2f} KiB); per 8K sequence {t * 8192:,} B ({t * 8192 / 2**30:.3f} GiB)")
        for tp, cap, gpu in ((8, H100, "H100"), (8, H200, "H200"), (1, H100, "H100")):
            for wd in ("bf16", "fp8"):
                w = weights_params_per_rank(c, tp) * BYTES[wd]
                free = cap - w
                line = f"  tp {tp} {gpu} weights {wd}: {w:,} B/rank ({w / GB:.2f} GB), free {free / GB:.2f} GB"
                for kvd in ("bf16", "fp8"):
                    s = seq_bytes_per_rank(c, kvd, tp, 8192, 1)
                    line += f"; kv {kvd} 8K seq/rank {s / 1e6:.1f} MB -> {max(0, free // s):.0f}"
                print(line)
        if c.get("n_routed_experts"):
            # DP attention: tp 1, each of the dp ranks caches its own
            # sequences; the routed experts spread over ep = dp ranks.
            for dp, cap, gpu in ((8, H100, "H100"), (8, H200, "H200")):
                for wd in ("bf16", "fp8"):
                    w = weights_params_per_rank(c, 1, dp, 1) * BYTES[wd]
                    free = cap - w
                    line = f"  dp {dp} x ep {dp} {gpu} weights {wd}: {w:,} B/rank ({w / GB:.2f} GB), free {free / GB:.2f} GB"
                    for kvd in ("bf16", "fp8"):
                        s = seq_bytes_per_rank(c, kvd, 1, 8192, 1)
                        n = max(0, free // s)
                        line += f"; kv {kvd} -> {n:.0f} per rank, {n * dp:.0f} in all"
                    print(line)
        rows.append(name)


# ---------------------------------------------------------------- the check
# (name, config, parallel, serving, hardware): GQA, MHA, MLA, MoE, fp8.
JOBS = [
    ("Llama 3 70B, tp 8, 8K context (GQA)", "meta-llama-3-70b", {"tp": 8},
     {"prompt_tokens": 7680, "output_tokens": 512}, "h100"),
    ("Llama 3 70B, tp 8, fp8 weights and KV cache", "meta-llama-3-70b", {"tp": 8},
     {"prompt_tokens": 7680, "output_tokens": 512, "weights_dtype": "fp8", "kv_dtype": "fp8"}, "h100"),
    ("Llama 3.1 8B, tp 1, fp8 KV cache, 256-token pages", "llama-3.1-8b", {"tp": 1},
     {"prompt_tokens": 5000, "output_tokens": 500, "kv_dtype": "fp8", "page_tokens": 256}, "h100"),
    ("Llama 2 7B, tp 2 (MHA)", "llama-2-7b", {"tp": 2},
     {"prompt_tokens": 2048, "output_tokens": 2048}, "h100"),
    ("DeepSeek-V2-Lite, tp 1 (MLA, MoE)", "deepseek-coder-v2-lite-base", {"tp": 1},
     {"prompt_tokens": 8000, "output_tokens": 192}, "h100"),
    ("DeepSeek-V2-Lite, DP attention 2 x ep 2, fp8 KV cache (MLA, MoE)", "deepseek-coder-v2-lite-base",
     {"tp": 1, "dp": 2, "ep": 2, "expert_tp": 1},
     {"prompt_tokens": 4096, "output_tokens": 1024, "kv_dtype": "fp8"}, "h100"),
    ("DeepSeek-V2-Lite, DP attention 2 x ep 2, fp8 KV cache, 512 sequences", "deepseek-coder-v2-lite-base",
     {"tp": 1, "dp": 2, "ep": 2, "expert_tp": 1},
     {"prompt_tokens": 4096, "output_tokens": 1024, "kv_dtype": "fp8", "concurrency": 512}, "h100"),
    ("Mixtral 8x7B, DP attention 2 x ep 2 (GQA, MoE)", "mixtral-8x7b-v0.1", {"tp": 1, "dp": 2, "ep": 2, "expert_tp": 1},
     {"prompt_tokens": 4096, "output_tokens": 512}, "h100"),
    ("Mixtral 8x7B, tp 2, expert tp 2 (GQA, MoE over the tp ranks)", "mixtral-8x7b-v0.1",
     {"tp": 2, "ep": 1, "expert_tp": 2}, {"prompt_tokens": 4096, "output_tokens": 512}, "h100"),
    ("Mixtral 8x7B, tp 4, ep 4 over the tp ranks, fp8 weights", "mixtral-8x7b-v0.1",
     {"tp": 4, "ep": 4, "expert_tp": 1}, {"prompt_tokens": 4096, "output_tokens": 512, "weights_dtype": "fp8"}, "h100"),
    ("DeepSeek-V2-Lite, tp 2, expert tp 2 (MLA latent replicated, shared experts over tp)", "deepseek-coder-v2-lite-base",
     {"tp": 2, "ep": 1, "expert_tp": 2}, {"prompt_tokens": 4096, "output_tokens": 1024}, "h100"),
    ("DeepSeek-V3, DP attention 8 x ep 8, fp8 weights, H200 (MLA, MoE)", "deepseek-v3",
     {"tp": 1, "dp": 8, "ep": 8, "expert_tp": 1},
     {"prompt_tokens": 7680, "output_tokens": 512, "weights_dtype": "fp8"}, "h200"),
]
CAPACITY = {"h100": H100, "h200": H200}


def inspect(cli, job):
    path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"serving-memory-{os.getpid()}.json")
    with open(path, "w") as f:
        json.dump(job, f)
    try:
        out = subprocess.run([cli, "inspect", "--config", path, "--json"], capture_output=True, text=True)
    finally:
        os.remove(path)
    if out.returncode != 0:
        return None, out.stderr.strip()
    return json.loads(out.stdout), None


def check(cli):
    failures = 0
    for name, cfg_name, par, serving, hw in JOBS:
        c = config(cfg_name)
        job = {"mode": "inference", "model": {"hf_config": c}, "parallel": par, "serving": serving, "hardware": hw}
        s, err = inspect(cli, job)
        if s is None:
            print(f"FAIL {name}: inspect failed: {err}")
            failures += 1
            continue
        inf = s["inference"]
        kvd, wd = serving.get("kv_dtype", "bf16"), serving.get("weights_dtype", "bf16")
        tp, ep, etp = par.get("tp", 1), par.get("ep", 1), par.get("expert_tp", par.get("tp", 1))
        tokens = serving["prompt_tokens"] + serving["output_tokens"]
        page = serving.get("page_tokens", 16)
        want_kv = kv_bytes_per_token(c, kvd)
        want_w = weights_params_per_rank(c, tp, ep, etp) * BYTES[wd]
        per_seq = seq_bytes_per_rank(c, kvd, tp, tokens, page)
        mem = inf.get("memory_bytes_per_rank", {})
        workspace = int(mem.get("activations", 0))
        # Per rank, then over the attention-dp ranks: each caches only its
        # own sequences (docs/inference.md, "Summary").
        want_n = fit(CAPACITY[hw], want_w, workspace, per_seq) * par.get("dp", 1)
        rows = [("kv_cache_bytes_per_token", want_kv, inf["kv_cache_bytes_per_token"]),
                ("weights_bytes_per_rank", want_w, inf["weights_bytes_per_rank"]),
                ("max_concurrent_sequences", want_n, inf["max_concurrent_sequences"])]
        bad = [(k, w, g) for k, w, g in rows if w != g]
        status = "ok  " if not bad else "FAIL"
        print(f"{status} {name}: " + "; ".join(f"{k} {g:,} (by hand {w:,})" for k, w, g in rows) +
              f"; activations per rank {workspace:,} B, one sequence {per_seq:,} B per rank")
        failures += bool(bad)
    print(f"{len(JOBS) - failures} of {len(JOBS)} serving jobs match the hand formulas")
    return failures


def main():
    if len(sys.argv) > 1 and sys.argv[1] == "--examples":
        examples()
        return
    if len(sys.argv) != 2:
        raise SystemExit(__doc__)
    sys.exit(1 if check(sys.argv[1]) else 0)


if __name__ == "__main__":
    main()
