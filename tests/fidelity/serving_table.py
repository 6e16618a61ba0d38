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
- ttft_seconds_p50, tpot_seconds_p50, itl_seconds_p50, e2e_seconds_p50 (a
  request-rate benchmark: requests arriving at a rate, bench_serving's
  "Median TTFT" ...): the same keys of the summary's workload percentiles
  (docs/inference.md "Workload"). Such a row has `workload`: the arrival
  rate, the request count and seed, and either fixed lengths or a
  `dataset` of the spec's `datasets` (ShareGPT): the requests are then a
  trace drawn here from that dataset's published statistics (`trace()`),
  the same bytes on every run. A rate of "inf" (bench_serving's
  --request-rate inf, an offline benchmark) sends every request at t = 0.
- output_tokens_per_second (such a row's server throughput): the
  summary's inference.workload.output_tokens_per_second (output tokens
  over the makespan).

Under the comparison the block takes every simulated TTFT apart
(`render_ttft`) and, for the request-rate rows, the decode step at the
measured load (`render_decode`: the decode batch Little's law gives from
the measured and the simulated median TPOT, and at the measured batch the
decode iteration of a fixed-concurrency job, its tp all-reduces, the row's
host time a + b x batch, against the measured median ITL per scheduler
step): docs/inference.md, "Reading the errors", item 6.
"""
import functools
import json
import math
import random
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import docblock  # noqa: E402  (the shared run-and-sync of doc blocks)
from serving_memory import config  # noqa: E402  (the published config.json files)

PRESETS = {"llama2-70b"}  # rows that use the engine's preset (no config.json fixture)
# H800: the h800 preset, the H100 with NVLink cut to 400 GB/s (200 GB/s per
# direction), the same HBM and tensor cores (docs/hardware.md).
HARDWARE = {"a100": "a100", "h100": "h100", "h200": "h200", "h800": "h800"}
METRIC = {"ttft_seconds_p50": "median TTFT", "tpot_seconds_p50": "median TPOT", "itl_seconds_p50": "median ITL",
          "e2e_seconds_p50": "median E2E", "ttft_seconds": "TTFT", "tpot_seconds": "TPOT", "itl_seconds": "ITL", "output_tokens_per_second_per_gpu": "output tok/s/GPU",
          "decode_tokens_per_second_per_gpu": "decode tok/s/GPU", "output_tokens_per_second": "output tok/s (server)", "prefill_tokens_per_second_per_gpu": "prefill tok/s/GPU"}


def lengths(ds, n, seed):
    """N (prompt, output) token counts of dataset DS (a spec `datasets`
    entry), drawn with SEED: each length log-normal, exp(mu + sigma z),
    rounded; sigma from the published median / mean (the same for prompts
    and outputs); a pair the benchmark's own filter drops (prompt below
    `min_tokens` or above `max_prompt_tokens`, output below `min_tokens`,
    prompt + output above `max_total_tokens`) is drawn again; mu of each
    solved (bisection) so that the filtered means are the published
    `mean_prompt_tokens` and `mean_output_tokens`. Only random.random()
    is used (Mersenne Twister, the same stream on every CPython)."""
    sigma = math.sqrt(2 * math.log(1 / ds["median_over_mean"]))
    lo, hi_p, hi_t = ds["min_tokens"], ds["max_prompt_tokens"], ds["max_total_tokens"]

    def normals(r, k):  # Box-Muller from uniforms
        out = []
        while len(out) < k:
            u1, u2 = 1.0 - r.random(), r.random()
            m = math.sqrt(-2 * math.log(u1))
            out += [m * math.cos(2 * math.pi * u2), m * math.sin(2 * math.pi * u2)]
        return out[:k]

    def draw(mp, mo, pairs):  # pairs: (exp(sigma z_p), exp(sigma z_o))
        for ep, eo in pairs:
            p, o = round(mp * ep), round(mo * eo)
            if lo <= p <= hi_p and o >= lo and p + o <= hi_t:
                yield p, o

    m = solve(json.dumps(ds, sort_keys=True))
    r = random.Random(seed)
    out = []
    while len(out) < n:
        z = normals(r, 2 * (n - len(out)))
        out += list(draw(m[0], m[1], [(math.exp(sigma * a), math.exp(sigma * b)) for a, b in zip(z[0::2], z[1::2])]))
    return out[:n]


@functools.lru_cache(maxsize=None)
def solve(ds_json):
    """exp(mu) of the prompts and of the outputs of `lengths` for a dataset
    (its JSON), solved once: on a fixed sample of 20,000 pairs (seed 0),
    bisection on each until the filtered means are the published ones."""
    ds = json.loads(ds_json)
    sigma = math.sqrt(2 * math.log(1 / ds["median_over_mean"]))
    lo, hi_p, hi_t = ds["min_tokens"], ds["max_prompt_tokens"], ds["max_total_tokens"]
    r, z = random.Random(0), []
    while len(z) < 2 * 20000:
        u1, u2 = 1.0 - r.random(), r.random()
        k = math.sqrt(-2 * math.log(u1))
        z += [k * math.cos(2 * math.pi * u2), k * math.sin(2 * math.pi * u2)]
    pairs = [(math.exp(sigma * a), math.exp(sigma * b)) for a, b in zip(z[0::2], z[1::2])]
    m = [ds["mean_prompt_tokens"] * ds["median_over_mean"], ds["mean_output_tokens"] * ds["median_over_mean"]]
    for _ in range(2):  # the two means depend on each other only through the joint filter
        for i, key in ((0, "mean_prompt_tokens"), (1, "mean_output_tokens")):
            a, b = math.log(m[i]) - 2, math.log(m[i]) + 2
            for _ in range(24):
                m[i] = math.exp((a + b) / 2)
                got = [x[i] for x in ((round(m[0] * ep), round(m[1] * eo)) for ep, eo in pairs)
                       if lo <= x[0] <= hi_p and x[1] >= lo and x[0] + x[1] <= hi_t]
                if sum(got) / len(got) < ds[key]:
                    a = math.log(m[i])
                else:
                    b = math.log(m[i])
    return tuple(m)


def trace(spec, w):
    """The row's workload W as a trace: Poisson arrivals at W's rate (seeded
    gaps -ln(1 - u) / rate) and the lengths of W's dataset."""
    pairs = lengths(spec["datasets"][w["dataset"]], w["requests"], w["seed"])
    if w["rate"] == "inf":  # bench_serving's --request-rate inf: every request sent at once
        return [{"arrival_seconds": 0.0, "prompt_tokens": p, "output_tokens": o} for p, o in pairs]
    r, t, out = random.Random(w["seed"] + 1), 0.0, []
    for p, o in pairs:
        t += -math.log(1.0 - r.random()) / w["rate"]
        out.append({"arrival_seconds": round(t, 6), "prompt_tokens": p, "output_tokens": o})
    return out


