#!/usr/bin/env bash
# stagecraft plan (docs/plan.md): the ranked table, --json (shape, key order,
# each candidate's job feeds generate and simulates to its step), --csv,
# --export-best, constraints from flags and from the job's "plan" block,
# impossible constraints, nothing fits, and SIGINT printing the best so far.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"

BASE=(--model llama3-8b --layers 4 --hardware h100 --seq-len 1024 --global-batch-size 16 --gpus 8 --max-mbs 1 --max-cp 1)

"$CLI" plan "${BASE[@]}" --top 3 --progress none > text.txt 2> text.err || { fail "plan"; cat text.err; }
grep -q "^searched " text.txt || fail "no counts line: $(cat text.txt)"
grep -q "^#1 " text.txt || fail "no bound line for #1"
grep -q "^why #1 " text.txt || fail "no why line"
[[ $(grep -c '^[123]  tp' text.txt) == 3 ]] || fail "not 3 ranked rows: $(cat text.txt)"

"$CLI" plan "${BASE[@]}" --top 3 --json --progress none > plan.json || fail "plan --json"
# Validation, estimates and simulation run on the plan's threads: the
# output does not depend on how many.
for t in 1 2; do
  "$CLI" plan "${BASE[@]}" --top 3 --json --progress none --threads $t > threads$t.json || fail "plan --threads $t"
done
cmp -s threads1.json threads2.json || fail "--threads 1 and 2 differ: $(diff threads1.json threads2.json | head -5)"
cmp -s threads1.json plan.json || fail "--threads 1 differs from the default thread count"
"$CLI" plan "${BASE[@]}" --top 3 --csv --progress none > plan.csv || fail "plan --csv"
python3 - <<'PY' || fail "plan --json / --csv"
import csv, json
text = open("plan.json").read()
p = json.loads(text)
keys = list(json.JSONDecoder(object_pairs_hook=lambda kv: [k for k, _ in kv]).decode(text))
assert keys == ["gpus", "objective", "counts", "candidates", "why_winner", "closest_misses", "complete"], keys
c = p["counts"]
assert c["considered"] == sum(c["rejected"].values()) + c["simulated"], c
assert p["gpus"] == 8 and p["complete"] is True and len(p["candidates"]) == 3
steps = [x["step_seconds"] for x in p["candidates"]]
assert steps == sorted(steps), steps
for i, x in enumerate(p["candidates"]):
    assert x["rank"] == i + 1
    l = x["layout"]
    assert l["tp"] * l["cp"] * l["pp"] * l["dp"] == 8, l
    assert x["peak_memory_bytes"] <= x["memory_capacity_bytes"]
    assert abs(x["tokens_per_second"] - 16 * 1024 / x["step_seconds"]) < 1e-3 * x["tokens_per_second"]
    assert set(x["exposed_comm_seconds"]) == {"tp", "cp", "ep", "pp", "dp"}
    json.dump(x["job"], open(f"job{i}.json", "w"))
rows = list(csv.DictReader(open("plan.csv")))
assert len(rows) == 3 and [float(r["step_seconds"]) for r in rows] == steps, rows
PY
# The winner's job, fed back, simulates to its step.
"$CLI" simulate --config job0.json --json > sim0.json || fail "simulate the winner's job"
python3 -c "
import json; p = json.load(open('plan.json')); s = json.load(open('sim0.json'))
assert s['step_seconds'] == p['candidates'][0]['step_seconds'], (s['step_seconds'], p['candidates'][0]['step_seconds'])
" || fail "winner's job does not simulate to its step"

