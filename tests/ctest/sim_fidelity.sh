#!/usr/bin/env bash
# docs/fidelity.md's tables are what `stagecraft simulate` gives now: the
# published runs of tests/fidelity/*.json are simulated again and each
# table must match the doc byte for byte (no drift). Regenerate with
# tests/fidelity/table.py ... --update (docs/fidelity.md says how).
# Step specs are also checked to be well formed (spec_check.py).
# tests/fidelity/fit.py is run on one published row and must show the
# physics: a higher GEMM efficiency, a shorter step.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"
SRC="${STAGECRAFT_SOURCE_DIR:?}"
for spec in "$SRC"/tests/fidelity/*.json; do
  TMPDIR="$WORK" python3 "$SRC/tests/fidelity/table.py" "$CLI" "$spec" "$SRC/docs/fidelity.md" || fail "$(basename "$spec")"
done
steps=("$SRC"/tests/fidelity/*.json)
mapfile -t steps < <(grep -l '"kind": "step"' "${steps[@]}" 2>/dev/null)
if [[ ${#steps[@]} -gt 0 ]]; then
  python3 "$SRC/tests/fidelity/spec_check.py" "${steps[@]}" || fail "spec_check"
fi
# spec_check refuses a row that repeats an earlier run (a copy of the MoE
# spec's first row); rows that differ only in their training overrides
# (the EP-overlap rows beside their runs without it) passed above.
python3 - "$SRC/tests/fidelity/megatron-h100-moe.json" dup.json <<'PY' || fail "dup spec"
import json, sys
s = json.load(open(sys.argv[1]))
s["rows"].append(dict(s["rows"][0], name="a copy"))
json.dump(s, open(sys.argv[2], "w"))
PY
if python3 "$SRC/tests/fidelity/spec_check.py" dup.json > dup.txt 2>&1; then fail "spec_check took a repeated run"; fi
grep -q "the same run as an earlier row" dup.txt || fail "spec_check's message for a repeated run"
# A row gives exactly one published figure, and an MFU needs the spec's peak
# (the README spec's rows give TFLOP/s per GPU or MFU).
python3 - "$SRC/tests/fidelity/megatron-lm-readme-h100.json" two.json nopeak.json <<'PY' || fail "published-form specs"
import json, sys
s = json.load(open(sys.argv[1]))
t = json.loads(json.dumps(s))
t["rows"][0]["published_step_seconds"] = 1.0
json.dump(t, open(sys.argv[2], "w"))
n = json.loads(json.dumps(s))
del n["mfu_peak_tflops"]
json.dump(n, open(sys.argv[3], "w"))
PY
if python3 "$SRC/tests/fidelity/spec_check.py" two.json > two.txt 2>&1; then fail "spec_check took two published figures"; fi
grep -q "give exactly one of published_step_seconds" two.txt || fail "spec_check's message for two published figures"
if python3 "$SRC/tests/fidelity/spec_check.py" nopeak.json > nopeak.txt 2>&1; then fail "spec_check took an MFU without a peak"; fi
grep -q "published_mfu: the spec needs mfu_peak_tflops" nopeak.txt || fail "spec_check's message for an MFU without a peak"

# fit.py on Narayanan et al.'s 18.4B row: the error must fall as
# gemm_efficiency rises (0.70 -> 0.80 -> 0.90), one row, three columns.
TMPDIR="$WORK" python3 "$SRC/tests/fidelity/fit.py" "$CLI" gemm_efficiency 0.7,0.8,0.9 \
  "$SRC/tests/fidelity/narayanan2021-table1.json:18.4B" > fit.txt || fail "fit.py"
python3 - fit.txt <<'PY' || fail "fit.py output"
import re, sys
rows = [l for l in open(sys.argv[1]) if l.startswith("| narayanan2021-table1: 18.4B |")]
assert len(rows) == 1, rows
errs = [float(x) for x in re.findall(r"([+-][0-9.]+)%", rows[0])]
assert len(errs) == 3 and errs[0] > errs[1] > errs[2], errs
PY
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
