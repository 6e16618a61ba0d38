#!/usr/bin/env python3
"""The plan's memory estimate against published memory figures (issue 23 item 7).

Every row runs `stagecraft inspect --json` on a job and reads summary.json's
memory (the figures the plan's memory check uses: docs/plan.md step 4), and
computes the published figure from its formula:

- Korthikanti et al. 2022 (arXiv 2205.05198), Table 2: activation bytes per
  transformer layer and micro-batch, GPT-3 175B's layer (h 12288, a 96) at
  s 2048, b 1, t 8 (/work/shared/docs/reference-numbers.md); and the same
  with fused (flash) attention: the 5·a·s/h term replaced by the kernel's
  fp32 log-sum-exp;
- Megatron-LM's memory estimator (megatron/training/theoretical_memory_usage.py,
  NVIDIA/Megatron-LM): weights + gradients + optimizer of the most loaded
  rank, `6 + 12 / dp` bytes per parameter with the distributed optimizer,
  and the first stage's activations with sequence parallelism and selective
  recomputation, `s b h (18 + 4 ffn / h) / t` per layer, times the layers and
  the interleaving penalty `1 + (p - 1) / (p v)`;
- Meta's Llama 3 405B layout (Dubey et al. 2024, Table 4; the job of
  tests/fidelity/llama3-2024-table4.json with ZeRO-1): the same estimator.

docs/plan.md holds the table between the markers below; --check FILE
compares the rows run with the rows there (tests/ctest/plan_memory.sh runs
the Korthikanti rows).

- Nemotron-4 340B's DGX Cloud 24.11.1 layout (the job of published_probe.py's
  entry nemotron4-340b-bf16-128): every term of the most loaded stage against
  the estimator and against the run's own accounting (NeMo's
  distributed_fused_adam, the layer's saved tensors), derived by hand.
Usage: memory_check.py [--cli PATH] [--only korthikanti|megatron|meta|nemotron ...]
                       [--check docs/plan.md | --write docs/plan.md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- memory-check:begin (tests/plan/memory_check.py) -->"
END = "<!-- memory-check:end -->"
HEADER = ("| row | group | job | what | stagecraft | published formula | published | gap |\n"
          "|---|---|---|---|---:|---|---:|---:|")


def inspect(cli, job):
    with tempfile.TemporaryDirectory() as d:
        p = os.path.join(d, "job.json")
        json.dump(job, open(p, "w"))
        r = subprocess.run([cli, "inspect", "--config", p, "--json"], capture_output=True, text=True)
    if r.returncode != 0:
        raise SystemExit(f"inspect: exit {r.returncode}: {r.stderr.strip()}")
    return json.loads(r.stdout)


def mib(b):
    return f"{b / 2**20:,.1f} MiB"


def gib(b):
    return f"{b / 2**30:,.2f} GiB"


# --------------------------------------------------------------- Korthikanti
S, B, H, A, T = 2048, 1, 12288, 96, 8
SBH = S * B * H
KORTHIKANTI = [
    # name, tp, sp, recompute, formula text, bytes
    ("no parallelism", 1, False, "none", "s·b·h·(34 + 5·a·s/h)", SBH * (34 + 5 * A * S / H)),
    ("tensor parallel", T, False, "none", "s·b·h·(10 + 24/t + 5·a·s/(h·t))", SBH * (10 + 24 / T + 5 * A * S / (H * T))),
    ("tensor + sequence parallel", T, True, "none", "s·b·h·(34/t + 5·a·s/(h·t))", SBH * (34 / T + 5 * A * S / (H * T))),
    ("tensor parallel + selective recompute", T, False, "selective", "s·b·h·(10 + 24/t)", SBH * (10 + 24 / T)),
    ("tensor + sequence parallel + selective", T, True, "selective", "s·b·h·34/t", SBH * 34 / T),
    ("full recompute (tensor parallel)", T, False, "full", "2·s·b·h", 2 * SBH),
]
# With fused (flash) attention the 5·a·s/h term (scores, softmax, its dropout
# mask) is not stored; the kernel keeps its fp32 log-sum-exp, 4·a·s·b bytes,
# and its output is the projection's input (one buffer of the 34).
KORTHIKANTI_FLASH = [
    ("no parallelism, flash attention", 1, False, "none", "s·b·h·34 + 4·a·s·b", SBH * 34 + 4 * A * S * B),
    ("tensor + sequence parallel, flash attention", T, True, "none", "s·b·h·34/t + 4·a·s·b/t",
     SBH * 34 / T + 4 * A * S * B / T),
]


def korthikanti_rows(cli):
    rows = []
    for name, tp, sp, rc, text, want, flash in ([k + (False,) for k in KORTHIKANTI] +
                                                [k + (True,) for k in KORTHIKANTI_FLASH]):
        job = {"model": {"preset": "gpt3-175b", "num_layers": 2, "flash_attention": flash}, "hardware": "h100",
               "parallel": {"tp": tp, "sequence_parallel": sp},
               "training": {"seq_len": S, "global_batch_size": 1, "micro_batch_size": 1, "recompute": rc}}
        d = inspect(cli, job)
        have = d["stages"][0]["activation_bytes_by_layer"]["1"]
        label = f"gpt3-175b layer{', flash' if flash else ''}, tp{tp}{'+sp' if sp else ''}, rc-{rc}, s {S}, b {B}"
        rows.append(("korthikanti", f"Korthikanti Table 2: {name}", label, "activation bytes per layer",
                     have, text, want))
    return rows


# --------------------------------------------------------------- Megatron's estimator
def megatron_static(params_stage, dp):
    return params_stage * (6 + 12 / dp)


def megatron_rows(cli, meta_only=False):
    rows = []
    cases = []
    if not meta_only:
        cases.append(("megatron", "Llama 3 70B, tp4+sp pp4 v5 dp4 (Megatron-Bridge's 70B layout at cp 1)", {
            "model": {"preset": "llama3-70b", "flash_attention": True}, "hardware": "h100",
            "parallel": {"tp": 4, "sequence_parallel": True, "cp": 1, "pp": 4, "virtual_stages": 5, "dp": 4, "zero": 1},
            "training": {"seq_len": 8192, "global_batch_size": 128, "micro_batch_size": 1, "dtype": "bf16",
                         "grad_reduce_dtype": "fp32", "recompute": "selective", "schedule": "interleaved-1f1b"}}))
    with open(os.path.join(ROOT, "tests/fidelity/llama3-2024-table4.json")) as f:
        meta = json.load(f)["rows"][0]["job"]
    meta = json.loads(json.dumps(meta))
    meta["parallel"]["zero"] = 1
    meta["training"]["grad_reduce_dtype"] = "fp32"
    cases.append(("meta", "Meta's Llama 3 405B layout (Table 4), ZeRO-1", meta))
    for group, name, job in cases:
        d = inspect(cli, job)
        m = d["job"]["model"]
        p, t = d["job"]["parallel"], d["job"]["training"]
        tp, pp, v, dp = p["tp"], p["pp"], p.get("virtual_stages", 1), p["dp"] * p.get("cp", 1)
        s, b, h, ffn, L = t["seq_len"], t["micro_batch_size"], m["hidden"], m["ffn_hidden"], m["num_layers"]
        # The most loaded stage by summary.json's peak.
        st = max(d["stages"], key=lambda x: x["memory_bytes"]["peak_live"])
        mem = st["memory_bytes"]
        static = mem["weights"] + mem["gradients"] + mem["optimizer"]
        label = (f"{m['name']}, tp{tp}{'+sp' if p.get('sequence_parallel') else ''} cp{p.get('cp', 1)} pp{pp} v{v} "
                 f"dp{p['dp']} zero{p.get('zero', 0)}, s {s}, mbs {b}, stage {st['index']}")
        want_static = megatron_static(st["parameters_per_rank"], dp)
        rows.append((group, f"{name}: weights + gradients + optimizer", label,
                     "bytes of the most loaded stage", static, "params of the stage · (6 + 12/dp)", want_static))
        per_layer = s * b * h * (18 + 4 * ffn / h) / tp
        penalty = 1 + (pp - 1) / (pp * v) if v > 1 else 1
        # Megatron's first stage holds L / pp layers for pp micro-batches: L per-layer figures.
        want_act = per_layer * L * penalty
        rows.append((group, f"{name}: activations, first stage", label,
                     "saved-activation peak of the stage", st["memory_bytes"]["activations_peak"],
                     "s·b·h·(18 + 4·ffn/h)/t · L · (1 + (p−1)/(p·v))", want_act))
        have_layer = max(st["activation_bytes_by_layer"].values())
        rows.append((group, f"{name}: activations per layer", label, "bytes per layer and micro-batch",
                     have_layer, "s·b·h·(18 + 4·ffn/h)/t", per_layer))
        # What the plan checks a simulated layout with: summary.json's
        # peak_live (every buffer over the program, not only the saved ones).
        rows.append((group, f"{name}: peak memory", label, "peak_live of the stage (the plan's check)",
                     mem["peak_live"], "params · (6 + 12/dp) + the activations above", want_static + want_act))
    return rows


# --------------------------------------------------------------- Nemotron-4 340B
def nemotron_rows(cli):
    """DGX Cloud Benchmarking 24.11.1's Nemotron-4 340B layout on 128 H100 (tp8+sp pp8 v12 dp2,
    the job published_probe.py builds from tests/fidelity/megatron-h100-bf16.json, with NeMo's
    distributed_fused_adam at 10 optimizer bytes per parameter): every term of the most loaded
    stage against Megatron's estimator and against the run's own accounting, derived by hand."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import published_probe  # noqa: E402  (entry_jobs: the probe's job of the entry)
    entry = next(e for e in published_probe.ENTRIES if e["name"] == "nemotron4-340b-bf16-128")
    job = published_probe.entry_jobs(entry)[1]
    d = inspect(cli, job)
    m, p, t = d["job"]["model"], d["job"]["parallel"], d["job"]["training"]
    tp, pp, v, dp = p["tp"], p["pp"], p["virtual_stages"], p["dp"]
    s, b, h, ffn, L = t["seq_len"], t["micro_batch_size"], m["hidden"], m["ffn_hidden"], m["num_layers"]
    a, kv = m["num_heads"], m["num_kv_heads"]
    dh = h // a
    st = max(d["stages"], key=lambda x: x["memory_bytes"]["peak_live"])
    mem = st["memory_bytes"]
    n = st["parameters_per_rank"]
    static = mem["weights"] + mem["gradients"] + mem["optimizer"]
    label = (f"{m['name']}, tp{tp}+sp cp1 pp{pp} v{v} dp{dp} zero1, bf16 grads, optimizer "
             f"{t['optimizer_bytes_per_param']} B/param, s {s}, mbs {b}, stage {st['index']}")
    name = "Nemotron-4 340B, tp8+sp pp8 v12 dp2 (DGX Cloud 24.11.1's 128-GPU layout)"
    est_static = megatron_static(n, dp)
    run_static = n * (2 + 2 + 10 / dp)
    est_layer = s * b * h * (18 + 4 * ffn / h) / tp
    # The layer's saved tensors (selective recompute, sequence parallel, flash attention, no
    # dropout, squared ReLU): two norms' inputs and the QKV / fc1 GEMM inputs (4 x 2 s b h),
    # Q and the attention output (2 x 2 s b a d = 2 x 2 s b h), K and V (2 x 2 s b kv d), the
    # kernel's fp32 log-sum-exp (4 s b a), the ReLU output and its square (2 x 2 s b ffn); / t.
    run_layer = s * b * (12 * h + 4 * kv * dh + 4 * ffn + 4 * a) / tp
    have_layer = max(st["activation_bytes_by_layer"].values())
    rank = st["index"]
    in_flight = 2 * (pp - 1 - rank) + (v - 1) * pp + 1
    penalty = 1 + (pp - 1) / (pp * v)
    rows = [
        ("nemotron", f"{name}: weights + gradients + optimizer", label, "bytes of the most loaded stage", static,
         "params · (6 + 12/dp) (Megatron's estimator: fp32 grads, fp32 master)", est_static),
        ("nemotron", f"{name}: weights + gradients + optimizer", label, "bytes of the most loaded stage", static,
         "params · (2 + 2 + 10/dp) (NeMo's distributed_fused_adam: bf16 grads, 16-bit remainders)", run_static),
        ("nemotron", f"{name}: activations per layer", label, "bytes per layer and micro-batch", have_layer,
         "s·b·h·(18 + 4·ffn/h)/t (Megatron's estimator)", est_layer),
        ("nemotron", f"{name}: activations per layer", label, "bytes per layer and micro-batch", have_layer,
         "s·b·(12·h + 4·kv·d + 4·ffn + 4·a)/t (the layer's saved tensors)", run_layer),
        ("nemotron", f"{name}: layer-micro-batches in flight, first stage", label,
         "saved-activation peak / bytes per layer", mem["activations_peak"] / have_layer,
         "L · (1 + (p−1)/(p·v)) (estimator) = 2·(p−1−r) + (v−1)·p + 1 (schedule)", L * penalty, "count"),
        ("nemotron", f"{name}: activations, first stage", label, "saved-activation peak of the stage",
         mem["activations_peak"], "s·b·h·(18 + 4·ffn/h)/t · L · (1 + (p−1)/(p·v)) (estimator)", est_layer * L * penalty),
        ("nemotron", f"{name}: peak memory", label, "peak_live of the stage (the plan's check)", mem["peak_live"],
         "the estimator's static + activations", est_static + est_layer * L * penalty),
        ("nemotron", f"{name}: peak memory", label, "peak_live of the stage (the plan's check)", mem["peak_live"],
         "the run's static + saved tensors · in-flight count", run_static + run_layer * in_flight),
    ]
    return rows


