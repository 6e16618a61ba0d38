#!/usr/bin/env python3
"""Where published expert layouts rank in `stagecraft plan` (issue 23 item 3).

For each entry below (a published layout on its own job, with its source),
runs `stagecraft plan` on the job's GPUs and `stagecraft simulate` on the
published layout, and prints one markdown row: the plan's best layout and
step, the published layout's step, its rank among the plan's candidates
(1 + the candidates strictly faster; "> TOP" when all TOP are faster) and
its gap to the best (published / best - 1). docs/plan.md holds the table
between the markers below; --check FILE compares the rows of the entries
run with the rows there (tests/ctest/plan_published.sh runs the cheapest).

Usage: published_layouts.py [--cli PATH] [--only NAME ...] [--top N]
                            [--check docs/plan.md | --write docs/plan.md]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BEGIN = "<!-- published-layouts:begin (tests/plan/published_layouts.py) -->"
END = "<!-- published-layouts:end -->"
HEADER = ("| entry | job | published layout | its step s | plan's best | best step s | rank | gap |\n"
          "|---|---|---|---:|---|---:|---:|---:|")

# Megatron-Bridge's H100 BF16 performance recipes (NVIDIA-NeMo/Megatron-Bridge
# at 067f987, src/megatron/bridge/perf_recipes/llama/h100/llama3.py and
# llama31.py, with the base recipes of src/megatron/bridge/recipes/llama/h100/
# and perf_recipes/_common.py). Every option the job format has is set here
# as the recipe sets it, none is left to stagecraft's defaults (which other
# changes move): Megatron's distributed optimizer (use_distributed_optimizer)
# is ZeRO-1; ddp.overlap_grad_reduce and overlap_param_gather are on;
# _benchmark_common sets grad_reduce_in_fp32 = False (bf16 gradient
# reduction); Megatron's DDP bucket when none is given, max(40M, 1M x dp)
# parameters (40M for these dp), 80,000,000 bytes of bf16 gradients =
# 76.29 MiB; no recomputation (recompute_granularity None); Transformer
# Engine's fused attention; tp_comm_overlap as each recipe sets it; context
# parallelism as Megatron-Core runs it when the recipe sets no cp_comm_type
# (none of these does): 'p2p', Transformer Engine's ring exchange of K/V
# blocks (megatron/core/extensions/transformer_engine.py), cp_algorithm
# ring, which the plan keeps from the job.
# Mixtral 8x7B / 8x22B: Megatron-Bridge at 067f987 has no Mixtral
# performance recipe (its Mixtral recipes were removed in f28734a), and
# Nemotron's H100 recipes there are the hybrid Nemotron-H: not in the table.
MB_TRAINING = {"dtype": "bf16", "grad_reduce_dtype": "bf16", "recompute": "none",
               "overlap_grad_reduce": True, "overlap_param_gather": True, "dp_bucket_mb": 76.2939453125}


def _mb_job(preset, seq, gbs, tp_comm_overlap):
    t = dict(MB_TRAINING, seq_len=seq, global_batch_size=gbs, tp_comm_overlap=tp_comm_overlap)
    return {"model": {"preset": preset, "flash_attention": True}, "hardware": "h100",
            "parallel": {"cp_algorithm": "ring"}, "training": t}


# Meta's Llama 3 405B layout (Dubey et al. 2024, Table 4; the job of
# tests/fidelity/llama3-2024-table4.json, first row), with the options the
# paper gives set explicitly: FSDP's sharded optimizer state (ZeRO-1 here),
# gradients reduce-scattered in fp32 during the backward (§3.3.4), no
# recomputation, no tensor-parallel overlap claimed.
def _meta_405b(index=0):
    with open(os.path.join(ROOT, "tests/fidelity/llama3-2024-table4.json")) as f:
        row = json.load(f)["rows"][index]
    job = json.loads(json.dumps(row["job"]))
    job["parallel"]["zero"] = 1
    job["training"].update({"grad_reduce_dtype": "fp32", "overlap_grad_reduce": True, "overlap_param_gather": False,
                            "tp_comm_overlap": False, "dp_bucket_mb": 76.2939453125})
    return job, row["gpus"]


ENTRIES = [
    {
        "name": "llama3-8b-h100-bf16",
        "source": "Megatron-Bridge llama3_8b_pretrain_8gpu_h100_bf16_config",
        "gpus": 8,
        "job": _mb_job("llama3-8b", 8192, 128, False),
        "parallel": {"tp": 1, "cp": 2, "pp": 1, "dp": 4, "zero": 1},
        "training": {"micro_batch_size": 1},
    },
    {
        "name": "llama3-70b-h100-bf16",
        "source": "Megatron-Bridge llama3_70b_pretrain_64gpu_h100_bf16_config",
        "gpus": 64,
        "job": _mb_job("llama3-70b", 8192, 256, True),
        "parallel": {"tp": 4, "sequence_parallel": True, "cp": 2, "pp": 4, "virtual_stages": 5, "dp": 2, "zero": 1},
        "training": {"micro_batch_size": 1, "schedule": "interleaved-1f1b"},
    },
    {
        # account_for_embedding/loss_in_pipeline_split: 126 layers + the
        # embedding + the loss over 8 x 8 chunks, 1, 2 x 62, 1 layers.
        "name": "llama31-405b-h100-bf16",
        "source": "Megatron-Bridge llama31_405b_pretrain_1024gpu_h100_bf16_config",
        "gpus": 1024,
        "job": _mb_job("llama3-405b", 8192, 1536, True),
        "parallel": {"tp": 8, "sequence_parallel": True, "cp": 2, "pp": 8, "virtual_stages": 8, "dp": 8, "zero": 1,
                     "pipeline_layout": [1] + [2] * 62 + [1]},
        "training": {"micro_batch_size": 1, "schedule": "interleaved-1f1b"},
    },
    {
        "name": "llama3-405b-meta",
        "source": "Dubey et al. 2024, Table 4",
        "meta": True,
    },
    {
        # Table 4's second 8K row: the same layout on 16,384 GPUs, dp 128.
        "name": "llama3-405b-meta-16k",
        "source": "Dubey et al. 2024, Table 4",
        "meta": True,
        "meta_row": 1,
    },
]


def entry_jobs(e):
    """(base job for plan, the published layout's job, gpus)."""
    if e.get("meta"):
        job, gpus = _meta_405b(e.get("meta_row", 0))
        base = json.loads(json.dumps(job))
        base.pop("parallel", None)
        for k in ("micro_batch_size", "schedule", "recompute"):
            base["training"].pop(k, None)
        return base, job, gpus
    base = e["job"]
    pub = json.loads(json.dumps(base))
    pub["parallel"] = dict(base.get("parallel", {}), **e["parallel"])
    pub["training"].update(e["training"])
    return base, pub, e["gpus"]


def run(cli, args):
    p = subprocess.run([cli] + args, capture_output=True, text=True)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(args)}: exit {p.returncode}: {p.stderr.strip()}")
    return json.loads(p.stdout)


