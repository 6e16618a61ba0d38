#!/usr/bin/env python3
"""docs/inference.md's check of the serving decode iteration against whole
decode steps measured on an H100 without any engine
(tests/bench/gpu/decode_step.py; its results file), regenerated from
`stagecraft inspect --json`.

usage: decode_step_check.py CLI RESULTS.json DOC.md [--update]

For each measured row (a Llama-3 stack at `batch` sequences of `context`
cached positions, the step captured in one CUDA graph: `graph_ms`), one
serving job: prompt_tokens = context, output_tokens 2, concurrency =
batch, hardware h100, tp 1, the default scheduler; the predicted step is
the summary's inference.iterations.decode.seconds. The two models:
- "llama3-8b tp1": Llama 3.1 8B's published config.json
  (tests/fixtures/hf/llama-3.1-8b.config.json: the Llama 3 8B shapes).
- "llama3-70b tp4 shard": the benchmark runs one tp-4 rank's shapes of
  Llama 3 70B with no all-reduce (16 query heads, 2 KV heads, FFN 7,168,
  vocab 32,064, hidden 8,192, head_dim 128, 80 layers). The same shapes
  are given here as a model of their own at tp 1 (meta-llama-3-70b's
  config.json with those numbers), so the simulated step is that rank's
  compute without the 161 all-reduces, as measured.
Replaces the block between <!-- fidelity:decode-step:begin --> and
<!-- fidelity:decode-step:end --> of DOC with --update; without it exits 1
when the block differs (drift). Nothing here is fitted, but the four
batch-1 rows are where the h100 profile's kernel_floor_micros was derived
(docs/hardware.md, "Measured on a GPU": the step less its GEMMs and
attention, per small kernel): they are marked "(fit)" and summarized apart
from the batch-8-to-128 rows, which are the check.
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
import docblock  # noqa: E402
from serving_memory import config  # noqa: E402


def model(name):
    if name == "llama3-8b tp1":
        return config("llama-3.1-8b")
    if name == "llama3-70b tp4 shard":
        c = dict(config("meta-llama-3-70b"))
        c.update({"num_attention_heads": 16, "num_key_value_heads": 2, "intermediate_size": 7168,
                  "vocab_size": 32064, "head_dim": 128})
        return c
    raise SystemExit(f"unknown model {name}")


def job(row):
    return {"mode": "inference", "model": {"hf_config": model(row["model"])}, "parallel": {"tp": 1},
            "hardware": "h100",
            "serving": {"prompt_tokens": row["context"], "output_tokens": 2, "concurrency": row["batch"]}}


def render(results_path, rows, results):
    lines = ["| model (one H100, bf16) | batch | context | measured step (CUDA graph) | simulated decode iteration | error |",
             "|---|---|---|---|---|---|"]
    errs = {}
    for r, s in zip(rows, results):
        sim = s["inference"]["iterations"]["decode"]["seconds"]
        meas = r["graph_ms"] / 1e3
        e = (sim - meas) / meas
        fit = r["batch"] == 1  # the rows the h100's kernel_floor_micros came from
        errs.setdefault((r["model"], fit), []).append(e)
        lines.append(f"| {r['model']} | {r['batch']}{' (fit)' if fit else ''} | {r['context']:,} | {meas * 1e3:.2f} ms | "
                     f"{sim * 1e3:.2f} ms | {100 * e:+.0f}% |")
    lines.append("")
    for (m, fit), e in errs.items():
        a = sorted(abs(x) for x in e)
        lines.append(f"{m}, {'fit' if fit else 'checked'}: {len(e)} steps, error {100 * min(e):+.0f}% to "
                     f"{100 * max(e):+.0f}%, median |error| {100 * a[len(a) // 2]:.0f}%.")
    lines.append(f"Measured: `{results_path}` (GPU \"{RESULTS['gpu']}\", torch {RESULTS['torch']}).")
    return "\n".join(lines) + "\n"


def main():
    global RESULTS
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    cli, res_path, doc = sys.argv[1:4]
    RESULTS = json.load(open(res_path))
    rows = [r for r in RESULTS["rows"] if "graph_ms" in r]
    results = docblock.run_all(cli, "inspect", [job(r) for r in rows], "decode-step")
    shown = os.path.relpath(os.path.abspath(res_path), os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
    docblock.sync(doc, "decode-step", render(shown, rows, results), "--update" in sys.argv[4:], "inspect",
                  f"tests/fidelity/serving/decode_step_check.py CLI {res_path} {doc}", len(rows))


if __name__ == "__main__":
    main()
