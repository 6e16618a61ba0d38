#!/usr/bin/env python3
"""The engine settings trtllm-bench (TensorRT-LLM v0.17) chose for the rows
of its perf-overview throughput table: max_batch_size and max_num_tokens,
from the dataset's ISL/OSL and the GPU's memory by its build heuristic
(tensorrt_llm/bench/build/tuning.py, calc_engine_setting and
finetune_setting; read in its source, the rule restated here, not its
code). The rows of tests/fidelity/serving/serving-published.json whose
source is `trtllm_v017` carry these two numbers as
serving.scheduler.max_num_seqs and max_num_batched_tokens.

usage: trtllm_bench_settings.py   (prints one line per model, tp and ISL/OSL)

The rule: FP8 weights and KV (1 byte each); KV bytes per token = 2 x layers
x max(tp, KV heads) x head size; memory for the KV cache = 0.95 x (the
GPUs' memory - the parameter count in bytes); KV requests = its tokens /
(ISL + OSL); batch = min(requests, 4096) (pp 1), tokens = min(batch x (1 +
ISL / OSL), 32768); the batch rounded up to 32 (at least 64) below 256, to
128 below 1,024, else to 256; the tokens rounded up to 256 (at least 2,048)
below 4,096, to 512 below 8,192, else to 1,024. The GPU's memory is what
the CUDA runtime reports for an H100 80GB HBM3, 81,559 MiB (79.65 GiB, in
GiB as the heuristic counts), and for an H200 141GB HBM3e 143,771 MiB
(both as nvidia-smi reports them); the parameter counts are the
checkpoints' (Llama 3.1 8B 8.03 B, 70B 70.55 B)."""
import math

GIB = {"h100": 81559 / 1024, "h200": 143771 / 1024}  # the GPU's memory, GiB
MODELS = {"llama-3.1-8b": (8.03, 32, 8, 128), "llama-3.1-70b": (70.55, 80, 8, 128)}  # params (B), layers, KV heads, head
LENGTHS = [(128, 128), (128, 2048), (128, 4096), (500, 2000), (1000, 1000), (2048, 128), (2048, 2048), (5000, 500),
           (20000, 2000)]


def settings(model, tp, isl, osl, gpu):
    params, layers, kv_heads, head = MODELS[model]
    per_token = 2 * layers * max(tp, kv_heads) * head / 1024**3
    kv_requests = 0.95 * (GIB[gpu] * tp - params) / per_token / (isl + osl)
    bs = min(kv_requests, 4096)
    tokens = min(bs * (1 + isl / osl), 32768)
    return round_up(bs, 64, ((256, 32), (1024, 128)), 256), round_up(tokens, 2048, ((4096, 256), (8192, 512)), 1024)


def round_up(v, floor, bands, last):
    """v rounded up to the step of the first band (limit, step) it is below,
    else to `last`; at least `floor` (the heuristic's minimum)."""
    step = next((st for limit, st in bands if v < limit), last)
    return max(floor, step * math.ceil(v / step))


if __name__ == "__main__":
    for gpu, rows in (("h100", (("llama-3.1-8b", (1,)), ("llama-3.1-70b", (2, 4, 8)))),
                      ("h200", (("llama-3.1-8b", (1,)), ("llama-3.1-70b", (1, 2, 4, 8))))):
        for model, tps in rows:
            for tp in tps:
                for isl, osl in LENGTHS:
                    print(gpu, model, tp, isl, osl, *settings(model, tp, isl, osl, gpu))
