#!/usr/bin/env python3
"""Held-out probe: where more published expert layouts rank in `stagecraft plan`.

Issue 23's "Done means" asks that a published expert layout the planner
was not tuned on, run on its own job, rank within 10% of the plan's best.
published_layouts.py (docs/plan.md, "published-layouts") checks five
entries; this script probes others: Megatron-Bridge / NeMo / DGX Cloud
performance rows already encoded, with their sources, in
tests/fidelity/megatron-h100-{bf16,fp8,moe}.json, and Megatron-LM's own
README benchmark (tests/fidelity/megatron-lm-readme-h100.json). Each row becomes its
job exactly as tests/fidelity/table.py's step_job builds it (the recipe's
flags, precision, FP8 recipe, dispatcher, hardware); the plan's job is
that job less its parallel layout and the per-layout training keys
(micro_batch_size, schedule, recompute), as published_layouts.entry_jobs
does, keeping the non-searched parallel settings the plan reads from the
job (moe_dispatcher, cp_algorithm) and turning tp_comm_overlap on where
the recipe turns it on whenever tp > 1.

For each entry it runs `plan` on the job's GPUs and `simulate` on the
published layout, and prints published_layouts.py's row (rank, gap), then
(with --detail) the simulate breakdown of the published layout and of the
plan's best (step, busy, bubble, exposed tp / cp / ep / pp / dp per
stage), the published layout's memory against the plan's usable memory,
and the plan's low-confidence notes on its best.

With --memory it runs no plan: for each entry it prints the published
layout's row of docs/plan.md's memory check ("Checked against every
published layout that ran"): summary.json's `peak` and `peak_live` of the
most loaded stage, the plan's usable memory and the two margins.

Usage: published_probe.py [--cli PATH] [--only NAME ...] [--top N]
                          [--threads N] [--time-limit S] [--detail]
                          [--memory-gib G --reserve-gib R]   (a what-if on memory)
       published_probe.py --memory [--only NAME ...]
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests/fidelity"))
import published_layouts as pl  # noqa: E402  (label, plan_label, run)
import table  # noqa: E402  (step_job: a fidelity row -> its job)

GIB = 1024 ** 3
# The plan's default memory reserve on an H100 (docs/plan.md, "The memory
# reserve"; core/plan/memory_reserve.h): CUDA context 512 MiB + cuBLAS
# workspaces 32 MiB + 4 x (32 MiB + 1 KiB) + NCCL 4 x 32 x (4 MiB + 4,915,200
# + 524,288 B).
RESERVE_BYTES = (512 << 20) + (32 << 20) + 4 * ((32 << 20) + 1024) + 4 * 32 * ((4 << 20) + 4915200 + 524288)

# Each entry names a row of a fidelity spec; the row carries its source
# (the release: dgxc-v24.11.1 = DGX Cloud Benchmarking 24.11.1 Megatron
# recipes, mbridge-25.11 / -26.06 = Megatron-Bridge performance summaries,
# nemo-25.04 = NeMo 25.04 / dgxc-v25.05.04) and its recipe's flags with
# the file they are read from (the spec's "recipes" and "sources").
ENTRIES = [
    # DGX Cloud Benchmarking 24.11.1, Nemotron-4 15B BF16, 16 x H100:
    # tp4 (sequence parallel) mbs 4, gbs 64, seq 4096 (nemotron4_15b.yaml).
    {"name": "nemotron4-15b-bf16-16", "spec": "megatron-h100-bf16", "row": "Nemotron-4 15B, 16 GPUs",
     "source": "dgxc-v24.11.1"},
    # NeMo 25.04 (dgxc-v25.05.04), Nemotron-4 15B FP8, 16 x H100: tp2 mbs 2.
    {"name": "nemotron4-15b-fp8-16", "spec": "megatron-h100-fp8", "row": "Nemotron-4 15B, 16 GPUs",
     "source": "dgxc-v25.05.04"},
    # DGX Cloud Benchmarking 24.11.1, Llama 3.1 8B FP8, 8 x H100: cp2.
    {"name": "llama31-8b-fp8-8", "spec": "megatron-h100-fp8", "row": "Llama 3.1 8B, 8 GPUs"},
    # Megatron-Bridge 25.11 summary, Llama 3 70B FP8, 64 x H100: tp4 pp8 v5.
    {"name": "llama3-70b-fp8-64", "spec": "megatron-h100-fp8", "row": "Llama 3 70B, 64 GPUs"},
    # DGX Cloud Benchmarking 24.11.1, Llama 3.1 70B FP8, 64 x H100: tp4 cp2 pp4 v5.
    {"name": "llama31-70b-fp8-64", "spec": "megatron-h100-fp8", "row": "Llama 3.1 70B, 64 GPUs"},
    # DGX Cloud Benchmarking 24.11.1, GPT-3 175B BF16, 128 x H100: tp4 pp8 v12, seq 2048.
    {"name": "gpt3-175b-bf16-128", "spec": "megatron-h100-bf16", "row": "GPT-3 175B, 128 GPUs"},
    # DGX Cloud Benchmarking 24.11.1, Nemotron-4 340B BF16, 128 x H100: tp8 pp8 v12, gbs 32.
    {"name": "nemotron4-340b-bf16-128", "spec": "megatron-h100-bf16", "row": "Nemotron-4 340B, 128 GPUs"},
    # Megatron-Bridge 26.06 summary, Qwen3 30B-A3B FP8, 16 x H100: ep16.
    {"name": "qwen3-30b-a3b-fp8-16", "spec": "megatron-h100-moe", "row": "Qwen3 30B-A3B, 16 GPUs, ep 16"},
    # Megatron-Bridge 26.02.01 summary, the same Qwen3 30B-A3B job (B 1024)
    # in another published layout: pp2 v12 ep8 (the all-to-all inside a node).
    {"name": "qwen3-30b-a3b-fp8-16-pp2", "spec": "megatron-h100-moe", "row": "Qwen3 30B-A3B, 16 GPUs, pp 2 x v 12, B 1024"},
    # Megatron-Bridge 26.04.01 summary, GPT-OSS 120B BF16, 64 x H100: pp4 ep8 mbs 1.
    {"name": "gpt-oss-120b-bf16-64", "spec": "megatron-h100-moe", "row": "GPT-OSS 120B, 64 GPUs, B 1280, b 1"},
    # Megatron-Bridge 25.11 summary, Qwen3 235B-A22B FP8, 256 x H100:
    # tp2 pp8 v4 ep32, embedding and loss counted in the pipeline split.
    {"name": "qwen3-235b-a22b-fp8-256", "spec": "megatron-h100-moe", "row": "Qwen3 235B-A22B, 256 GPUs, B 2048"},
    # DGX Cloud Benchmarking 25.05.04, DeepSeek-V3 BF16, 512 x H100: tp2 pp8 ep64, 7, 8 x 6, 6 layers.
    {"name": "deepseek-v3-bf16-512", "spec": "megatron-h100-moe", "row": "DeepSeek-V3, 512 GPUs"},
    # Megatron-LM's README (Megatron-Core r0.8.0, BF16, seq 4096): its GPT
    # weak-scaling layouts, micro-batch and interleaving as the fidelity
    # spec assumes them (docs/fidelity.md, "Megatron-LM's README").
    {"name": "mlm-gpt-1.7b-48", "spec": "megatron-lm-readme-h100", "row": "GPT 1.7B, 48 GPUs"},
    {"name": "mlm-gpt-7.1b-96", "spec": "megatron-lm-readme-h100", "row": "GPT 7.1B, 96 GPUs"},
    {"name": "mlm-gpt-16b-192", "spec": "megatron-lm-readme-h100", "row": "GPT 16B, 192 GPUs"},
    {"name": "mlm-gpt-32b-384", "spec": "megatron-lm-readme-h100", "row": "GPT 32B, 384 GPUs"},
    {"name": "mlm-gpt-70b-768", "spec": "megatron-lm-readme-h100", "row": "GPT 70B, 768 GPUs"},
    {"name": "mlm-gpt-177b-2304", "spec": "megatron-lm-readme-h100", "row": "GPT 177B, 2304 GPUs"},
    # NeMo's long-sequence table (session 18): Llama 2 7B in FP8 with
    # context parallelism at 32K, 128K and 1,024K tokens (docs/fidelity.md,
    # "NeMo's long-sequence table"); the plan keeps the recipe's ring CP.
    {"name": "nemo-ls-7b-32k-32", "spec": "nemo-long-sequence-h100", "row": "Llama 2 7B, 32K tokens, 32 GPUs, cp 2"},
    {"name": "nemo-ls-7b-128k-128", "spec": "nemo-long-sequence-h100", "row": "Llama 2 7B, 128K tokens, 128 GPUs, cp 4"},
    {"name": "nemo-ls-7b-1024k-1024", "spec": "nemo-long-sequence-h100",
     "row": "Llama 2 7B, 1024K tokens, 1024 GPUs, cp 32"},
    # NeMo 24.07's FP8 performance summary (session 18; docs/fidelity.md,
    # "NeMo 24.07's performance summary"): its pipelined and tp layouts.
    {"name": "nemo2407-gpt3-20b-64", "spec": "nemo-2407-h100-fp8", "row": "GPT3-20B, 64 GPUs"},
    {"name": "nemo2407-llama2-70b-64", "spec": "nemo-2407-h100-fp8", "row": "Llama 2 70B, 64 GPUs"},
    {"name": "nemo2407-nemotron-22b-64", "spec": "nemo-2407-h100-fp8", "row": "Nemotron 22B, 64 GPUs"},
    {"name": "nemo2407-llama3-70b-64", "spec": "nemo-2407-h100-fp8", "row": "Llama 3 70B, 64 GPUs"},
    # Nemotron-4 340B's own pre-training stage on 6,144 H100 (session 22;
    # docs/fidelity.md, "Nemotron-4 340B's own pre-training run").
    {"name": "nemotron4-340b-report-6144", "spec": "nemotron4-340b-report", "row": "Nemotron-4 340B, 6144 GPUs, B 2304"},
]

LAYOUT_TRAINING = ("micro_batch_size", "schedule", "recompute")
KEPT_PARALLEL = ("moe_dispatcher", "cp_algorithm")  # read by the plan from the job, not searched


def entry_jobs(e):
    """(base job for plan, the published layout's job, gpus, the fidelity row, its spec)."""
    spec = json.load(open(os.path.join(ROOT, "tests/fidelity", e["spec"] + ".json")))
    rows = [r for r in spec["rows"] if r["name"] == e["row"] and r["source"] == e.get("source", r["source"])]
    if len(rows) != 1:
        raise SystemExit(f"{e['name']}: {len(rows)} rows named {e['row']!r} in {e['spec']}")
    row = rows[0]
    pub = table.step_job(spec, row)
    base = json.loads(json.dumps(pub))
    base["parallel"] = {k: v for k, v in pub["parallel"].items() if k in KEPT_PARALLEL}
    if not base["parallel"]:
        del base["parallel"]
    for k in LAYOUT_TRAINING:
        base["training"].pop(k, None)
    if spec["recipes"][row["recipe"]].get("tp_comm_overlap_if_tp"):
        base["training"]["tp_comm_overlap"] = True  # the recipe's userbuffers overlap, on whenever tp > 1
    fp8_only = fp8_params(row, pub["training"])
    if dfa_remainders(spec["recipes"][row["recipe"]], pub["training"], fp8_only):
        for j in (base, pub):
            j["training"]["optimizer_bytes_per_param"] = 10
    if fp8_only:
        for j in (base, pub):
            j["training"]["fp8_params"] = True
    return base, pub, row["gpus"], row, spec


def dfa_remainders(recipe, training, fp8_only):
    """Whether the recipe's optimizer keeps 10 bytes of state per parameter, not 12.

    DGX Cloud Benchmarking 24.11.1's recipes, and NeMo-Framework-Launcher's
    behind NeMo 24.03.01's and 24.07's performance tables, are NeMo 1 yaml
    files with `optim.name: distributed_fused_adam` (the recipe's "source"
    says so):
    Apex's DistributedFusedAdam through NeMo's MegatronDistributedFusedAdam.
    With bf16 model weights (megatron_amp_O2, no fp8_params) NeMo's
    setup_optimization (nemo/collections/nlp/models/language_modeling/
    megatron_base_model.py: optimizer dtype fp32, model dtype bf16) sets
    store_params=False, store_param_remainders=True: the fp32 master weight
    is the bf16 weight plus a 16-bit remainder, so each dp shard holds
    2 (remainder) + 4 + 4 (Adam moments) = 10 bytes per parameter instead of
    Megatron-LM's distributed optimizer's 4 + 4 + 4 = 12 (docs/plan.md,
    "Memory you can check"). An FP8 run keeps bf16 model weights, and so the
    remainders, unless its weights are FP8 only (fp8_params, below: the
    DGX Cloud v24.11.1 FP8 runs, whose optimizer then keeps the fp32
    master, 12 bytes).
    """
    return ("distributed_fused_adam" in recipe.get("source", "") and training.get("dtype") == "bf16"
            and not fp8_only)


def fp8_params(row, training):
    """Whether the FP8 run keeps its linear weights in FP8 only (training.fp8_params).

    dgxc-v24.11.1: llama3.1/configure.sh and nemotron/configure.sh pass
    `+model.fp8_params=$FP8_ENABLED` (NeMo 1: the model built under TE's
    fp8_model_init; the fidelity spec notes the same for GPT-3 175B).
    dgxc-v25.05.04 (NeMo 25.04 scripts/performance, default recipe 'ds'):
    nemo/collections/llm/recipes/precision/mixed_precision.py
    bf16_with_fp8_mixed sets fp8_param_gather=True, which the
    MegatronMixedPrecision plugin passes on as fp8_param.
    mbridge-25.11 (fp8_cs): Megatron-Bridge's bf16_with_fp8_current_scaling_mixed
    sets fp8_param_gather=True, kept equal to fp8_param
    (src/megatron/bridge/training/mixed_precision.py). Other releases are
    not read and stay at false.
    """
    return bool(training.get("fp8_recipe")) and row["source"] in ("dgxc-v24.11.1", "dgxc-v25.05.04", "mbridge-25.11")


def cpu_of_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def stage_lines(sim):
    out = []
    for s in sim["stages"]:
        e = s["exposed_comm_seconds"]
        out.append(f"    stage {s['stage']:>2} rank {s['rank']:>5}: busy {s['busy_seconds']:.3f} bubble "
                   f"{s['bubble_seconds']:.3f} exposed tp {e['tp']:.3f} cp {e['cp']:.3f} ep {e['ep']:.3f} "
                   f"pp {e['pp']:.3f} dp {e['dp']:.3f} end {s['end_seconds']:.3f}")
    return out


def peak_live(cli, path):
    """(largest peak_live over the stages, its fp8_weight_copies, capacity) from inspect (summary.json)."""
    ins = pl.run(cli, ["inspect", "--config", path, "--json"])
    m = max((s["memory_bytes"] for s in ins["stages"]), key=lambda m: m["peak_live"])
    return m["peak_live"], m.get("fp8_weight_copies", 0), m["capacity"]


def memory_row(cli, e, reserve_gib=None):
    """docs/plan.md's memory-check row of the entry's published layout (inspect, no plan)."""
    _, pub, _, _, _ = entry_jobs(e)
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "pub.json")
        json.dump(pub, open(path, "w"))
        ins = pl.run(cli, ["inspect", "--config", path, "--json"])
    m = max((s["memory_bytes"] for s in ins["stages"]), key=lambda m: m["peak_live"])
    usable = m["capacity"] - (reserve_gib * GIB if reserve_gib is not None else RESERVE_BYTES)
    par, t = pub["parallel"], pub["training"]
    label = pl.label(par, t) + (" fp8_params" if t.get("fp8_params") else "")
    return (f"| {e['name']} (probe) | {label} | {m['peak'] / GIB:.2f} | {m['peak_live'] / GIB:.2f} | "
            f"{usable / GIB:.2f} | {(usable - m['peak_live']) / GIB:+.2f} | {(m['capacity'] - m['peak_live']) / GIB:+.2f} |")


