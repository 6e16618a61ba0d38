#!/usr/bin/env bash
# Serving memory by hand (issue 16): tests/fidelity/serving_memory.py
# computes KV-cache bytes per token, weights per rank and the sequences that
# fit from published config.json files with its own formulas (not the
# core's) and compares them with `stagecraft inspect --json` for GQA, MHA,
# MLA, MoE and fp8 serving jobs. python3 is installed by .ci/setup.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SRC="${STAGECRAFT_SOURCE_DIR:?}"
TMPDIR="$WORK" python3 "$SRC/tests/fidelity/serving_memory.py" "$CLI" || fail "serving_memory.py"
# The worked examples in docs/inference.md are what the script prints.
ex=$(python3 "$SRC/tests/fidelity/serving_memory.py" --examples)
for want in "kv/token bf16: 327,680 B" "kv/token bf16: 70,272 B" "tp 8 H100 weights bf16: 17,640,734,720 B/rank" "-> 200;" "kv bf16 -> 89 per rank, 712 in all; kv fp8 -> 178 per rank, 1424 in all"; do
  grep -qF -- "$want" <<<"$ex" || fail "examples lack: $want"
done
for want in "327,680 B" "70,272 B" "17.64 GB" "**200**" "**401**" "**227**" "**454**" "84.78 GB" "113 / 226" "98.86 GB" "**712 / 1,424**"; do
  grep -qF -- "$want" "$SRC/docs/inference.md" || fail "docs/inference.md lacks the worked figure: $want"
done
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