def fmt(r):
    group, name, label, what, have, text, want = r[:7]
    if len(r) > 7 and r[7] == "count":
        return (f"| {name} | {group} | {label} | {what} | {have:.2f} | `{text}` | {want:.2f} | "
                f"{100 * (have / want - 1):+.1f}% |")
    f = mib if have < 2**31 else gib
    return (f"| {name} | {group} | {label} | {what} | {f(have)} | `{text}` | {f(want)} | "
            f"{100 * (have / want - 1):+.1f}% |")


def doc_rows(path):
    text = open(path).read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no memory-check markers")
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    return text, [l for l in block.strip().splitlines() if l.startswith("| ") and not l.startswith("| row")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("STAGECRAFT_CLI", os.path.join(ROOT, "build/native/stagecraft")))
    ap.add_argument("--only", nargs="*", choices=["korthikanti", "megatron", "meta", "nemotron"])
    ap.add_argument("--check")
    ap.add_argument("--write")
    a = ap.parse_args()
    groups = a.only or ["korthikanti", "megatron", "meta", "nemotron"]
    rows = []
    if "korthikanti" in groups:
        rows += korthikanti_rows(a.cli)
    if "megatron" in groups:
        rows += megatron_rows(a.cli)
    elif "meta" in groups:
        rows += megatron_rows(a.cli, meta_only=True)
    if "nemotron" in groups:
        rows += nemotron_rows(a.cli)
    rows = [r for r in rows if r[0] in groups]
    lines = [fmt(r) for r in rows]
    if a.check:
        _, have = doc_rows(a.check)
        bad = [l for l in lines if l not in have]
        for l in bad:
            print(f"{a.check}: no such row:\n  now: {l}")
        sys.exit(1 if bad else 0)
    if a.write:
        text, have = doc_rows(a.write)
        # Rows of groups not run this time are kept.
        keep = [h for h in have if h.split(" | ")[1] not in groups] + lines
        order = {"korthikanti": 0, "megatron": 1, "meta": 2, "nemotron": 3}
        keep.sort(key=lambda l: order[l.split(" | ")[1]])
        table = HEADER + "\n" + "\n".join(keep)
        text = text[:text.index(BEGIN) + len(BEGIN)] + "\n" + table + "\n" + text[text.index(END):]
        open(a.write, "w").write(text)
    print(HEADER)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
