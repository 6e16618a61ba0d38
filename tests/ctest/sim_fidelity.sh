#!/usr/bin/env bash
# docs/fidelity.md's tables are what `stagecraft simulate` gives now: the
# published runs of tests/fidelity/*.json are simulated again and each
# table must match the doc byte for byte (no drift). Regenerate with
# tests/fidelity/table.py ... --update (docs/fidelity.md says how).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SRC="${STAGECRAFT_SOURCE_DIR:?}"
for spec in "$SRC"/tests/fidelity/*.json; do
  TMPDIR="$WORK" python3 "$SRC/tests/fidelity/table.py" "$CLI" "$spec" "$SRC/docs/fidelity.md" || fail "$(basename "$spec")"
done
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
