#!/usr/bin/env python3
"""Sweep one hardware-profile constant over the fit rows of fidelity specs.

usage: fit.py CLI PARAM VALUES SPEC.json[:TEXT] [SPEC.json[:TEXT] ...] [--rows fit|check|all]

For each value of PARAM (a field of the job's `hardware` object, e.g.
`gemm_efficiency`; VALUES comma-separated, e.g. 0.55,0.57,0.59) every
selected row of every SPEC is simulated with `"hardware": {"preset": P,
PARAM: value}` (P the row's own profile; a row whose hardware is already an
object keeps its other overrides) and its step-time error against the
published step is printed, then the mean and the largest absolute error and the
mean signed error of the value. It prints what docs/hardware.md's
"Calibration" sections record (which rows, which values, which errors); it
changes no file and picks no value: the choice, and writing it into the
profile, is the person's.

Rows: specs of kind "step" (megatron-h100-*.json) carry a role per row;
--rows picks the fit rows (default), the check rows or all. Specs of the
older kinds (narayanan2021-table1.json, llama3-2024-table4.json) have no
roles: all their rows. SPEC.json:TEXT keeps only that spec's rows whose name
contains TEXT, whatever their role, e.g.
`tests/fidelity/llama3-2024-table4.json:"8,192 GPUs"` for the Llama 3 row the
H100's constant was fitted on, beside another spec's fit rows.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docblock  # noqa: E402
import table  # noqa: E402


def with_param(job, param, value):
    hw = job["hardware"]
    hw = dict(hw) if isinstance(hw, dict) else {"preset": hw}
    hw[param] = value
    return dict(job, hardware=hw)


def selected(spec, rows_arg, only):
    out = []
    for row in spec["rows"]:
        if only is not None and only not in row["name"]:
            continue
        if spec.get("kind") == "step" and only is None and rows_arg != "all" and row["role"] != rows_arg:
            continue
        out.append(row)
    return out


def build(spec, row):
    kind = spec.get("kind")
    if kind == "step":
        return table.step_job(spec, row)
    if kind == "tflops":
        return row["job"]
    return table.job(spec, row)


def published(spec, row, sim):
    kind = spec.get("kind")
    if kind == "step":
        return table.published_step_seconds(spec, row)
    if kind == "tflops":
        fc = spec.get("flop_count")
        flops = table.palm_flops(fc, row) if fc else sim["model_flops_per_step"]
        return flops / (row["gpus"] * row["published_tflops_per_gpu"] * 1e12)
    return table.published_step(row)[1]


def main():
    args = sys.argv[1:]
    opts = {"--rows": "fit"}
    rest = []
    while args:
        a = args.pop(0)
        if a in opts:
            if not args:
                raise SystemExit(f"{a} needs a value")
            opts[a] = args.pop(0)
        else:
            rest.append(a)
    if len(rest) < 4 or opts["--rows"] not in ("fit", "check", "all"):
        raise SystemExit(__doc__)
    cli, param, values, spec_paths = rest[0], rest[1], [float(v) for v in rest[2].split(",")], rest[3:]
    rows = []  # (label, spec, row)
    for arg in spec_paths:
        path, _, only = arg.partition(".json:")
        path, only = (path + ".json", only) if only else (arg, None)
        with open(path) as f:
            spec = json.load(f)
        stem = os.path.splitext(os.path.basename(path))[0]
        rows += [(f"{stem}: {row['name']}", spec, row) for row in selected(spec, opts["--rows"], only)]
    if not rows:
        raise SystemExit("no rows selected")
    print(f"{param} swept over {len(rows)} rows (error = (simulated - published) / published step time):\n")
    print("| row | " + " | ".join(f"{v:g}" for v in values) + " |")
    print("|---|" + "---|" * len(values))
    errors = {v: [] for v in values}
    for v in values:
        jobs = [with_param(build(spec, row), param, v) for _, spec, row in rows]
        sims = docblock.run_all(cli, "simulate", jobs, f"fit-{param}-{v:g}")
        for (_, spec, row), sim in zip(rows, sims):
            pub = published(spec, row, sim)
            errors[v].append((sim["step_seconds"] - pub) / pub)
    for i, (label, _, _) in enumerate(rows):
        print(f"| {label} | " + " | ".join(f"{100 * errors[v][i]:+.1f}%" for v in values) + " |")
    for name, fn in (("mean abs. error", lambda e: sum(abs(x) for x in e) / len(e)),
                     ("largest abs. error", lambda e: max(abs(x) for x in e)),
                     ("mean error", lambda e: sum(e) / len(e))):
        print(f"| **{name}** | " + " | ".join(f"{100 * fn(errors[v]):+.1f}%" if name == "mean error"
                                              else f"{100 * fn(errors[v]):.1f}%" for v in values) + " |")


if __name__ == "__main__":
    main()
