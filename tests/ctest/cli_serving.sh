#!/usr/bin/env bash
# Issue 16's acceptance: Llama-3-70B served on 8 H100 with tp 8 — inspect
# prints KV bytes per token (80 layers x K,V x 8 kv heads x 128 x 2 B =
# 327,680, by hand), how many 8K-token sequences fit, TTFT and TPOT;
# generate writes prefill/, decode/ and mixed/ traces that validate and
# replay; DeepSeek-V3 with wide EP and disaggregated pools works the same
# way; the concurrency sweep and the errors name their fields.
set -euo pipefail
cli=${STAGECRAFT_CLI:?}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
cat >"$out/serve.json" <<'J'
{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
 "serving": {"prompt_tokens": 8000, "output_tokens": 192}}
J
"$cli" inspect --config "$out/serve.json" | tee "$out/inspect.txt"
grep -q '^kv cache    327,680 bytes per token' "$out/inspect.txt"
grep -Eq '^fit         [0-9,]+ sequences of 8192 tokens fit' "$out/inspect.txt"
grep -Eq '^ttft        [0-9.]+ ms' "$out/inspect.txt"
grep -Eq '^tpot        [0-9.]+ ms' "$out/inspect.txt"
grep -Eq '^itl         [0-9.]+ ms' "$out/inspect.txt"
# The fit, by hand: per rank 8192 tokens x 40,960 B per sequence beside
# 17,640,734,720 B of weights (70.55 B parameters, matrices over tp 8) in 80 GB.
fit=$(sed -n 's/^fit         \([0-9,]*\) sequences.*/\1/p' "$out/inspect.txt" | tr -d ,)
max=$(( (80000000000 - 17640734720) / (8192 * 40960) ))
[ "$fit" -le "$max" ] && [ "$fit" -ge $((max - 5)) ] || { echo "fit $fit, expected just under $max"; exit 1; }

"$cli" generate --config "$out/serve.json" -o "$out/llama" -q
for k in prefill decode mixed; do
  [ "$(ls "$out/llama/$k"/trace.*.et | wc -l)" -eq 8 ] || { echo "$k: expected 8 traces"; exit 1; }
  [ -f "$out/llama/$k/comm_groups.json" ]
  "$cli" validate "$out/llama/$k" >/dev/null
  "$cli" replay "$out/llama/$k" | grep -q '^completed: 8 ranks'
done
grep -q '"kv_cache_bytes_per_token": 327680' "$out/llama/summary.json"

# DeepSeek-V3: DP attention with wide EP, disaggregated pools (61 x (512 + 64) x 2 B = 70,272 per token).
cat >"$out/ds.json" <<'J'
{"mode": "inference", "model": "deepseek-v3", "parallel": {"dp": 32, "ep": 32},
 "serving": {"prompt_tokens": 2000, "output_tokens": 500, "weights_dtype": "fp8",
   "disaggregated": {"prefill": {"dp": 16, "ep": 16, "replicas": 2}, "decode": {"dp": 32, "ep": 32}}}}
J
"$cli" inspect --config "$out/ds.json" | tee "$out/ds.txt"
grep -q '^kv cache    70,272 bytes per token' "$out/ds.txt"
"$cli" generate --config "$out/ds.json" -o "$out/ds" -q
[ "$(ls "$out/ds/prefill"/trace.*.et | wc -l)" -eq 16 ]
[ "$(ls "$out/ds/decode"/trace.*.et | wc -l)" -eq 32 ]
[ ! -e "$out/ds/mixed" ]
"$cli" replay "$out/ds/decode" | grep -q '^completed: 32 ranks'
"$cli" replay "$out/ds/prefill" | grep -q '^completed: 16 ranks'
# The KV cache moves from the 16 prefill ranks to the 32 decode ranks as send/recv.
[ "$(ls "$out/ds/kv_transfer"/trace.*.et | wc -l)" -eq 48 ]
"$cli" validate "$out/ds/kv_transfer" >/dev/null
"$cli" replay "$out/ds/kv_transfer" | grep -q '^completed: 48 ranks'

