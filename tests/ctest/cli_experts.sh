#!/usr/bin/env bash
# Issue 3's expert/HSDP flags end to end through the CLI: a DeepSeek-V3-
# shaped job (MLA, routed + shared experts, dense first layers) with tp + SP
# + cp + pp + ep + expert tp 1 + ZeRO 1, and a Mixtral job with HSDP
# ZeRO 3, written to disk, validated and replayed on every rank; the
# all-to-alls sit where the MoE layer is; a bad --ep is refused naming the
# field. Outputs go to files before grep: `cmd | grep -q` under pipefail
# fails when grep exits early and the writer gets SIGPIPE.
set -euo pipefail
cli=${STAGECRAFT_CLI:?}
out=$(mktemp -d)
trap '[[ $BASHPID == $$ ]] && rm -rf "$out"' EXIT  # main shell only: see lib/common.bash
"$cli" generate -q --model deepseek-v3 --layers 4 --seq-len 256 --tp 2 --sequence-parallel --cp 2 \
  --pp 2 --dp 2 --ep 4 --expert-tp 1 --zero 1 --global-batch-size 4 -o "$out/ds"
[ "$(ls "$out/ds"/trace.*.et | wc -l)" -eq 16 ] || { echo "expected 16 traces"; exit 1; }
"$cli" validate "$out/ds"
"$cli" replay "$out/ds" > "$out/replay-ds.txt"
grep -q '^completed: 16 ranks' "$out/replay-ds.txt" || { echo "replay: $(tail -3 "$out/replay-ds.txt")"; exit 1; }
# DeepSeek-V3's first 3 layers are dense: the one MoE layer (3) is on
# pipeline stage 1 (ranks 8-15), whose traces carry the token all-to-alls.
"$cli" dump "$out/ds/trace.8.et" > "$out/dump8.txt"
"$cli" dump "$out/ds/trace.0.et" > "$out/dump0.txt"
grep -q 'ALL_TO_ALL' "$out/dump8.txt" || { echo "no all-to-all in rank 8"; exit 1; }
if grep -q 'ALL_TO_ALL' "$out/dump0.txt"; then echo "all-to-all on the dense stage 0"; exit 1; fi
grep -q '"ep": 4' "$out/ds/summary.json" || { echo "summary lacks layout.ep"; exit 1; }
"$cli" generate -q --model mixtral-8x7b --layers 2 --seq-len 256 --dp 8 --ep 4 --zero 3 --shard-group 2 -o "$out/mx"
"$cli" validate "$out/mx"
"$cli" replay "$out/mx" > "$out/replay-mx.txt"
grep -q '^completed: 8 ranks' "$out/replay-mx.txt" || { echo "replay: $(tail -3 "$out/replay-mx.txt")"; exit 1; }
# Bad input names the field.
if "$cli" inspect --model gpt3-1.7b --dp 2 --ep 2 2> "$out/err.txt"; then echo "--ep on a dense model accepted"; exit 1; fi
grep -q 'parallel.ep' "$out/err.txt" || { echo "error does not name parallel.ep: $(cat "$out/err.txt")"; exit 1; }
# Megatron's recompute_modules through --recompute-modules: a DeepSeek-V3
# job recomputing its MoE block (all-to-alls included), norms and MLA up
# projections runs to completion on every rank; the list is echoed in the
# summary's job; an unknown module and a list without selective recompute
# are refused naming the field and the flag; the plan keeps the list.
"$cli" generate -q --model deepseek-v3 --layers 4 --seq-len 256 --pp 2 --dp 4 --ep 4 --global-batch-size 8 \
  --recompute selective --recompute-modules moe,layernorm,mla_up_proj -o "$out/rm"
"$cli" validate "$out/rm"
"$cli" replay "$out/rm" > "$out/replay-rm.txt"
grep -q '^completed: 8 ranks' "$out/replay-rm.txt" || { echo "replay: $(tail -3 "$out/replay-rm.txt")"; exit 1; }
grep -q '"recompute_modules": \[' "$out/rm/summary.json" || { echo "summary lacks recompute_modules"; exit 1; }
if "$cli" inspect --model deepseek-v3 --layers 4 --dp 8 --ep 8 --recompute selective --recompute-modules moe,norm 2> "$out/err-rm.txt"; then
  echo "unknown module accepted"; exit 1; fi
