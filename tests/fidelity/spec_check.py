#!/usr/bin/env python3
"""Checks a "step" fidelity spec without running the simulator.

usage: spec_check.py SPEC.json [SPEC.json ...]

Every row must name a source, model and recipe the spec defines, a role
(fit, check, or out_of_scope: a run of another framework), a published step time, tokens/s/GPU, model TFLOP/s per GPU or MFU (the
last two with the source's FLOP count per sequence), and a layout whose
GPU count divides by tp x cp x pp; every source must say where it is read
(a repository with a 40-hex commit and paths, or a URL); the spec must state
its split rule and have check rows (fit rows optional: a spec may only check
constants fitted elsewhere), or only out_of_scope rows; no two rows
may repeat the same run (layout, batch, source). The jobs are then built as
table.py builds them. Exit 1 naming the spec, the row and the field on the
first problem of each spec.
"""
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table  # noqa: E402


def problems(spec):
    if spec.get("kind") != "step":
        yield "kind: must be \"step\""
        return
    for key in ("title", "precision", "hardware", "split_rule", "sources", "models", "recipes", "rows"):
        if key not in spec:
            yield f"{key}: missing"
            return
    for name, src in spec["sources"].items():
        if "url" not in src and not (re.fullmatch(r"[0-9a-f]{40}", src.get("commit", "")) and src.get("paths")
                                     and src.get("repo")):
            yield f"sources.{name}: needs repo, a 40-hex commit and paths, or a url"
    for name, rec in spec["recipes"].items():
        for key in ("source", "training", "zero", "fp8_recipe"):
            if key not in rec:
                yield f"recipes.{name}.{key}: missing"
    for name, m in spec["models"].items():
        for key in ("model", "source"):
            if key not in m:
                yield f"models.{name}.{key}: missing"
    seen = set()
    for i, row in enumerate(spec["rows"]):
        where = f"rows[{i}] ({row.get('name', '?')})"
        for key in ("name", "source", "role", "model", "recipe", "gpus", "tp", "cp", "pp", "vp", "mbs", "gbs", "seq"):
            if key not in row:
                yield f"{where}.{key}: missing"
                return
        if row["role"] not in ("fit", "check", "out_of_scope"):
            yield f"{where}.role: must be fit, check or out_of_scope (got {row['role']!r})"
        for key, table_name in (("source", "sources"), ("model", "models"), ("recipe", "recipes")):
            if row[key] not in spec[table_name]:
                yield f"{where}.{key}: {row[key]!r} is not in {table_name}"
        given = [k for k in table.PUBLISHED if k in row]
        if len(given) != 1:
            yield f"{where}: give exactly one of {', '.join(table.PUBLISHED)} (got {given or 'none'})"
        elif given[0] in ("published_tflops_per_gpu", "published_mfu") and \
                "published_model_flops_per_seq" not in spec["models"].get(row["model"], {}):
            yield f"{where}.{given[0]}: the model needs published_model_flops_per_seq (the source's FLOP count)"
        elif given[0] == "published_mfu" and "mfu_peak_tflops" not in spec:
            yield f"{where}.published_mfu: the spec needs mfu_peak_tflops"
        if row["gpus"] % (row["tp"] * row["cp"] * row["pp"]):
            yield f"{where}.gpus: {row['gpus']} does not divide by tp x cp x pp"
        run = (row["source"], row["model"], row["gpus"], row["tp"], row["cp"], row["pp"], row["vp"], row["mbs"],
               row["gbs"], row["seq"], row.get("ep", 1), row.get("precision", spec["precision"]),
               json.dumps(row.get("model_overrides"), sort_keys=True), row["recipe"],
               json.dumps(row.get("training"), sort_keys=True), json.dumps(row.get("parallel"), sort_keys=True))
        if run in seen:
            yield f"{where}: the same run as an earlier row"
        seen.add(run)
    roles = {row["role"] for row in spec["rows"]}
    if roles != {"out_of_scope"} and "check" not in roles:
        yield f"rows: need check rows, or only out_of_scope rows (roles present: {sorted(roles)})"
    if "fit" in roles and "fit" not in spec["split_rule"].lower():
        yield "split_rule: has fit rows but does not say how they were chosen"
    for row in spec["rows"]:
        try:
            table.step_job(spec, row)
        except (KeyError, SystemExit) as e:
            yield f"rows ({row['name']}): the job does not build: {e}"


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    bad = 0
    for path in sys.argv[1:]:
        with open(path) as f:
            spec = json.load(f)
        first = next(problems(spec), None)
        if first is None:
            n = {role: sum(1 for r in spec["rows"] if r["role"] == role) for role in ("fit", "check", "out_of_scope")}
            print(f"{os.path.basename(path)}: {len(spec['rows'])} rows ({n['fit']} fit, {n['check']} check, "
                  f"{n['out_of_scope']} out of scope) well formed")
        else:
            print(f"{path}: {first}")
            bad += 1
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
