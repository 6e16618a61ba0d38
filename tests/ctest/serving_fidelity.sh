#!/usr/bin/env bash
# docs/inference.md's comparison with published serving measurements is what
# `stagecraft inspect` gives now: each published setup of
# tests/fidelity/serving/serving-published.json is run again and the table must
# match the doc byte for byte (no drift). Regenerate with
# tests/fidelity/serving_table.py ... --update (docs/inference.md says how).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SRC="${STAGECRAFT_SOURCE_DIR:?}"
TMPDIR="$WORK" python3 "$SRC/tests/fidelity/serving_table.py" "$CLI" "$SRC/tests/fidelity/serving/serving-published.json" \
  "$SRC/docs/inference.md" || fail "serving-published.json"
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
