#!/usr/bin/env bash
# The second, independent oracle for the Hugging Face fixtures: the stdlib
# reference counter (tests/fixtures/hf/param_count.py, written from the
# transformers module structure, not from our C++) must reproduce every
# sourced count in expected_counts.json (exit 1 on any MISMATCH or
# unsupported fixture), and must refuse every config in refuse/. python3 is
# installed by .ci/setup; its absence is a failure, not a skip.
set -euo pipefail
src="${STAGECRAFT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
dir="$src/tests/fixtures/hf"
command -v python3 >/dev/null || { echo "hf_param_count: python3 is required (.ci/setup installs it)"; exit 1; }
out=$(python3 "$dir/param_count.py" "$dir"/*.config.json)
echo "$out"
matches=$(grep -c ' MATCH' <<<"$out" || true)
[ "$matches" -ge 29 ] || { echo "hf_param_count: expected at least 29 MATCH rows, got $matches"; exit 1; }
if grep -q 'MISMATCH' <<<"$out"; then echo "hf_param_count: MISMATCH"; exit 1; fi
for f in "$dir"/refuse/*.json; do
  if python3 "$dir/param_count.py" "$f" >/dev/null 2>&1; then
    echo "hf_param_count: $f should be refused by the reference counter"; exit 1
  fi
done
echo "hf_param_count: ok"
