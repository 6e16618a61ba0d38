#!/usr/bin/env python3
"""docs/inference.md's check of the serving decode iteration against whole
decode steps measured on an H100 without any engine
(tests/bench/gpu/decode_step.py; its results file), regenerated from
`stagecraft inspect --json`.

usage: decode_step_check.py CLI RESULTS.json DOC.md [--update]

RESULTS is either file kind: decode_step.py's (`rows`, whole steps on an
H100: block decode-step) or fp8_decode_sweep.py's (`step`, ten decode
layers on an H200: block decode-step-h200, described in `render_layers`;
and `prefill`, ten prefill layers: block prefill-h200, `render_prefill`).

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


def spread(e):
    """'error -8% to +2%, median |error| 6%.' of a list of errors."""
    a = sorted(abs(x) for x in e)
    return f"error {100 * min(e):+.0f}% to {100 * max(e):+.0f}%, median |error| {100 * a[len(a) // 2]:.0f}%."


def at_10_and_20_layers(name, serving):
    """Two serving jobs of NAME's published config.json at tp 1 on the h200,
    10 and 20 layers: the difference of an iteration's time over 10 is one
    layer's, without the embedding, final norm and LM head both have."""
    return [{"mode": "inference", "model": {"hf_config": dict(config(name), num_hidden_layers=layers)},
             "parallel": {"tp": 1}, "hardware": "h200", "serving": serving} for layers in (10, 20)]


def per_layer(s10, s20, kind):
    """One layer of iteration KIND (decode, prefill) from `at_10_and_20_layers`'s summaries."""
    return (s20["inference"]["iterations"][kind]["seconds"] - s10["inference"]["iterations"][kind]["seconds"]) / 10


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
        lines.append(f"{m}, {'fit' if fit else 'checked'}: {len(e)} steps, {spread(e)}")
    lines.append(f"Measured: `{results_path}` (GPU \"{RESULTS['gpu']}\", torch {RESULTS['torch']}).")
    return "\n".join(lines) + "\n"


def layer_jobs(row):
    """Llama 3.1 70B's decode at the row's batch and context, its weights'
    dtype and a bf16 KV cache (as measured), at 10 and 20 layers."""
    return at_10_and_20_layers("llama-3.1-70b", {"prompt_tokens": row["context"], "output_tokens": 2,
                                                 "concurrency": row["batch"], "weights_dtype": row["weights"],
                                                 "kv_dtype": "bf16"})


def render_layers(results_path, rows, results):
    """fp8_decode_sweep.py's `step` rows: ten Llama-3.1-70B layers at tp 1 on
    an H200, captured in one CUDA graph, per layer, against the simulated
    decode iteration's layer (`layer_jobs`). The measured layer is
    PyTorch's kernels, not an engine's: per layer it runs 15 kernels (four
    GEMMs, attention and 10 small ones; fp8: 19, each FP8 linear's
    activation cast its own kernel) where the simulated layer has 13 (8
    small: an engine's fused SwiGLU and KV write, no casts). The two one-sequence rows are where the h200 profile's
    kernel_floor_micros was derived (docs/hardware.md, "Measured on a
    GPU": the layer less its GEMMs and attention as timed alone, per small
    kernel): marked "(fit)" and summarized apart; the other rows are the
    check."""
    lines = ["| weights (one H200, tp 1) | batch | context | measured layer (CUDA graph) | simulated layer | error |",
             "|---|---|---|---|---|---|"]
    errs = {}
    for r, (s10, s20) in zip(rows, results):
        sim = per_layer(s10, s20, "decode")
        meas = r["per_layer_us"] / 1e6
        e = (sim - meas) / meas
        fit = r["batch"] == 1  # the rows the h200's kernel_floor_micros came from
        errs.setdefault((r["weights"], fit), []).append(e)
        lines.append(f"| {r['weights']} | {r['batch']}{' (fit)' if fit else ''} | {r['context']:,} | "
                     f"{meas * 1e6:.0f} µs | {sim * 1e6:.0f} µs | {100 * e:+.0f}% |")
    lines.append("")
    for (w, fit), e in errs.items():
        lines.append(f"{w} weights, {'fit' if fit else 'checked'}: {len(e)} row{'s' * (len(e) != 1)}, {spread(e)}")
    lines.append(f"Measured: `{results_path}` (GPU \"{RESULTS['env']['gpu']}\", torch {RESULTS['env']['torch']}).")
    return "\n".join(lines) + "\n"


