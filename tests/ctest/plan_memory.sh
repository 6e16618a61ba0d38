#!/usr/bin/env bash
# docs/plan.md's memory comparison (tests/plan/memory_check.py): the rows
# against Korthikanti et al.'s Table 2 formulas regenerated and compared
# with the doc (each row's published figure is computed from the formula by
# the script, the stagecraft figure read from `inspect --json`), and the
# check fails on a doctored row; and the Nemotron-4 340B rows (the
# published layout term by term) regenerated and compared.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SCRIPT="$STAGECRAFT_SOURCE_DIR/tests/plan/memory_check.py"
DOC="$STAGECRAFT_SOURCE_DIR/docs/plan.md"

python3 "$SCRIPT" --cli "$CLI" --only korthikanti --check "$DOC" > check.txt 2>&1 \
  || fail "docs/plan.md's Korthikanti rows are not what the script prints: $(cat check.txt)"
grep -c '| korthikanti |' "$DOC" | grep -qx 8 || fail "docs/plan.md should hold the 8 Korthikanti rows (6 of Table 2, 2 with flash attention)"
# Nemotron-4 340B's published layout, term by term (docs/plan.md, "Memory you can check").
python3 "$SCRIPT" --cli "$CLI" --only nemotron --check "$DOC" > check_n.txt 2>&1 \
  || fail "docs/plan.md's Nemotron-4 340B rows are not what the script prints: $(cat check_n.txt)"
grep -c '| nemotron |' "$DOC" | grep -qx 8 || fail "docs/plan.md should hold the 8 Nemotron-4 340B rows"
# The check does fail on a changed figure.
sed 's/^\(| Korthikanti Table 2: no parallelism |.*\)| +0.0% |$/\1| +9.9% |/' "$DOC" > doctored.md
cmp -s "$DOC" doctored.md && fail "the doctoring sed changed nothing"
python3 "$SCRIPT" --cli "$CLI" --only korthikanti --check doctored.md > bad.txt 2>&1 \
  && fail "--check passed a doctored row: $(cat bad.txt)"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