# The sweep: one row per concurrency.
"$cli" simulate --config "$out/serve.json" --sweep-concurrency 1,8,64 | tee "$out/sweep.txt"
[ "$(grep -cE '^ +(1|8|64) ' "$out/sweep.txt")" -eq 3 ]
"$cli" simulate --config "$out/serve.json" --sweep-concurrency 1,8 --json | grep -q '"tpot_seconds"'

# Errors name the field.
echo '{"mode": "inference", "model": "llama3-70b", "training": {"seq_len": 4096}}' >"$out/bad.json"
if "$cli" inspect --config "$out/bad.json" 2>"$out/err.txt"; then echo "accepted a training field"; exit 1; fi
grep -q 'training.seq_len' "$out/err.txt"
echo '{"mode": "inference", "model": "llama3-70b"}' >"$out/big.json"
if "$cli" inspect --config "$out/big.json" 2>"$out/err.txt"; then echo "70B in bf16 on one H100 fit"; exit 1; fi
grep -q 'parallel.tp: the model does not fit even at one sequence' "$out/err.txt"
grep -q 'short by' "$out/err.txt"
echo '{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "serving": {"prompt_tokens": 8000, "output_tokens": 500}}' >"$out/long.json"
if "$cli" inspect --config "$out/long.json" 2>"$out/err.txt"; then echo "accepted 8500 tokens on an 8192 context"; exit 1; fi
grep -q 'serving.prompt_tokens' "$out/err.txt"
# MoE with attention tp (Mixtral 8x7B at tp 2): expert tp 2 (the default) and
# ep 2 over the same ranks both serve; their traces validate and replay, with
# one all-reduce per attention and per MoE layer and no all-to-all.
for par in '{"tp": 2}' '{"tp": 2, "ep": 2}'; do
  echo '{"mode": "inference", "model": {"preset": "mixtral-8x7b", "num_layers": 2}, "parallel": '"$par"',
   "serving": {"prompt_tokens": 256, "output_tokens": 64, "concurrency": 8}}' >"$out/moe_tp.json"
  "$cli" inspect --config "$out/moe_tp.json" >/dev/null
  rm -rf "$out/moe"
  "$cli" generate --config "$out/moe_tp.json" -o "$out/moe" -q
  for k in prefill decode mixed; do
    "$cli" validate "$out/moe/$k" >/dev/null
    "$cli" replay "$out/moe/$k" | grep -q '^completed: 2 ranks'
  done
done
# Experts over more ranks than tp: refused, naming ep and the layout to use instead.
echo '{"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 2, "dp": 2, "ep": 4}}' >"$out/moe_wide.json"
if "$cli" inspect --config "$out/moe_wide.json" 2>"$out/err.txt"; then echo "accepted ep 4 over tp 2"; exit 1; fi
grep -q 'parallel.ep: a mixture-of-experts model at tp 2' "$out/err.txt"
grep -q '"tp": 1, "dp": 4, "ep": 4' "$out/err.txt"
echo '{"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 1, "dp": 4, "ep": 4}}' >"$out/moe_dp.json"
"$cli" inspect --config "$out/moe_dp.json" >/dev/null
# A request mix: inspect and generate (the longest prompt's prefill) work, the traces validate.
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 1000, "output_tokens": 100, "weight": 3},
  {"prompt_tokens": 3000, "output_tokens": 300}], "concurrency": 8, "chunk_tokens": 512}}' >"$out/mix.json"
"$cli" inspect --config "$out/mix.json" >"$out/mix.txt"
grep -q '^requests    a mix of 2 classes: 1000 + 100 (75%' "$out/mix.txt"
grep -Eq '^fit         [0-9,]+ sequences of the mix fit' "$out/mix.txt"
"$cli" generate --config "$out/mix.json" -o "$out/mix" -q
for k in prefill decode mixed; do "$cli" validate "$out/mix/$k" >/dev/null; done
grep -q '"requests"' "$out/mix/summary.json"
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"prompt_tokens": 10, "requests": [{"prompt_tokens": 1, "output_tokens": 1}]}}' >"$out/mixbad.json"
if "$cli" inspect --config "$out/mixbad.json" 2>"$out/err.txt"; then echo "accepted requests with prompt_tokens"; exit 1; fi
grep -q 'serving.requests' "$out/err.txt"
echo "cli_serving: ok"