def pinned_plan(cli, base_path, pub, gpus, threads, reserve_gib=None):
    """The plan run with every searched dimension pinned to the published layout's: its own
    verdict on that layout (fits or not by its memory estimate, its step), where the plan's
    space holds it (an uneven pipeline_layout other than its own splits is not)."""
    par, tr = pub["parallel"], pub["training"]
    args = ["plan", "--config", base_path, "--gpus", str(gpus), "--top", "3", "--json", "--progress", "none",
            "--threads", str(threads), "--tp", str(par.get("tp", 1)), "--cp", str(par.get("cp", 1)),
            "--pp", str(par.get("pp", 1)), "--vp", str(par.get("virtual_stages", 1)), "--dp", str(par.get("dp", 1)),
            "--mbs", str(tr.get("micro_batch_size", 1)), "--zero", str(par.get("zero", 0)),
            "--recompute", tr.get("recompute", "none"), "--schedules", tr.get("schedule", "1f1b")]
    if par.get("ep", 1) > 1:
        args += ["--ep", str(par["ep"])]
    if reserve_gib is not None:
        args += ["--memory-reserve-gib", str(reserve_gib)]
    p = subprocess.run([cli] + args, capture_output=True, text=True)
    try:  # plan exits 1 when nothing fits, with its JSON on stdout
        d = json.loads(p.stdout)
    except ValueError:
        return f"pinned plan: exit {p.returncode}: {p.stderr.strip()[-300:]}"
    if d["candidates"]:
        c = d["candidates"][0]
        return (f"pinned plan: fits by the plan's estimate, {pl.plan_label(c['layout'])} step "
                f"{c['step_seconds']:.3f}, peak {c['peak_memory_bytes'] / GIB:.1f} GiB")
    miss = "; ".join(m.get("reason", json.dumps(m))[:200] for m in d.get("closest_misses", [])[:2])
    if not d["counts"]["considered"]:
        return ("pinned plan: the layout is not in the plan's space (0 layouts considered: "
                "its virtual stages do not split the layers evenly, nor with empty end chunks)")
    return f"pinned plan: nothing fits (counts {json.dumps(d.get('counts'))}); closest misses: {miss}"