def prefill_jobs(row):
    """As `layer_jobs`, for one prompt's prefill: Llama 3.1 70B or 8B (their
    published config.json) at tp 1 on the h200, 10 and 20 layers, one
    sequence of the row's tokens prefilled in one iteration (the token
    budget set to the prompt), the row's weights and a bf16 cache."""
    name = "llama-3.1-70b" if row["model"] == "llama3-70b" else "llama-3.1-8b"
    return at_10_and_20_layers(name, {"prompt_tokens": row["tokens"], "output_tokens": 2, "concurrency": 1,
                                      "weights_dtype": row["weights"], "kv_dtype": "bf16",
                                      "scheduler": {"max_num_batched_tokens": max(row["tokens"], 2048)}})


def render_prefill(results_path, rows, results):
    """fp8_decode_sweep.py's `prefill` rows: ten layers of one prompt's
    prefill on an H200 in one CUDA graph, per layer, against the simulated
    prefill iteration's layer (`prefill_jobs`). Nothing is fitted on them."""
    lines = ["| model (one H200, tp 1) | weights | prompt tokens | measured layer (CUDA graph) | simulated layer | error |",
             "|---|---|---|---|---|---|"]
    errs = {}
    for r, (s10, s20) in zip(rows, results):
        sim = per_layer(s10, s20, "prefill")
        meas = r["per_layer_us"] / 1e6
        e = (sim - meas) / meas
        errs.setdefault((r["weights"], r["tokens"] >= 512), []).append(e)
        lines.append(f"| {r['model']} | {r['weights']} | {r['tokens']:,} | {meas * 1e6:,.0f} µs | {sim * 1e6:,.0f} µs | "
                     f"{100 * e:+.0f}% |")
    lines.append("")
    for (w, long_), e in errs.items():
        lines.append(f"{w} weights, {'512 to 8,192' if long_ else '128'} tokens, checked: {len(e)} rows, {spread(e)}")
    lines.append(f"Measured: `{results_path}` (GPU \"{RESULTS['env']['gpu']}\", torch {RESULTS['env']['torch']}).")
    return "\n".join(lines) + "\n"


def main():
    global RESULTS
    if len(sys.argv) < 4:
        raise SystemExit(__doc__)
    cli, res_path, doc = sys.argv[1:4]
    RESULTS = json.load(open(res_path))
    if "step" in RESULTS:  # fp8_decode_sweep.py's file
        rows = [r for r in RESULTS["step"] if r.get("attention") and "per_layer_us" in r]
        flat = docblock.run_all(cli, "inspect", [j for r in rows for j in layer_jobs(r)], "decode-step-h200")
        results = list(zip(flat[0::2], flat[1::2]))
        shown = os.path.relpath(os.path.abspath(res_path), os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
        docblock.sync(doc, "decode-step-h200", render_layers(shown, rows, results), "--update" in sys.argv[4:],
                      "inspect", f"tests/fidelity/serving/decode_step_check.py CLI {res_path} {doc}", len(rows))
        rows = [r for r in RESULTS.get("prefill", []) if "per_layer_us" in r]
        if not rows:
            raise SystemExit(f"{res_path}: no prefill rows (fp8_decode_sweep.py's `prefill` section)")
        flat = docblock.run_all(cli, "inspect", [j for r in rows for j in prefill_jobs(r)], "prefill-h200")
        docblock.sync(doc, "prefill-h200", render_prefill(shown, rows, list(zip(flat[0::2], flat[1::2]))),
                      "--update" in sys.argv[4:], "inspect",
                      f"tests/fidelity/serving/decode_step_check.py CLI {res_path} {doc}", len(rows))
        return
    rows = [r for r in RESULTS["rows"] if "graph_ms" in r]
    results = docblock.run_all(cli, "inspect", [job(r) for r in rows], "decode-step")
    shown = os.path.relpath(os.path.abspath(res_path), os.path.dirname(os.path.dirname(os.path.dirname(HERE))))
    docblock.sync(doc, "decode-step", render(shown, rows, results), "--update" in sys.argv[4:], "inspect",
                  f"tests/fidelity/serving/decode_step_check.py CLI {res_path} {doc}", len(rows))


if __name__ == "__main__":
    main()