grep -q 'training.recompute_modules\[1\].*unknown module "norm".*(from --recompute-modules)' "$out/err-rm.txt" \
  || { echo "recompute_modules error: $(cat "$out/err-rm.txt")"; exit 1; }
if "$cli" inspect --model deepseek-v3 --layers 4 --dp 8 --ep 8 --recompute-modules moe 2> "$out/err-rm2.txt"; then
  echo "recompute_modules without selective accepted"; exit 1; fi
grep -q 'training.recompute_modules: .*"none"' "$out/err-rm2.txt" || { echo "error: $(cat "$out/err-rm2.txt")"; exit 1; }
# The flag's list may carry spaces after its commas.
"$cli" inspect --model deepseek-v3 --layers 4 --dp 8 --ep 8 --recompute selective --recompute-modules "moe_act, layernorm" \
  --json > "$out/rm-space.json"
python3 -c "import json,sys; assert json.load(open(sys.argv[1]))['job']['training']['recompute_modules'] == ['moe_act', 'layernorm']" \
  "$out/rm-space.json" || { echo "spaces in --recompute-modules"; exit 1; }
printf '%s' '{"model": {"preset": "mixtral-8x7b", "num_layers": 2}, "training": {"seq_len": 256, "global_batch_size": 16,
  "recompute": "selective", "recompute_modules": ["moe_act", "layernorm"]}}' > "$out/rm-plan.json"
"$cli" plan --config "$out/rm-plan.json" --gpus 8 --recompute selective --top 1 --json > "$out/rm-plan-out.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['candidates'][0]['job']['training']; \
assert c['recompute'] == 'selective' and c['recompute_modules'] == ['moe_act', 'layernorm'], c" "$out/rm-plan-out.json"
# Multi-token prediction through --mtp-num-layers: a DeepSeek-V3 job with
# its MTP module on the last stage runs to completion on every rank; the
# key is echoed in the summary's job and kept by the plan; a count above
# the layer cap is refused naming the field.
"$cli" generate -q --model deepseek-v3 --layers 4 --mtp-num-layers 1 --seq-len 256 --pp 2 --dp 4 --ep 4 \
  --global-batch-size 8 -o "$out/mtp"
"$cli" validate "$out/mtp"
"$cli" replay "$out/mtp" > "$out/replay-mtp.txt"
grep -q '^completed: 8 ranks' "$out/replay-mtp.txt" || { echo "replay: $(tail -3 "$out/replay-mtp.txt")"; exit 1; }
grep -q '"mtp_num_layers": 1' "$out/mtp/summary.json" || { echo "summary lacks mtp_num_layers"; exit 1; }
"$cli" inspect --model deepseek-v3 --layers 4 --mtp-num-layers 1 --dp 8 --ep 8 --seq-len 256 --global-batch-size 8 \
  > "$out/mtp-inspect.txt"
grep -q '^mtp         1 multi-token-prediction module on the last stage (MoE layer)$' "$out/mtp-inspect.txt" \
  || { echo "inspect does not say the MTP module: $(head -8 "$out/mtp-inspect.txt")"; exit 1; }
if "$cli" inspect --model deepseek-v3 --layers 4 --dp 8 --ep 8 --mtp-num-layers 10001 2> "$out/err-mtp.txt"; then
  echo "10,001 MTP layers accepted"; exit 1; fi
grep -q 'model.mtp_num_layers' "$out/err-mtp.txt" || { echo "mtp error: $(cat "$out/err-mtp.txt")"; exit 1; }
"$cli" plan --model mixtral-8x7b --layers 2 --mtp-num-layers 3 --seq-len 256 --global-batch-size 16 --gpus 8 --top 1 \
  --json > "$out/mtp-plan.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1]))['candidates'][0]['job']['model']; \
assert c['mtp_num_layers'] == 3, c" "$out/mtp-plan.json"
echo "cli_experts: ok"