def label(par, tr):
    s = f"tp{par.get('tp', 1)}{'+sp' if par.get('sequence_parallel') else ''} cp{par.get('cp', 1)} pp{par.get('pp', 1)}"
    if par.get("virtual_stages", 1) > 1:
        s += f" v{par['virtual_stages']}"
    s += f" dp{par.get('dp', 1)} zero{par.get('zero', 0)} mbs{tr.get('micro_batch_size', 1)}"
    if par.get("pipeline_layout"):
        s += " (own pipeline layout)"
    return s


def plan_label(l):
    s = f"tp{l['tp']}{'+sp' if l['sp'] else ''} cp{l['cp']} pp{l['pp']}"
    if l["vp"] > 1:
        s += f" v{l['vp']}"
    if l["pp"] > 1:
        s += f" {l['schedule']}"
    if l.get("empty_end_chunks"):
        s += " emb+loss-ends"
    if l.get("embedding_loss_in_split"):
        s += " emb+loss-in-split"
    s += f" dp{l['dp']} zero{l['zero']} rc-{l['recompute']} mbs{l['micro_batch_size']}"
    return s


def row(cli, e, top):
    base, pub, gpus = entry_jobs(e)
    with tempfile.TemporaryDirectory() as d:
        bp, pp = os.path.join(d, "base.json"), os.path.join(d, "pub.json")
        json.dump(base, open(bp, "w"))
        json.dump(pub, open(pp, "w"))
        plan = run(cli, ["plan", "--config", bp, "--gpus", str(gpus), "--top", str(top), "--json", "--progress", "none"])
        sim = run(cli, ["simulate", "--config", pp, "--json"])
    step = sim["step_seconds"]
    cands = plan["candidates"]
    if not cands:
        best, best_step, rank, gap = "(nothing fits)", "–", "–", "–"
    else:
        best, best_step = plan_label(cands[0]["layout"]), cands[0]["step_seconds"]
        faster = sum(1 for c in cands if c["step_seconds"] < step)
        rank = f"> {len(cands)}" if faster == len(cands) and len(cands) >= top else str(faster + 1)
        gap = f"{100 * (step / best_step - 1):+.1f}%"
        best_step = f"{best_step:.3f}"
    model = pub["model"]["preset"]
    t = pub["training"]
    job = f"{model}, {gpus} x h100, seq {t['seq_len']}, batch {t['global_batch_size']}"
    return (f"| {e['name']} ({e['source']}) | {job} | {label(pub['parallel'], t)} | {step:.3f} | {best} | "
            f"{best_step} | {rank} | {gap} |")


def doc_rows(path):
    text = open(path).read()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path}: no published-layouts markers")
    block = text[text.index(BEGIN) + len(BEGIN):text.index(END)]
    return text, [l for l in block.strip().splitlines() if l.startswith("| ") and not l.startswith("| entry")]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", default=os.environ.get("STAGECRAFT_CLI", os.path.join(ROOT, "build/native/stagecraft")))
    ap.add_argument("--only", nargs="*")
    ap.add_argument("--top", type=int, default=20)
    ap.add_argument("--check")
    ap.add_argument("--write")
    a = ap.parse_args()
    entries = [e for e in ENTRIES if not a.only or e["name"] in a.only]
    if a.only and len(entries) != len(a.only):
        raise SystemExit(f"unknown entry in {a.only}")
    rows = [row(a.cli, e, a.top) for e in entries]
    if a.check:
        _, have = doc_rows(a.check)
        bad = 0
        for e, r in zip(entries, rows):
            mine = [h for h in have if h.startswith(f"| {e['name']} (")]
            if mine != [r]:
                print(f"{a.check}: row of {e['name']} differs:\n  doc: {mine}\n  now: {r}")
                bad += 1
        sys.exit(1 if bad else 0)
    table = HEADER + "\n" + "\n".join(rows)
    if a.write:
        text, have = doc_rows(a.write)
        # Rows of entries not run this time are kept, in the entries' order.
        new = dict(zip((e["name"] for e in entries), rows))
        keep = []
        for e in ENTRIES:
            old_row = [h for h in have if h.startswith(f"| {e['name']} (")]
            keep += [new[e["name"]]] if e["name"] in new else old_row
        table = HEADER + "\n" + "\n".join(keep)
        text = text[:text.index(BEGIN) + len(BEGIN)] + "\n" + table + "\n" + text[text.index(END):]
        open(a.write, "w").write(text)
    print(table)


if __name__ == "__main__":
    main()
