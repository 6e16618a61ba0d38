#!/usr/bin/env python3
"""docs/fidelity.md's tables, regenerated from `stagecraft simulate`.

usage: table.py CLI SPEC.json DOC.md [--update]

Builds one job per row of SPEC (the published runs, with the assumptions
the doc states), runs `CLI simulate --json` on each, renders the table and
replaces the block between the markers
  <!-- fidelity:NAME:begin --> ... <!-- fidelity:NAME:end -->
in DOC (NAME = the spec file's stem). Without --update it exits 1 when the
doc's block differs from the regenerated one (drift), printing both.
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docblock  # noqa: E402  (the shared run-and-sync of doc blocks)

V, S = 51200, 2048


def job(spec, row):
    dp = row["gpus"] // (row["tp"] * row["pp"])
    common = spec["common"]
    training = dict(common["training"])
    training.update({"micro_batch_size": row["micro_batch"], "global_batch_size": row["global_batch"],
                     "schedule": "interleaved-1f1b" if row["pp"] > 1 else "1f1b"})
    return {"model": {"preset": row["preset"]},
            "parallel": {"tp": row["tp"], "pp": row["pp"], "dp": dp, "virtual_stages": row["virtual_stages"]},
            "training": training,
            "hardware": common["hardware"]}


def published_step(row):
    # Narayanan et al.'s FLOPs per iteration with full recomputation:
    # 96 B s L h^2 (1 + s/(6h) + V/(16 L h)); TFLOP/s per GPU = F / (GPUs x step).
    L, h, B = row["num_layers"], row["hidden"], row["global_batch"]
    flops = 96 * B * S * L * h * h * (1 + S / (6 * h) + V / (16 * L * h))
    return flops, flops / (row["gpus"] * row["published_tflops_per_gpu"] * 1e12)


def render(spec, results):
    lines = ["| params | t | p | v | GPUs | B | b | published TFLOP/s | published s/iter | simulated s/iter "
             "| simulated TFLOP/s | error | simulated bubble | exposed comm (tp / pp / dp) s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    errors = []
    for row, sim in zip(spec["rows"], results):
        flops, pub = published_step(row)
        # The preset must be the row's model: simulate's model FLOPs are
        # 72 B s L h^2 (1 + s/(6h) + V/(12 L h)) for it.
        L, h, B = row["num_layers"], row["hidden"], row["global_batch"]
        model_flops = 72 * B * S * L * h * h * (1 + S / (6 * h) + V / (12 * L * h))
        if abs(sim["model_flops_per_step"] - model_flops) > 1e-6 * model_flops:
            raise SystemExit(f"{row['name']}: preset {row['preset']} is not the row's model "
                             f"({sim['model_flops_per_step']} vs {model_flops} model FLOPs)")
        step = sim["step_seconds"]
        tflops = flops / (row["gpus"] * step) / 1e12
        err = (step - pub) / pub
        errors.append(abs(err))
        e = sim["exposed_comm_seconds"]
        lines.append(f"| {row['name']} | {row['tp']} | {row['pp']} | {row['virtual_stages']} | {row['gpus']} "
                     f"| {row['global_batch']} | {row['micro_batch']} | {row['published_tflops_per_gpu']} "
                     f"| {pub:.3f} | {step:.3f} | {tflops:.1f} | {100 * err:+.1f}% "
                     f"| {sim['bubble_fraction']:.3f} | {e['tp']:.3f} / {e['pp']:.3f} / {e['dp']:.3f} |")
    within = sum(1 for x in errors if x <= 0.10)
    lines.append("")
    lines.append(f"Rows within 10%: {within} of {len(errors)}; mean |error| {100 * sum(errors) / len(errors):.1f}%, "
                 f"largest {100 * max(errors):.1f}%.")
    return "\n".join(lines) + "\n"


def palm_flops(fc, row):
    # PaLM's MFU count (Chowdhery et al. 2022, Appendix B), per token
    # 6 N + 12 L H Q T: 2 FLOPs per matmul parameter forward, twice that
    # backward; attention over the whole T x T square (the causal mask is
    # not discounted). N leaves out the input embedding table (a lookup).
    n = fc["params"] - fc["vocab"] * fc["hidden"]
    per_token = 6 * n + 12 * fc["layers"] * fc["heads"] * fc["head_dim"] * row["seq_len"]
    return per_token * row["global_batch"] * row["seq_len"]


def render_tflops(spec, results):
    # Rows that give their whole job and a throughput in TFLOP/s per GPU.
    # With the spec's "flop_count" (the source's definition) the published
    # step is those FLOPs / (GPUs x TFLOP/s); without one, simulate's model
    # FLOPs per step / (GPUs x TFLOP/s), so the error is the ratio of MFUs.
    fc = spec.get("flop_count")
    lines = ["| run | GPUs | t | cp | p | d | seq | B | published TFLOP/s | published s/iter "
             "| simulated s/iter | simulated TFLOP/s | error | simulated bubble | exposed comm (tp / cp / pp / dp) s |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    errors = []
    for row, sim in zip(spec["rows"], results):
        if sim["world_size"] != row["gpus"]:
            raise SystemExit(f"{row['name']}: the job has {sim['world_size']} ranks, the row {row['gpus']} GPUs")
        flops = sim["model_flops_per_step"]
        if fc:
            # The same physics counted two ways: a gap over 1% means the
            # spec's model is not the job's.
            palm = palm_flops(fc, row)
            if abs(palm - flops) > 0.01 * flops:
                raise SystemExit(f"{row['name']}: the {fc['definition']} FLOP count {palm:.4g} is not "
                                 f"simulate's model FLOPs {flops:.4g} within 1%")
            flops = palm
        pub = flops / (row["gpus"] * row["published_tflops_per_gpu"] * 1e12)
        step = sim["step_seconds"]
        err = (step - pub) / pub
        errors.append(abs(err))
        e = sim["exposed_comm_seconds"]
        lines.append(f"| {row['name']} | {row['gpus']} | {row['tp']} | {row['cp']} | {row['pp']} | {row['dp']} "
                     f"| {row['seq_len']} | {row['global_batch']} | {row['published_tflops_per_gpu']} | {pub:.3f} "
                     f"| {step:.3f} | {flops / (row['gpus'] * step) / 1e12:.1f} | {100 * err:+.1f}% "
                     f"| {sim['bubble_fraction']:.3f} | {e['tp']:.3f} / {e['cp']:.3f} / {e['pp']:.3f} / {e['dp']:.3f} |")
    within = sum(1 for x in errors if x <= 0.10)
    lines.append("")
    lines.append(f"Rows within 10%: {within} of {len(errors)}; mean |error| {100 * sum(errors) / len(errors):.1f}%, "
                 f"largest {100 * max(errors):.1f}%.")
    return "\n".join(lines) + "\n"


def padded_vocab(vocab, multiple, tp):
    # Megatron-LM's _vocab_size_with_padding: up to a multiple of
    # make_vocab_size_divisible_by x tp.
    m = multiple * tp
    return -(-vocab // m) * m


def step_job(spec, row):
    # A "step" spec names each run's model and recipe (the flags its authors
    # set, with the file they are read from) and gives the layout per row:
    # dp = GPUs / (tp cp pp); sequence parallelism with tp > 1 (Megatron's
    # recipes turn it on with tp); interleaved 1F1B when v > 1; the row's
    # precision and hardware profile (default: the spec's), ep, network and
    # parallel/training overrides.
    m = spec["models"][row["model"]]
    r = spec["recipes"][row["recipe"]]
    model = dict(m["model"])
    model.update(row.get("model_overrides", {}))
    if "pad_vocab" in m:
        model["vocab"] = padded_vocab(model["vocab"], m["pad_vocab"], row["tp"])
    tp, cp, pp, vp = row["tp"], row["cp"], row["pp"], row["vp"]
    if row["gpus"] % (tp * cp * pp):
        raise SystemExit(f"{row['name']}: {row['gpus']} GPUs do not divide by tp x cp x pp = {tp * cp * pp}")
    parallel = {"tp": tp, "cp": cp, "pp": pp, "dp": row["gpus"] // (tp * cp * pp), "virtual_stages": vp,
                "sequence_parallel": tp > 1, "zero": row.get("zero", r["zero"])}
    if row.get("ep", 1) > 1:
        parallel["ep"] = row["ep"]
    parallel.update(r.get("parallel", {}))
    parallel.update(row.get("parallel", {}))
    precision = row.get("precision", spec["precision"])
    training = {"seq_len": row["seq"], "micro_batch_size": row["mbs"], "global_batch_size": row["gbs"],
                "schedule": "interleaved-1f1b" if vp > 1 else "1f1b", "dtype": precision}
    if precision == "fp8":
        # FP8 training is bf16 with the linear layers' GEMMs at FP8 under a
        # scaling recipe (training.fp8_recipe, docs/hardware.md): the job
        # format refuses a bare fp8 training dtype.
        if r["fp8_recipe"] is None:  # JSON null: the recipe does not say
            raise SystemExit(f"{row['name']}: an fp8 row needs its recipe's fp8_recipe")
        training["dtype"] = "bf16"
        training["fp8_recipe"] = r["fp8_recipe"]
    training.update(r["training"])
    if r.get("tp_comm_overlap_if_tp"):
        training["tp_comm_overlap"] = tp > 1
    training.update(row.get("training", {}))
    job = {"model": model, "parallel": parallel, "training": training, "hardware": row.get("hardware", spec["hardware"])}
    if "network" in row:
        job["network"] = row["network"]
    return job


# The forms a step row's published figure takes (exactly one per row).
PUBLISHED = ("published_step_seconds", "published_tokens_per_s_per_gpu", "published_tflops_per_gpu",
             "published_mfu")


def published_step_seconds(spec, row):
    # The published step time, or the one a published figure implies:
    # tokens/s/GPU: B s / (GPUs x tokens/s/GPU); model TFLOP/s per GPU (by
    # the source's own FLOP count, the model's published_model_flops_per_seq):
    # B x FLOPs per sequence / (GPUs x TFLOP/s); MFU: the same at MFU x the
    # spec's mfu_peak_tflops.
    if "published_step_seconds" in row:
        return row["published_step_seconds"]
    if "published_tokens_per_s_per_gpu" in row:
        return row["gbs"] * row["seq"] / (row["gpus"] * row["published_tokens_per_s_per_gpu"])
    tflops = row.get("published_tflops_per_gpu")
    if tflops is None:
        tflops = row["published_mfu"] * spec["mfu_peak_tflops"]
    return row["gbs"] * spec["models"][row["model"]]["published_model_flops_per_seq"] / (row["gpus"] * tflops * 1e12)


def published_label(row):
    # The published figure as the source gives it.
    if "published_step_seconds" in row:
        return f"{row['published_step_seconds']} s"
    if "published_tokens_per_s_per_gpu" in row:
        return f"{row['published_tokens_per_s_per_gpu']} tok/s/GPU"
    if "published_tflops_per_gpu" in row:
        return f"{row['published_tflops_per_gpu']} TFLOP/s/GPU"
    return f"{100 * row['published_mfu']:g}% MFU"


def flops_ratio(spec, row, sim):
    # simulate's model FLOPs against the source's own count, where it gives
    # one: a guard that the job is the model the source ran (not an error
    # term: the table's error is in step time, which needs no FLOP count).
    per_seq = sim["model_flops_per_step"] / row["gbs"]
    if "published_model_tflops_per_gpu" in row:  # FLOPs per step / (GPUs x step), per sequence
        pub = row["published_model_tflops_per_gpu"] * 1e12 * row["gpus"] * published_step_seconds(spec, row) / row["gbs"]
    elif "model_overrides" not in row and "published_model_flops_per_seq" in spec["models"][row["model"]]:
        pub = spec["models"][row["model"]]["published_model_flops_per_seq"]
    else:
        return None
    return per_seq / pub


def summary_line(label, errors):
    a = [abs(x) for x in errors]
    return (f"{label}: {len(a)} rows; within 10%: {sum(1 for x in a if x <= 0.10)}, within 15%: "
            f"{sum(1 for x in a if x <= 0.15)}; mean |error| {100 * sum(a) / len(a):.1f}%, largest {100 * max(a):.1f}%.")


AIM = {"bf16": 0.10, "fp8": 0.15}  # issue 22: every BF16 check row within 10%, every FP8 row within 15%

ROLES = (("fit", "Fit rows", "Fit rows"), ("check", "Check rows", "Check rows"),
         ("out_of_scope", "Out of scope (another framework, not Megatron's options)", "Out-of-scope rows"))


def render_step(spec, results):
    # Rows that give a step time or tokens/s/GPU: the error is in step time,
    # (simulated - published) / published. Fit rows (the ones a constant
    # was fitted on), check rows and runs of other frameworks are reported
    # apart, each with its own summary line.
    head = ("| run | source | dtype | GPUs | t | cp | p | v | d | ep | seq | B | b | published | published s/iter "
            "| simulated s/iter | error | FLOPs sim/pub | bubble | exposed comm (tp / cp / ep / pp / dp) s |")
    rule = "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
    out, errs = {}, {}
    for role, _, _ in ROLES:
        out[role], errs[role] = [head, rule], []
    for row, sim in zip(spec["rows"], results):
        if row["role"] not in out:
            raise SystemExit(f"{row['name']}: role must be one of {[r[0] for r in ROLES]} (got {row['role']!r})")
        if sim["world_size"] != row["gpus"]:
            raise SystemExit(f"{row['name']}: the job has {sim['world_size']} ranks, the row {row['gpus']} GPUs")
        pub = published_step_seconds(spec, row)
        ratio = flops_ratio(spec, row, sim)
        # Sources count FLOPs their own way (NeMo's and Megatron-Bridge's
        # counts differ from Megatron's formula by up to ~30%: causal or
        # windowed attention counted at its executed share or not, the
        # embedding in or out), so only a gross mismatch (a wrong model)
        # fails.
        if ratio is not None and not 2 / 3 <= ratio <= 1.5:
            raise SystemExit(f"{row['name']}: simulate's model FLOPs are {ratio:.3f}x the source's count: "
                             f"the job is not the model the row ran")
        step = sim["step_seconds"]
        err = (step - pub) / pub
        errs[row["role"]].append(err)
        e = sim["exposed_comm_seconds"]
        published = published_label(row)
        d = row["gpus"] // (row["tp"] * row["cp"] * row["pp"])
        out[row["role"]].append(
            f"| {row['name']} | {row['source']} | {row.get('precision', spec['precision'])} | {row['gpus']} | {row['tp']} "
            f"| {row['cp']} | {row['pp']} | {row['vp']} | {d} | {row.get('ep', 1)} | {row['seq']} | {row['gbs']} | {row['mbs']} "
            f"| {published} | {pub:.3f} | {step:.3f} | {100 * err:+.1f}% "
            f"| {'–' if ratio is None else f'{ratio:.3f}'} | {sim['bubble_fraction']:.3f} "
            f"| {e['tp']:.3f} / {e['cp']:.3f} / {e['ep']:.3f} / {e['pp']:.3f} / {e['dp']:.3f} |")
    # Issue 22's aim: BF16 rows within 10%, FP8 rows within 15%. A fit or
    # check row outside it must carry its measured cause ("miss_cause" in
    # the spec), printed under its table.
    misses = {role: [] for role, _, _ in ROLES}
    for row, sim in zip(spec["rows"], results):
        if row["role"] == "out_of_scope":
            continue
        aim = AIM[row.get("precision", spec["precision"])]
        pub = published_step_seconds(spec, row)
        err = (sim["step_seconds"] - pub) / pub
        if abs(err) > aim:
            if "miss_cause" not in row:
                raise SystemExit(f"{row['name']} ({row['source']}): {100 * err:+.1f}% is outside the "
                                 f"{100 * aim:.0f}% aim and the row has no miss_cause")
            misses[row["role"]].append(f"- {row['name']} ({row['source']}, {100 * err:+.1f}%): {row['miss_cause']}")
    lines = []
    for role, heading, label in ROLES:
        if errs[role]:
            lines += ([""] if lines else []) + [f"{heading}:", ""] + out[role] + ["", summary_line(label, errs[role])]
            if misses[role]:
                lines += ["", f"{label} outside the aim, and why (measured):", ""] + misses[role]
    return "\n".join(lines) + "\n"


def main():
    cli, spec_path, spec, doc_path, update, name = docblock.args(__doc__)
    kind = spec.get("kind")
    if kind == "step":
        jobs = [step_job(spec, row) for row in spec["rows"]]
    else:
        jobs = [row["job"] if kind == "tflops" else job(spec, row) for row in spec["rows"]]
    results = docblock.run_all(cli, "simulate", jobs, name)
    table = {"step": render_step, "tflops": render_tflops}.get(kind, render)(spec, results)
    docblock.sync(doc_path, name, table, update, "simulate", f"tests/fidelity/table.py CLI {spec_path} {doc_path}",
                  len(spec["rows"]))


if __name__ == "__main__":
    main()
