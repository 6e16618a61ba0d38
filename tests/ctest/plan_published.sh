#!/usr/bin/env bash
# docs/plan.md's published-layouts table (tests/plan/published_layouts.py):
# its cheapest row (Megatron-Bridge's Llama 3 8B H100 BF16 recipe on 8 GPUs)
# regenerated and compared with the doc, and the script fails on a row that
# differs (a doctored copy of the doc).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SCRIPT="$STAGECRAFT_SOURCE_DIR/tests/plan/published_layouts.py"
DOC="$STAGECRAFT_SOURCE_DIR/docs/plan.md"

python3 "$SCRIPT" --cli "$CLI" --only llama3-8b-h100-bf16 --check "$DOC" > check.txt 2>&1 \
  || fail "docs/plan.md's llama3-8b-h100-bf16 row is not what the script prints: $(cat check.txt)"
# The check does fail on a changed row.
sed 's/^| llama3-8b-h100-bf16 (\(.*\)| [0-9.]* | \(tp[^|]*\)|/| llama3-8b-h100-bf16 (\1| 99.999 | \2|/' "$DOC" > doctored.md
cmp -s "$DOC" doctored.md && fail "the doctoring sed changed nothing"
python3 "$SCRIPT" --cli "$CLI" --only llama3-8b-h100-bf16 --check doctored.md > bad.txt 2>&1 \
  && fail "--check passed a doctored row: $(cat bad.txt)"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