def job(row, spec):
    model = {"preset": row["model"]} if row["model"] in PRESETS else {"hf_config": config(row["model"])}
    serving = dict(row["serving"])
    w = row.get("workload")
    if w and "dataset" in w:
        serving["workload"] = {"arrival": "trace", "trace": trace(spec, w)}
    elif w:
        serving["workload"] = w
    return {"mode": "inference", "model": model, "parallel": row["parallel"], "serving": serving,
            "hardware": HARDWARE[row["hardware"]]}


def predict(row, metric, s):
    inf = s["inference"]
    sv = row["serving"]
    if metric in ("ttft_seconds", "tpot_seconds", "itl_seconds", "ttft_seconds_p50", "tpot_seconds_p50",
                  "itl_seconds_p50", "e2e_seconds_p50"):
        return inf[metric]
    if metric == "output_tokens_per_second":  # a request-rate row: the server's, over the makespan
        return inf["workload"]["output_tokens_per_second"]
    if metric == "output_tokens_per_second_per_gpu":
        return inf["tokens_per_second_per_gpu"]
    if metric == "decode_tokens_per_second_per_gpu":
        return inf["concurrency"] / inf["tpot_seconds"] / row["gpus"]
    if metric == "prefill_tokens_per_second_per_gpu":
        return sv["prompt_tokens"] * row["parallel"].get("dp", 1) / inf["ttft_seconds"] / row["gpus"]
    raise SystemExit(f"unknown metric {metric}")