def probe(cli, e, a):
    base, pub, gpus, row, spec = entry_jobs(e)
    if a.memory_gib:  # what-if: the GPU's memory as PyTorch reports it, not the profile's
        for j in (base, pub):
            j["hardware"] = {"preset": j["hardware"], "memory_bytes": a.memory_gib * GIB}
    detail = []
    with tempfile.TemporaryDirectory() as d:
        bp, pp_, best_p = (os.path.join(d, n) for n in ("base.json", "pub.json", "best.json"))
        json.dump(base, open(bp, "w"))
        json.dump(pub, open(pp_, "w"))
        args = ["plan", "--config", bp, "--gpus", str(gpus), "--top", str(a.top), "--json", "--progress", "none",
                "--threads", str(a.threads)]
        if a.time_limit:
            args += ["--time-limit", str(a.time_limit)]
        if a.reserve_gib is not None:
            args += ["--memory-reserve-gib", str(a.reserve_gib)]
        c0, w0 = cpu_of_children(), time.time()
        plan = pl.run(cli, args)
        plan_cpu, plan_wall = cpu_of_children() - c0, time.time() - w0
        sim = pl.run(cli, ["simulate", "--config", pp_, "--json"])
        cands = plan["candidates"]
        if a.detail:
            live, fp8c, cap = peak_live(cli, pp_)
            usable = cap - (a.reserve_gib * GIB if a.reserve_gib is not None else RESERVE_BYTES)
            detail.append(f"  plan: {' '.join(args[1:])}; {'complete' if plan.get('complete') else 'INCOMPLETE'}; "
                          f"{plan_cpu:.1f} s CPU, {plan_wall:.1f} s wall; counts {json.dumps(plan.get('counts'))}")
            real = table.published_step_seconds(spec, row)
            detail.append(f"  published run's own step {real:.3f} s ({row['source']}): simulate is "
                          f"{100 * (sim['step_seconds'] / real - 1):+.1f}% on it; the plan's best is "
                          + (f"{100 * (cands[0]['step_seconds'] / real - 1):+.1f}% against it" if cands else "–"))
            detail.append(f"  published: step {sim['step_seconds']:.3f} mfu {sim['mfu']:.3f} bubble "
                          f"{sim['bubble_fraction']:.3f}; peak_live {live / GIB:.1f} GiB of {usable / GIB:.1f} usable"
                          f" ({'fits' if live <= usable else 'over'}; of it fp8 weight copies {fp8c / GIB:.1f} GiB)")
            detail.append("  " + pinned_plan(cli, bp, pub, gpus, a.threads, a.reserve_gib))
            detail += stage_lines(sim)
            if cands:
                json.dump(cands[0]["job"], open(best_p, "w"))
                bsim = pl.run(cli, ["simulate", "--config", best_p, "--json"])
                detail.append(f"  plan's best: step {bsim['step_seconds']:.3f} mfu {bsim['mfu']:.3f} bubble "
                              f"{bsim['bubble_fraction']:.3f}; peak {cands[0]['peak_memory_bytes'] / GIB:.1f} GiB; "
                              f"{cands[0]['bound']}")
                detail += stage_lines(bsim)
                for n in cands[0].get("low_confidence", []):
                    detail.append(f"  low confidence (best): {n}")
                if plan.get("why_winner"):
                    detail.append(f"  why winner: {json.dumps(plan['why_winner'])[:1200]}")
    step = sim["step_seconds"]
    if not cands:
        best, best_step, rank, gap = "(nothing fits)", "–", "–", "–"
    else:
        best, best_step = pl.plan_label(cands[0]["layout"]), cands[0]["step_seconds"]
        if cands[0]["layout"]["ep"] > 1:
            best += f" ep{cands[0]['layout']['ep']} etp{cands[0]['layout']['expert_tp']}"
        faster = sum(1 for c in cands if c["step_seconds"] < step)
        rank = f"> {len(cands)}" if faster == len(cands) and len(cands) >= a.top else str(faster + 1)
        gap = f"{100 * (step / best_step - 1):+.1f}%"
        best_step = f"{best_step:.3f}"
    t = pub["training"]
    label = pl.label(pub["parallel"], t)
    if pub["parallel"].get("ep", 1) > 1:
        label += f" ep{pub['parallel']['ep']}"
    prec = "fp8 " + t["fp8_recipe"] if t.get("fp8_recipe") else t["dtype"]
    model = pub["model"].get("preset") or pub["model"].get("name") or row["model"]
    job = f"{model}, {gpus} x h100, seq {t['seq_len']}, batch {t['global_batch_size']}, {prec}"
    src = f"{row['source']} '{row['name']}' ({e['spec']}.json)"
    if not plan.get("complete", True):
        gap += " (search incomplete)"  # in the gap's cell: the table has eight columns
    r = f"| {e['name']} ({src}) | {job} | {label} | {step:.3f} | {best} | {best_step} | {rank} | {gap} |"
    return r, detail


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("STAGECRAFT_CLI", os.path.join(ROOT, "build/native/stagecraft")))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--time-limit", type=float)
    ap.add_argument("--detail", action="store_true")
    ap.add_argument("--memory-gib", type=float, help="what-if: hardware.memory_bytes of both jobs, in GiB")
    ap.add_argument("--reserve-gib", type=float, help="what-if: plan --memory-reserve-gib")
    ap.add_argument("--memory", action="store_true", help="print each entry's memory-check row only (no plan)")
    a = ap.parse_args()
    entries = [e for e in ENTRIES if not a.only or e["name"] in a.only]
    if a.only and len(entries) != len(a.only):
        raise SystemExit(f"unknown entry in {a.only}")
    if a.memory:
        print("| entry | published layout | `peak` GiB | `peak_live` GiB | usable GiB | margin GiB | of the GPU |\n"
              "|---|---|---:|---:|---:|---:|---:|", flush=True)
        for e in entries:
            print(memory_row(a.cli, e, a.reserve_gib), flush=True)
        return
    print(pl.HEADER, flush=True)
    for e in entries:
        r, detail = probe(a.cli, e, a)
        print(r, flush=True)
        for line in detail:
            print(line, flush=True)


if __name__ == "__main__":
    main()
