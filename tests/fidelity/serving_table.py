#!/usr/bin/env python3
"""docs/inference.md's comparison with published serving measurements,
regenerated from `stagecraft inspect --json`.

usage: serving_table.py CLI SPEC.json DOC.md [--update]

Builds one serving job per row of SPEC (tests/fidelity/serving/serving-published.json:
the published setup), runs `CLI inspect --config job.json --json`, and
renders one table line per published number: measured, predicted, error =
(predicted - measured) / measured. Replaces the block between
  <!-- fidelity:NAME:begin --> ... <!-- fidelity:NAME:end -->
in DOC with --update; without it exits 1 when the block differs (drift).

How a predicted number is read from the summary (docs/inference.md,
"Formulas"; nothing here is fitted):
- ttft_seconds, tpot_seconds, itl_seconds, output_tokens_per_second_per_gpu:
  summary.inference's ttft_seconds, tpot_seconds, itl_seconds (the
  inter-token latency a request sees under continuous batching, other
  requests' prefills included: what AIPerf's ITL measures),
  tokens_per_second_per_gpu
  (a static-batch benchmark included: the engine's steady-state cycle
  prefills the batch's prompts one after another where TensorRT-LLM's
  gptSessionBenchmark prefills them in one pass; the doc says so).
- decode_tokens_per_second_per_gpu (a decode pool measured alone):
  concurrency / TPOT / GPUs.
- prefill_tokens_per_second_per_gpu (a prefill pool measured alone): the
  engine prefills one prompt per attention-dp rank per iteration (TTFT), so
  prompt tokens x dp / TTFT / GPUs.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import docblock  # noqa: E402  (the shared run-and-sync of doc blocks)
from serving_memory import config  # noqa: E402  (the published config.json files)

PRESETS = {"llama2-70b"}  # rows that use the engine's preset (no config.json fixture)
# H800: the H100 with NVLink cut to 400 GB/s (200 GB/s per direction); the
# same HBM and tensor cores (NVIDIA's H800 datasheet).
HARDWARE = {"h100": "h100", "h200": "h200", "h800": {"preset": "h100", "intra_node_bw": 200e9}}
METRIC = {"ttft_seconds": "TTFT", "tpot_seconds": "TPOT", "itl_seconds": "ITL", "output_tokens_per_second_per_gpu": "output tok/s/GPU",
          "decode_tokens_per_second_per_gpu": "decode tok/s/GPU", "prefill_tokens_per_second_per_gpu": "prefill tok/s/GPU"}


def job(row):
    model = {"preset": row["model"]} if row["model"] in PRESETS else {"hf_config": config(row["model"])}
    return {"mode": "inference", "model": model, "parallel": row["parallel"], "serving": row["serving"],
            "hardware": HARDWARE[row["hardware"]]}


def predict(row, metric, s):
    inf = s["inference"]
    sv = row["serving"]
    if metric in ("ttft_seconds", "tpot_seconds", "itl_seconds"):
        return inf[metric]
    if metric == "output_tokens_per_second_per_gpu":
        return inf["tokens_per_second_per_gpu"]
    if metric == "decode_tokens_per_second_per_gpu":
        return inf["concurrency"] / inf["tpot_seconds"] / row["gpus"]
    if metric == "prefill_tokens_per_second_per_gpu":
        return sv["prompt_tokens"] * row["parallel"].get("dp", 1) / inf["ttft_seconds"] / row["gpus"]
    raise SystemExit(f"unknown metric {metric}")


def fmt(metric, v):
    if metric.endswith("_seconds"):
        return f"{v * 1e3:.1f} ms"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def render(spec, results):
    lines = ["| published setup | source | metric | measured | predicted | error |", "|---|---|---|---|---|---|"]
    errors = []
    for row, s in zip(spec["rows"], results):
        for metric, measured in row["measured"].items():
            p = predict(row, metric, s)
            err = (p - measured) / measured
            errors.append(abs(err))
            src = spec["sources"][row["source"]]
            where = f"[{row['source']}]({src['url']})" + (f" ({row['column']})" if row.get("column") else "")
            lines.append(f"| {row['name']} | {where} | {METRIC[metric]} | {fmt(metric, measured)} | {fmt(metric, p)} "
                         f"| {100 * err:+.0f}% |")
    within = sum(1 for e in errors if e <= 0.25)
    lines.append("")
    lines.append(f"Numbers within 25%: {within} of {len(errors)}; median |error| "
                 f"{100 * sorted(errors)[len(errors) // 2]:.0f}%, largest {100 * max(errors):.0f}%.")
    return "\n".join(lines) + "\n"


def main():
    cli, spec_path, spec, doc_path, update, name = docblock.args(__doc__)
    results = docblock.run_all(cli, "inspect", [job(row) for row in spec["rows"]], name)
    docblock.sync(doc_path, name, render(spec, results), update, "inspect",
                  f"tests/fidelity/serving_table.py CLI {spec_path} {doc_path}", len(spec["rows"]))


if __name__ == "__main__":
    main()