def fmt(metric, v):
    if "_seconds" in metric:
        return f"{v * 1e3:.1f} ms"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def median(xs):
    """The upper median (the table's convention since its first version)."""
    return sorted(xs)[len(xs) // 2]


def render(spec, results):
    """The table; a row with `fitted` (its numbers took part in fitting an
    engine constant: fit_host.py) is marked and left out of the summaries,
    which count the checked numbers only, and counted apart."""
    lines = ["| published setup | source | metric | measured | predicted | error |", "|---|---|---|---|---|---|"]
    errors, by_metric, fitted, misses = [], {}, [], []
    for row, s in zip(spec["rows"], results):
        for metric, measured in row["measured"].items():
            p = predict(row, metric, s)
            err = (p - measured) / measured
            (fitted if row.get("fitted") else errors).append(abs(err))
            if abs(err) > 0.25:
                # A number outside the 25% band carries its measured cause
                # (the row's miss_cause: one text, or one per metric).
                cause = row.get("miss_cause")
                cause = cause.get(metric) if isinstance(cause, dict) else cause
                if not cause:
                    raise SystemExit(f"{row['name']}: {METRIC[metric]} {100 * err:+.0f}% is outside 25% "
                                     f"and the row has no miss_cause for it")
                misses.append(f"- {row['name']}, {METRIC[metric]} ({100 * err:+.0f}%): {cause}")
            if not row.get("fitted"):
                by_metric.setdefault(METRIC[metric], []).append(abs(err))
            src = spec["sources"][row["source"]]
            where = f"[{row['source']}]({src['url']})" + (f" ({row['column']})" if row.get("column") else "")
            name = row["name"] + (" **(fitted)**" if row.get("fitted") else "")
            lines.append(f"| {name} | {where} | {METRIC[metric]} | {fmt(metric, measured)} | {fmt(metric, p)} "
                         f"| {100 * err:+.0f}% |")
    within = sum(1 for e in errors if e <= 0.25)
    lines.append("")
    lines.append(f"Checked numbers within 25%: {within} of {len(errors)}; median |error| "
                 f"{100 * median(errors):.0f}%, largest {100 * max(errors):.0f}%.")
    if fitted:
        lines.append(f"Fitted numbers (rows marked fitted, not counted above): {len(fitted)}, "
                     f"{sum(1 for e in fitted if e <= 0.25)} within 25%, median |error| {100 * median(fitted):.0f}%, "
                     f"largest {100 * max(fitted):.0f}%.")
    lines += ["", "| metric (checked numbers) | numbers | within 25% | median abs(error) | largest |", "|---|---|---|---|---|"]
    for m, e in by_metric.items():
        lines.append(f"| {m} | {len(e)} | {sum(1 for x in e if x <= 0.25)} | {100 * median(e):.0f}% | {100 * max(e):.0f}% |")
    if misses:
        lines += ["", "Outside 25%, each with its measured cause (the spec's `miss_cause`):", ""] + misses
    return "\n".join(lines) + "\n" + render_ttft(spec, results)


def ms(v):
    return f"{v * 1e3:.1f}"


def render_ttft(spec, results):
    """Where each simulated TTFT goes, beside the measured one (docs/
    inference.md, "Reading the errors", item 7). Fixed-concurrency rows:
    the prefill iteration (its chunks) is the whole TTFT at concurrency 1.
    Request-rate rows, exact in the means: mean TTFT = mean queue (arrival
    to first scheduled: waiting for the iteration or multi-step run under
    way and for the prefill batches ahead) + mean time in the engine
    (first scheduled to the first token: the prefill iteration, its host
    step time and eager launch bound, later chunks) + the per-request time
    r; the medians compared above are beside them."""
    fixed = ["| published setup | measured TTFT | simulated | error | prefill iteration | chunks |", "|---|---|---|---|---|---|"]
    rate = ["| published setup | engine | measured median | simulated median | error | mean | = queue | + in the engine "
            "| + r | queue median | eager bound | scheduler steps |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for row, s in zip(spec["rows"], results):
        inf, m = s["inference"], row["measured"]
        if "ttft_seconds" in m:
            p = inf["ttft_seconds"]
            fixed.append(f"| {row['name']} | {ms(m['ttft_seconds'])} ms | {ms(p)} ms | {100 * (p - m['ttft_seconds']) / m['ttft_seconds']:+.0f}% "
                         f"| {ms(inf['iterations']['prefill']['seconds'])} ms | {inf['prefill_chunks']} |")
        if "ttft_seconds_p50" in m:
            sc = row["serving"].get("scheduler", {})
            r = sc.get("request_overhead_seconds", 0.0)
            w = inf["workload"]
            engine = inf["ttft_seconds_mean"] - inf["queue_seconds_mean"] - r
            p, v = inf["ttft_seconds_p50"], m["ttft_seconds_p50"]
            name = row["name"] + (" **(fitted)**" if row.get("fitted") else "")
            rate.append(f"| {name} | {row['column']} | {ms(v)} | {ms(p)} | {100 * (p - v) / v:+.0f}% "
                        f"| {ms(inf['ttft_seconds_mean'])} | {ms(inf['queue_seconds_mean'])} | {ms(engine)} | {ms(r)} "
                        f"| {ms(inf['queue_seconds_p50'])} | {ms(w['cost_model'].get('eager_prefill_floor_seconds', 0))} "
                        f"| {w['scheduler'].get('scheduler_steps', 1)} |")
    return ("\nTTFT, where the simulated time goes (ms; fixed-concurrency rows at concurrency 1: the prefill "
            "iteration; request-rate rows: mean TTFT = mean queue + mean time in the engine + r, exactly):\n\n"
            + "\n".join(fixed) + "\n\n" + "\n".join(rate) + "\n")


def load_point(row, spec):
    """A request-rate row's measured load, for `render_decode`: (the mean
    output tokens E[o] of its trace, the mean context a decoding sequence
    holds, the decode batch the measured median TPOT implies). The decode
    batch is Little's law on the decoding requests: requests arrive at
    `rate` and each decodes for about E[o] x TPOT, so about rate x E[o] x
    TPOT decode at once (the median TPOT standing for every request's). The
    context is weighted by output tokens (a long output is in the batch for
    more steps): sum(o p + o^2 / 2) / sum(o) over the trace."""
    tr = job(row, spec)["serving"]["workload"]["trace"]
    outs = sum(x["output_tokens"] for x in tr)
    mean_out = outs / len(tr)
    ctx = sum(x["output_tokens"] * x["prompt_tokens"] + x["output_tokens"] ** 2 / 2 for x in tr) / outs
    return mean_out, ctx, row["workload"]["rate"] * mean_out * row["measured"]["tpot_seconds_p50"]


def decode_jobs(row, spec):
    """The decode iteration of ROW's setup at its measured load (`load_point`):
    a fixed-concurrency job of that many sequences at that context (one
    decode step, graphed), and for tp > 1 the same job on a network of no
    latency and unbounded NVLink, whose difference is the step's tp
    all-reduces."""
    _, ctx, batch = load_point(row, spec)
    j = job(row, spec)
    s = j["serving"]
    s.pop("workload")
    s.update(prompt_tokens=round(ctx), output_tokens=2, concurrency=max(1, round(batch)),
             scheduler={"policy": "prefill_first", "max_num_batched_tokens": s["scheduler"]["max_num_batched_tokens"]})
    jobs = [j]
    if row["parallel"].get("tp", 1) > 1:
        free = json.loads(json.dumps(j))
        hw = free["hardware"]
        free["hardware"] = dict(hw, intra_node_bw=1e15) if isinstance(hw, dict) else {"preset": hw, "intra_node_bw": 1e15}
        free["network"] = {"domain_latency_us": 0}
        jobs.append(free)
    return jobs


def render_decode(spec, results, decode):
    """The decode step at each request-rate row's measured load (DECODE:
    the `decode_jobs` results by row index; docs/inference.md, "Reading
    the errors", item 6): the decode batch that the
    measured and the simulated median TPOT imply (`load_point`), and at
    the measured one the engine's decode iteration (its GPU time, of which
    the tp all-reduces) plus the row's host time a + b x batch, against the
    measured median ITL per scheduler step (SGLang: one decode step; vLLM:
    a ten-step burst's gap / 10, which also holds what runs between bursts)."""
    lines = ["| published setup | engine | median TPOT measured | simulated | decode batch at the measured TPOT "
             "| at the simulated | decode iteration | of it tp all-reduce | + host a + b x batch | = step "
             "| measured median ITL per step | error |", "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for i, (row, s) in enumerate(zip(spec["rows"], results)):
        if "tpot_seconds_p50" not in row["measured"]:
            continue
        inf, m = s["inference"], row["measured"]
        sc = row["serving"].get("scheduler", {})
        mean_out, _, batch = load_point(row, spec)
        runs = decode[i]
        gpu = runs[0]["inference"]["iterations"]["decode"]["seconds"]
        ar = gpu - runs[1]["inference"]["iterations"]["decode"]["seconds"] if len(runs) > 1 else 0.0
        host = sc.get("step_overhead_seconds", 0.0) + sc.get("token_overhead_seconds", 0.0) * max(1, round(batch))
        step = gpu + host
        per = m["itl_seconds_p50"] / sc.get("scheduler_steps", 1)
        name = row["name"] + (" **(fitted)**" if row.get("fitted") else "")
        lines.append(f"| {name} | {row['column']} | {ms(m['tpot_seconds_p50'])} | {ms(inf['tpot_seconds_p50'])} "
                     f"| {batch:.1f} | {row['workload']['rate'] * mean_out * inf['tpot_seconds_p50']:.1f} "
                     f"| {ms(gpu)} | {ms(ar)} | {ms(host)} | {ms(step)} | {ms(per)} | {100 * (step - per) / per:+.0f}% |")
    return ("\nThe decode step at the measured load (ms; decode batch = rate x mean output x median TPOT, "
            "Little's law; the step at the measured batch against the measured median ITL per scheduler step):\n\n"
            + "\n".join(lines) + "\n")


def check_trtllm_settings(spec):
    """The trtllm_v017 rows carry the batch size and token budget that
    trtllm-bench's build heuristic gives (serving/trtllm_bench_settings.py):
    a row that says otherwise is an error, not a silent drift."""
    sys.path.insert(0, os.path.join(HERE, "serving"))
    from trtllm_bench_settings import settings  # noqa: E402
    for row in spec["rows"]:
        if row["source"] != "trtllm_v017":
            continue
        sv, sc = row["serving"], row["serving"]["scheduler"]
        want = settings(row["model"], row["parallel"]["tp"], sv["prompt_tokens"], sv["output_tokens"], row["hardware"])
        if (sc["max_num_seqs"], sc["max_num_batched_tokens"]) != want:
            raise SystemExit(f"{row['name']}: max_num_seqs / max_num_batched_tokens "
                             f"{sc['max_num_seqs']} / {sc['max_num_batched_tokens']}, trtllm-bench's heuristic {want}")


def main():
    cli, spec_path, spec, doc_path, update, name = docblock.args(__doc__)
    check_trtllm_settings(spec)
    extra = [(i, j) for i, r in enumerate(spec["rows"]) if "tpot_seconds_p50" in r["measured"]
             for j in decode_jobs(r, spec)]
    out = docblock.run_all(cli, "inspect", [job(row, spec) for row in spec["rows"]] + [j for _, j in extra], name)
    results, decode = out[:len(spec["rows"])], {}
    for (i, _), s in zip(extra, out[len(spec["rows"]):]):
        decode.setdefault(i, []).append(s)
    docblock.sync(doc_path, name, render(spec, results) + render_decode(spec, results, decode), update, "inspect",
                  f"tests/fidelity/serving_table.py CLI {spec_path} {doc_path}", len(spec["rows"]))


if __name__ == "__main__":
    main()