# --export-best writes the winner's archive.
"$CLI" plan "${BASE[@]}" --top 2 --progress none --export-best -o best.zip > best.txt 2> best.err || { fail "export-best"; cat best.err; }
[[ -s best.zip ]] || fail "no best.zip"
python3 -c "
import json, zipfile; z = zipfile.ZipFile('best.zip'); s = json.loads(z.read('summary.json'))
p = json.load(open('plan.json')); w = p['candidates'][0]['layout']
assert s['layout']['tp'] == w['tp'] and s['layout']['pp'] == w['pp'] and s['layout']['dp'] == w['dp'], s['layout']
" || fail "best.zip is not the winner"

# Constraints: flags and the job's "plan" block agree.
"$CLI" plan "${BASE[@]}" --tp 2 --top 2 --json --progress none > tp2.json || fail "--tp 2"
cat > job.json <<'J'
{"model": {"preset": "llama3-8b", "num_layers": 4}, "training": {"seq_len": 1024, "global_batch_size": 16},
 "hardware": "h100", "plan": {"tp": 2, "max_mbs": 1, "max_cp": 1, "top": 2}}
J
"$CLI" plan --config job.json --gpus 8 --json --progress none > tp2c.json || fail "plan block"
cmp -s tp2.json tp2c.json || fail "flags and plan block differ"
python3 -c "
import json; p = json.load(open('tp2.json'))
assert all(c['layout']['tp'] == 2 for c in p['candidates'])
" || fail "--tp 2 not honoured"

# Impossible constraints name the conflicting ones.
"$CLI" plan "${BASE[@]}" --tp 8 --max-tp 4 > /dev/null 2> conflict.err; rc=$?
[[ $rc == 1 ]] || fail "conflicting constraints exit $rc"
grep -q "plan.tp: tp 8 conflicts with max_tp 4" conflict.err || fail "conflict message: $(cat conflict.err)"
"$CLI" plan --model llama3-8b --gpus 12 --tp 8 > /dev/null 2> div.err; rc=$?
[[ $rc == 1 ]] || fail "indivisible gpus exit $rc"
grep -q "gpus: gpus 12 is not divisible by the fixed degrees tp 8" div.err || fail "divisibility message: $(cat div.err)"
"$CLI" plan "${BASE[@]}" --schedules 2f2b > /dev/null 2> sched.err; rc=$?
[[ $rc == 1 ]] && grep -q "plan.schedules\[0\]: unknown value '2f2b'" sched.err || fail "bad schedule: $rc $(cat sched.err)"
"$CLI" plan --model llama3-8b > /dev/null 2>&1; [[ $? == 2 ]] || fail "missing --gpus is not a usage error"

# Nothing fits: say so, with the closest misses and by how much.
"$CLI" plan "${BASE[@]}" --memory-reserve-gib 74 --progress none > none.txt 2> none.err; rc=$?
[[ $rc == 1 ]] || fail "nothing fits exit $rc"
grep -q "^no layout fits on 8 GPUs" none.txt || fail "no 'no layout fits': $(cat none.txt)"
grep -q "short by" none.txt || fail "closest misses lack the shortfall: $(cat none.txt)"

# SIGINT once some layouts are simulated prints the best so far and exits
# by the signal (the test pause holds the search at that point).
STAGECRAFT_TEST_PAUSE=plan-simulate "$CLI" plan "${BASE[@]}" --threads 1 --progress none > int.txt 2> int.err &
pid=$!
for _ in $(seq 1 600); do grep -q "test pause at plan-simulate" int.err && break; sleep 0.1; done
grep -q "test pause at plan-simulate" int.err || fail "the search never paused: $(cat int.err)"
kill -INT $pid
wait $pid; rc=$?
[[ $rc == 130 ]] || fail "SIGINT exit $rc (expected 130): $(cat int.err)"
grep -q "INCOMPLETE (interrupted or time limit): best so far" int.txt || fail "SIGINT: no best-so-far line: $(cat int.txt)"
grep -q '^1  tp' int.txt || fail "SIGINT: no candidate in the best so far: $(cat int.txt)"
grep -q "interrupted by SIGINT" int.err || fail "SIGINT: no note: $(cat int.err)"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
