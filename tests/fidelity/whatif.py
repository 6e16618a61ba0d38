#!/usr/bin/env python3
"""A what-if over the fidelity tables: one hardware field set to each of
several values on every row's job (as table.py's step_job builds it), the
row's error at each, and a summary per table.

Nothing is fitted or written; docs quote its output (docs/simulate.md,
"The host", for hardware.host_launch_micros).

Usage: whatif.py CLI FIELD V1,V2,... SPEC.json [SPEC.json ...] [--rows]
  e.g. whatif.py build/native/stagecraft host_launch_micros 0,21.8,100 \
         tests/fidelity/megatron-h100-fp8.json tests/fidelity/megatron-h100-moe.json

A value of 0 leaves the field out (the profile's own value). Runs two
simulations at a time.
"""
import json
import os
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import table  # noqa: E402  (step_job, published_step_seconds)


def main():
    args = [a for a in sys.argv[1:] if a != "--rows"]
    rows_out = "--rows" in sys.argv[1:]
    if len(args) < 4:
        raise SystemExit(__doc__)
    cli, field, values, specs = args[0], args[1], [float(v) for v in args[2].split(",")], args[3:]
    tmp = tempfile.mkdtemp(prefix="whatif-")

    def step(item):
        job, k = item
        path = os.path.join(tmp, f"{k}.json")
        with open(path, "w") as f:
            json.dump(job, f)
        out = subprocess.run([cli, "simulate", "-c", path, "--json"], capture_output=True, text=True)
        if out.returncode:
            raise SystemExit(f"{path}: {out.stderr.strip()}")
        return json.loads(out.stdout)["step_seconds"]

    tasks, meta = [], []
    for spec_path in specs:
        spec = json.load(open(spec_path))
        if spec.get("kind") != "step":
            raise SystemExit(f"{spec_path}: not a step-time table")
        for row in spec["rows"]:
            job = table.step_job(spec, row)
            for v in values:
                j = json.loads(json.dumps(job))
                hw = j.get("hardware", "h100")
                hw = {"preset": hw} if isinstance(hw, str) else dict(hw)
                if v:
                    hw[field] = v
                j["hardware"] = hw
                tasks.append((j, len(tasks)))
            meta.append((os.path.basename(spec_path), row, table.published_step_seconds(spec, row)))
    with ThreadPoolExecutor(2) as ex:
        steps = list(ex.map(step, tasks))
    n = len(values)
    by_spec = {}
    for i, (spec_name, row, pub) in enumerate(meta):
        errs = [(s / pub - 1) * 100 for s in steps[i * n:(i + 1) * n]]
        by_spec.setdefault(spec_name, []).append((row, errs))
        if rows_out:
            print(f"{spec_name} | {row['name']} | {row['source']} | " + " | ".join(f"{e:+.1f}%" for e in errs))
    print(f"{field}: " + ", ".join(f"{v:g}" for v in values))
    for spec_name, rows in by_spec.items():
        for k, v in enumerate(values):
            e = [abs(r[1][k]) for r in rows]
            print(f"{spec_name} at {v:g}: {len(e)} rows, mean |error| {sum(e) / len(e):.1f}%, within 10% {sum(x <= 10 for x in e)}, "
                  f"within 15% {sum(x <= 15 for x in e)}, largest {max(e):.1f}%")


if __name__ == "__main__":
    main()
