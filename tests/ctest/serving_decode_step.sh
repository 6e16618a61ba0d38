#!/usr/bin/env bash
# docs/inference.md's check of the serving decode iteration against whole
# decode steps measured on an H100 without an engine
# (tests/bench/gpu/results/h100-sxm-2026-11-27-decode-step.json), and its
# check of decode layers measured on an H200, are what
# `stagecraft inspect` gives now, byte for byte. Regenerate with
# tests/fidelity/serving/decode_step_check.py ... --update.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SRC="${STAGECRAFT_SOURCE_DIR:?}"
TMPDIR="$WORK" python3 "$SRC/tests/fidelity/serving/decode_step_check.py" "$CLI" \
  "$SRC/tests/bench/gpu/results/h100-sxm-2026-11-27-decode-step.json" "$SRC/docs/inference.md" ||
  fail "decode-step"
# The same check on an H200 with FP8 and bf16 linears, per layer
# (tests/bench/gpu/results/h200-2026-11-28-fp8-decode.json, `step`).
TMPDIR="$WORK" python3 "$SRC/tests/fidelity/serving/decode_step_check.py" "$CLI" \
  "$SRC/tests/bench/gpu/results/h200-2026-11-28-fp8-decode.json" "$SRC/docs/inference.md" ||
  fail "decode-step-h200"
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
