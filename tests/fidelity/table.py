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


def main():
    cli, spec_path, spec, doc_path, update, name = docblock.args(__doc__)
    tflops = spec.get("kind") == "tflops"
    jobs = [row["job"] if tflops else job(spec, row) for row in spec["rows"]]
    results = docblock.run_all(cli, "simulate", jobs, name)
    table = render_tflops(spec, results) if tflops else render(spec, results)
    docblock.sync(doc_path, name, table, update, "simulate", f"tests/fidelity/table.py CLI {spec_path} {doc_path}",
                  len(spec["rows"]))


if __name__ == "__main__":
    main()
