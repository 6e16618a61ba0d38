#!/usr/bin/env bash
# stagecraft plan (docs/plan.md): the ranked table, --json (shape, key order,
# each candidate's job feeds generate and simulates to its step), --csv,
# --export-best, constraints from flags and from the job's "plan" block,
# impossible constraints, nothing fits, and SIGINT printing the best so far.
FIXTURES="$(cd "$(dirname "${BASH_SOURCE[0]}")/../fixtures/hf" && pwd)"
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
"$CLI" plan --model llama3-8b --seq-len 1024 --global-batch-size 16 --gpus 12 --tp 8 > /dev/null 2> div.err; rc=$?
[[ $rc == 1 ]] || fail "indivisible gpus exit $rc"
grep -q "gpus: gpus 12 is not divisible by the fixed degrees tp 8" div.err || fail "divisibility message: $(cat div.err)"
"$CLI" plan "${BASE[@]}" --schedules 2f2b > /dev/null 2> sched.err; rc=$?
[[ $rc == 1 ]] && grep -q "plan.schedules\[0\]: unknown value '2f2b'" sched.err || fail "bad schedule: $rc $(cat sched.err)"
"$CLI" plan --model llama3-8b > /dev/null 2>&1; [[ $? == 2 ]] || fail "missing --gpus is not a usage error"
# Past a job's largest world size (2^20): refused at once, not searched.
for g in 1048577 99999999999; do
  timeout 20 "$CLI" plan --model llama3-8b --gpus $g --seq-len 8192 --global-batch-size 128 > big.out 2> big.err; rc=$?
  [[ $rc == 2 ]] && grep -q "\-\-gpus expects an integer in \[1, 1048576\]" big.err || fail "--gpus $g: exit $rc $(head -c 300 big.err)"
done

# Nothing fits: say so, with the closest misses and by how much.
"$CLI" plan "${BASE[@]}" --memory-reserve-gib 78.5 --progress none > none.txt 2> none.err; rc=$?
[[ $rc == 1 ]] || fail "nothing fits exit $rc"
grep -q "^no layout fits on 8 GPUs" none.txt || fail "no 'no layout fits': $(cat none.txt)"
grep -q "short by" none.txt || fail "closest misses lack the shortfall: $(cat none.txt)"

# Constraints that leave no layout: said as such, with the flags, not as
# "no layout fits" (session 21's audit).
"$CLI" plan --model llama3-8b --layers 4 --seq-len 1024 --global-batch-size 16 --gpus 8 --max-cp 1 --mbs 3 --progress none > cons.txt 2> cons.err; rc=$?
[[ $rc == 1 ]] || fail "no layout under the constraints exit $rc"
grep -q "^no layout meets the search's constraints on 8 GPUs (--mbs 3 --max-cp 1): nothing was searched" cons.txt ||
  fail "constraints message: $(cat cons.txt)"
grep -q "^no layout fits" cons.txt && fail "constraints reported as 'no layout fits'"
# --time-limit bounds the whole command: with --export-best a stopped
# search writes nothing (the export would run past the limit) and says so;
# a huge limit is a usage error (the deadline's clock would overflow); an
# OUT that cannot be written is refused before the search, not after it.
BIG=(--model llama3-70b --gpus 4096 --seq-len 8192 --global-batch-size 2048 --threads 1 --progress none)
"$CLI" plan "${BIG[@]}" --time-limit 1 --export-best -o tle.zip > tle.txt 2> tle.err; rc=$?
[[ $rc == 1 ]] || fail "time-limited --export-best exit $rc"
grep -q "export-best not written: the time limit stopped the search" tle.err || fail "no export note: $(cat tle.err)"
[[ -e tle.zip ]] && fail "a time-limited search wrote its export"
grep -q "^why #1      #1" tle.txt && fail "why line doubles #1: $(grep 'why #1' tle.txt)"
"$CLI" plan "${BASE[@]}" --time-limit 1e10 > /dev/null 2> huge.err; rc=$?
[[ $rc == 2 ]] && grep -q "time-limit must be a number of seconds in (0, 1e6]" huge.err || fail "--time-limit 1e10: $rc $(cat huge.err)"
mkdir -p full && touch full/x
"$CLI" plan "${BIG[@]}" --export-best -o full > /dev/null 2> full.err; rc=$?
[[ $rc == 1 ]] && grep -q "full: exists and is not empty" full.err || fail "export-best into a non-export: $rc $(cat full.err)"
# Refused before the search: not after a 4,096-GPU search (tens of seconds).
grep -q "searched" full.err && fail "OUT checked after the search"
# A Hugging Face import's warnings, as every other command prints them.
cat > hfw.json <<'JSON'
{"model": {"hf_config": {"model_type": "llama", "hidden_size": 256, "num_hidden_layers": 2, "num_attention_heads": 4,
  "intermediate_size": 512, "vocab_size": 1000, "made_up_field": 3}}, "training": {"seq_len": 256, "global_batch_size": 8}}
JSON
"$CLI" plan --config hfw.json --gpus 2 --threads 1 --progress none > /dev/null 2> hfw.err || fail "plan of an imported job"
grep -q "warning: model.hf_config: made_up_field = 3: not read" hfw.err || fail "plan hides the import warnings: $(cat hfw.err)"
# Rows that time alike and differ only in the rank order (here beside
# expert parallelism) share one row: the megatron order stands, llama3 is
# its alternative; no two rows have the same step.
python3 -c "import json; json.dump({'model': {'hf_config': json.load(open('$FIXTURES/qwen3-30b-a3b.config.json'))},
  'training': {'seq_len': 4096, 'global_batch_size': 64}}, open('q30.json', 'w'))"
"$CLI" plan --config q30.json --gpus 8 --progress none --json > q30.out 2> q30.err || fail "plan of Qwen3 30B-A3B: $(cat q30.err)"
python3 - "$CLI" <<'PY' || fail "order twins not collapsed, or collapsed without timing alike"
import json, subprocess, sys
c = json.load(open("q30.out"))["candidates"]
steps = [x["step_seconds"] for x in c]
assert len(steps) == len(set(steps)), steps
twins = [(x, a) for x in c for a in x.get("alternatives", []) if a["order"] == ["tp", "cp", "pp", "dp"]]
assert twins and all(x["layout"]["order"] == ["tp", "cp", "dp", "pp"] for x in c), c
# Each twin, simulated on its own, times as its row (each was simulated
# by the search, not given its row's figures).
for row, alt in twins:
    job = row["job"]
    job["parallel"]["order"] = alt["order"]
    json.dump(job, open("twin.json", "w"))
    out = subprocess.run([sys.argv[1], "simulate", "--config", "twin.json", "--json"], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout)["step_seconds"] == row["step_seconds"], (row["layout"], out.stdout[:200])
PY
# Dense tp 2 x pp 2 over two nodes: the two orders place the groups
# differently and time differently: separate rows, none an alternative.
"$CLI" plan --model llama3-8b --layers 4 --seq-len 2048 --global-batch-size 64 --gpus 16 --tp 2 --pp 2 --mbs 1 \
  --recompute none --zero 0 --schedules 1f1b --max-cp 1 --progress none --json > orders.out 2> orders.err || fail "plan orders: $(cat orders.err)"
python3 - <<'PY' || fail "distinct orders merged into one row"
import json
c = json.load(open("orders.out"))["candidates"]
orders = [x["layout"]["order"] for x in c]
assert ["tp", "cp", "pp", "dp"] in orders and ["tp", "cp", "dp", "pp"] in orders, orders
assert not any(x.get("alternatives") for x in c), c
PY
# FP8 training through --fp8-recipe, as the other commands take it.
"$CLI" plan "${BASE[@]}" --fp8-recipe tensorwise --top 1 --json --progress none > fp8.json 2> fp8.err ||
  fail "plan --fp8-recipe: $(cat fp8.err)"
python3 -c "import json,sys; c=json.load(open('fp8.json'))['candidates'][0]; assert c['job']['training']['fp8_recipe']=='tensorwise', c['job']['training']" ||
  fail "plan --fp8-recipe did not reach the job"

# SIGINT once some layouts are simulated prints the best so far and exits
# by the signal (the test pause holds the search at that point).
# (env --default-signal=INT: a background job of a script inherits SIGINT
# ignored, which the CLI keeps; docs/promises.md, "Interrupts".)
STAGECRAFT_TEST_PAUSE=plan-simulate env --default-signal=INT "$CLI" plan "${BASE[@]}" --threads 1 --progress none > int.txt 2> int.err &
pid=$!
for _ in $(seq 1 600); do grep -q "test pause at plan-simulate" int.err && break; sleep 0.1; done
grep -q "test pause at plan-simulate" int.err || fail "the search never paused: $(cat int.err)"
kill -INT $pid
wait $pid; rc=$?
[[ $rc == 130 ]] || fail "SIGINT exit $rc (expected 130): $(cat int.err)"
grep -q "INCOMPLETE (interrupted or time limit): best so far" int.txt || fail "SIGINT: no best-so-far line: $(cat int.txt)"
grep -q '^1  tp' int.txt || fail "SIGINT: no candidate in the best so far: $(cat int.txt)"
grep -q "interrupted by SIGINT" int.err || fail "SIGINT: no note: $(cat int.err)"

# Interrupts land in a given phase through the test pause (not timed):
# at 0 s (before the seed and any estimate) nothing was simulated yet,
# which the plan says (never "no layout fits"); at 5 s (during the
# estimates, after the seed's simulation, docs/plan.md "Anytime") and at
# 15 s (after 5 layouts were decided) it prints the best so far.
for point in plan-validate plan-estimate plan-simulate-5; do
  STAGECRAFT_TEST_PAUSE=$point env --default-signal=INT "$CLI" plan "${BASE[@]}" --threads 1 --progress none > "$point.txt" 2> "$point.err" &
  pid=$!
  for _ in $(seq 1 600); do grep -q "test pause at $point" "$point.err" && break; sleep 0.1; done
  grep -q "test pause at $point" "$point.err" || fail "$point: the search never paused: $(cat "$point.err")"
  kill -INT $pid
  wait $pid; rc=$?
  [[ $rc == 130 ]] || fail "$point: SIGINT exit $rc (expected 130): $(cat "$point.err")"
  grep -q "INCOMPLETE (interrupted or time limit)" "$point.txt" || fail "$point: not marked incomplete: $(cat "$point.txt")"
  grep -q "no layout fits" "$point.txt" && fail "$point: says no layout fits while layouts fit: $(cat "$point.txt")"
  grep -q "interrupted by SIGINT" "$point.err" || fail "$point: no note: $(cat "$point.err")"
  if [[ $point != plan-validate ]]; then
    grep -q '^1  tp' "$point.txt" || fail "$point: no best so far: $(cat "$point.txt")"
  else
    grep -q "^nothing simulated yet" "$point.txt" || fail "$point: no 'nothing simulated yet': $(cat "$point.txt")"
    grep -q " not examined" "$point.txt" || fail "$point: unexamined layouts not counted: $(cat "$point.txt")"
  fi
done
# SIGTERM likewise.
STAGECRAFT_TEST_PAUSE=plan-validate "$CLI" plan "${BASE[@]}" --threads 1 --progress none > term.txt 2> term.err &
pid=$!
for _ in $(seq 1 600); do grep -q "test pause at plan-validate" term.err && break; sleep 0.1; done
kill -TERM $pid
wait $pid; rc=$?
[[ $rc == 143 ]] || fail "SIGTERM exit $rc (expected 143): $(cat term.err)"
grep -q "^nothing simulated yet" term.txt || fail "SIGTERM: $(cat term.txt)"

# --time-limit bounds every phase, not only the simulations: held at the
# start of the validation (before the seed) by the test pause, the
# limit's cancel releases it and the search stops there (counts add up;
# the JSON says incomplete).
STAGECRAFT_TEST_PAUSE=plan-validate "$CLI" plan "${BASE[@]}" --threads 1 --progress none --time-limit 0.5 --json \
  > tl.json 2> tl.err; rc=$?
[[ $rc == 1 ]] || fail "time limit with nothing simulated: exit $rc (expected 1): $(cat tl.err)"
grep -q "stopped at the time limit" tl.err || fail "time limit: no note: $(cat tl.err)"
python3 - <<'PY' || fail "time limit JSON: $(cat tl.json)"
import json
p = json.load(open("tl.json"))
c = p["counts"]
assert p["complete"] is False and p["candidates"] == [] and p["why_winner"] == "nothing simulated yet", p
assert c["simulated"] == 0 and c["unexamined"] > 0, c
assert c["considered"] == sum(c["rejected"].values()) + c["simulated"] + c["unexamined"], c
PY

# Progress: elapsed time and an estimate, a total per phase that never
# shrinks and a count that never falls.
STAGECRAFT_PROGRESS_INTERVAL=0 "$CLI" plan "${BASE[@]}" --threads 1 --progress lines > /dev/null 2> prog.err \
  || fail "plan --progress lines"
python3 - <<'PY' || fail "progress: $(head -20 prog.err)"
import re
last = {}
sim = 0
for line in open("prog.err"):
    m = re.match(r"progress: (\w+) (\d+)/(\d+) \(\d+%\), .* elapsed", line)
    assert m, line
    ph, d, t = m.group(1), int(m.group(2)), int(m.group(3))
    first = ph not in last
    if not first:
        pd, pt = last[ph]
        assert t == pt and d >= pd, (line, last[ph])
    last[ph] = (d, t)
    if ph == "simulate":
        sim += 1
        # The layouts still to decide (no time: the bound cuts them in
        # bursts), as many as the count says.
        if d < t: assert f", {t - d} left to decide (simulate or cut by the bound)" in line, line
    elif 0 < d < t and not first:
        # Other phases, after their first line (the pace starts there): a
        # time estimate, or that it is not known yet.
        assert f"left in {ph}" in line, line
assert sim >= 2, sim
assert last["simulate"][0] == last["simulate"][1], last
PY

# The job's keys go through the job parser (unknown keys named), numbers
# follow the job flags' rules, the sequence length and batch are required.
cat > bogus.json <<'J'
{"model": {"preset": "llama3-8b", "num_layers": 4}, "training": {"seq_len": 1024, "global_batch_size": 16},
 "parallel": {"tp": 2, "bogus": 1}}
J
"$CLI" plan --config bogus.json --gpus 8 --progress none > /dev/null 2> bogus.err; rc=$?
[[ $rc == 1 ]] && grep -q "parallel.bogus" bogus.err || fail "unknown parallel key: $rc $(cat bogus.err)"
sed 's/"parallel": {"tp": 2, "bogus": 1}/"parallel": {"tp": 2}/; s/"global_batch_size": 16/"global_batch_size": 16, "fp8_recipee": 1/' \
  bogus.json > bogus2.json
"$CLI" plan --config bogus2.json --gpus 8 --progress none > /dev/null 2> bogus2.err; rc=$?
[[ $rc == 1 ]] && grep -q "training.fp8_recipee" bogus2.err || fail "unknown training key: $rc $(cat bogus2.err)"
for bad in "--top= 2" "--tp=0x8" "--gpus= 8" "--max-mbs=2.0" "--time-limit=0x8" "--memory-reserve-gib= 4" "--time-limit=inf"; do
  "$CLI" plan "${BASE[@]}" "$bad" --progress none > /dev/null 2> num.err; rc=$?
  [[ $rc == 2 ]] || fail "$bad accepted (exit $rc): $(cat num.err)"
done
"$CLI" plan --model llama3-8b --gpus 8 --global-batch-size 16 > /dev/null 2> noseq.err; rc=$?
[[ $rc == 1 ]] && grep -q "training.seq_len" noseq.err || fail "missing seq_len: $rc $(cat noseq.err)"
"$CLI" plan --model llama3-8b --gpus 8 --seq-len 1024 > /dev/null 2> nogbs.err; rc=$?
[[ $rc == 1 ]] && grep -q "training.global_batch_size" nogbs.err || fail "missing global batch: $rc $(cat nogbs.err)"

# An impossible request says how many GPUs it needs at least: Llama 3.1
# 405B has 405,853,388,800 parameters (its Hugging Face config), each
# 2 + 4 + 12 bytes (bf16 weight, fp32 gradient, Adam's fp32 master and two
# moments) = 7.305e12 B over 85,017,493,504 B per H100 (its memory as CUDA
# reports it, docs/hardware.md) less the 1,937,772,544 B default reserve
# (docs/plan.md, "The memory reserve") = 83,079,720,960 B usable: 87.9, 88.
"$CLI" plan --model llama3-405b --gpus 8 --seq-len 8192 --global-batch-size 16 --progress none --json \
  > big.json 2> big.err; rc=$?
[[ $rc == 1 ]] || fail "405B on 8 GPUs: exit $rc"
python3 -c "
import json; p = json.load(open('big.json'))
assert p['candidates'] == [] and p['complete'] is True and p['min_gpus_lower_bound'] == 88, p.get('min_gpus_lower_bound')
" || fail "405B on 8 GPUs: no or wrong min_gpus_lower_bound"
"$CLI" plan --model llama3-405b --gpus 8 --seq-len 8192 --global-batch-size 16 --progress none > big.txt 2>&1
grep -q "^needs at least 88 GPUs" big.txt || fail "405B on 8 GPUs: $(head -5 big.txt)"

# Variants collapse: with fused (flash) attention, selective recompute
# recomputes nothing, so every selective layout simulates exactly as its
# no-recompute twin; each row is one layout naming its twin, and the top 3
# are 3 distinct layouts.
cat > flash.json <<'J'
{"model": {"preset": "llama3-8b", "num_layers": 4, "flash_attention": true},
 "training": {"seq_len": 1024, "global_batch_size": 16}, "hardware": "h100",
 "plan": {"max_mbs": 1, "max_cp": 1, "top": 3, "recompute": ["none", "selective"]}}
J
"$CLI" plan --config flash.json --gpus 8 --json --progress none > flash_out.json 2> flash.err || fail "flash plan: $(cat flash.err)"
python3 - <<'PY' || fail "variants not collapsed: $(head -c 3000 flash_out.json)"
import json
p = json.load(open("flash_out.json"))
rows = p["candidates"]
assert len(rows) == 3, len(rows)
keys = set()
for c in rows:
    l = dict(c["layout"]); assert l["recompute"] == "none", l
    alts = c.get("alternatives", [])
    assert len(alts) == 1 and alts[0]["recompute"] == "selective", alts
    a = dict(alts[0]); a["recompute"] = "none"; assert a == l, (a, l)
    del l["recompute"]; keys.add(json.dumps(l, sort_keys=True))
assert len(keys) == 3
PY
"$CLI" plan --config flash.json --gpus 8 --progress none > flash.txt 2>&1 || fail "flash plan text"
[[ $(grep -c "the same step with recompute selective" flash.txt) == 3 ]] || fail "variants not named: $(cat flash.txt)"

# Low-confidence notes beside a candidate (docs/plan.md "Confidence"):
# cp 2 of 1,024 tokens is 512 per rank, under the checked all-gather run's 8,192; a
# zero-bubble schedule has no checked run; an exposed share of 25% or more
# is named (read back from the candidate's own figures).
"$CLI" plan --model llama3-8b --layers 4 --hardware h100 --seq-len 1024 --global-batch-size 16 --gpus 8 --cp 2 \
  --pp 2 --schedules zero-bubble --max-mbs 1 --top 3 --json --progress none > conf.json 2> conf.err || fail "conf: $(cat conf.err)"
python3 - <<'PY' || fail "low_confidence: $(head -c 2000 conf.json)"
import json
p = json.load(open("conf.json"))
assert p["candidates"]
for c in p["candidates"]:
    notes = c["low_confidence"]
    assert any(n.startswith("cp2 at 512 tokens per rank") for n in notes), notes
    assert "zero-bubble: no checked published run" in notes, notes
    share = sum(c["exposed_comm_seconds"].values()) / c["step_seconds"]
    assert (share >= 0.25) == any(n.startswith("exposed communication") for n in notes), (share, notes)
PY
"$CLI" plan "${BASE[@]}" --top 3 --json --progress none > noconf.json || fail "plan --json"
python3 -c "
import json; p = json.load(open('noconf.json'))
for c in p['candidates']:
    l = c['layout']; share = sum(c['exposed_comm_seconds'].values()) / c['step_seconds']
    if l['cp'] == 1 and l['pp'] <= 16 and l['schedule'] != 'zero-bubble' and l['zero'] != 3 and share < 0.25:
        assert 'low_confidence' not in c, c['low_confidence']
" || fail "low_confidence where none applies"

# Embedding-only and loss-only end chunks (Llama 3's): 4 layers on pp 2 x
# vp 3 = 6 chunks, the 4 middle ones 1 layer each; on pp 2 x vp 2 = 4
# chunks, the 2 middle ones 2 layers each.
"$CLI" plan "${BASE[@]}" --pp 2 --schedules interleaved-1f1b --top 50 --json --progress none > ends.json 2> ends.err \
  || fail "ends: $(cat ends.err)"
python3 - <<'PY' || fail "empty end chunks: $(head -c 1500 ends.json)"
import json
p = json.load(open("ends.json"))
seen = set()
for c in p["candidates"]:
    l = c["layout"]
    pl = c["job"]["parallel"].get("pipeline_layout")
    if l.get("empty_end_chunks"):
        want = {3: [0, 1, 1, 1, 1, 0], 2: [0, 2, 2, 0]}[l["vp"]]
        assert pl == want, (l["vp"], pl)
        seen.add(l["vp"])
    else:
        assert not pl or pl[0] != 0, pl
assert seen == {2, 3}, seen
PY

# A base job asking for Megatron-Core's EP all-to-all overlap: the plan
# keeps it on the layouts where Megatron-Core accepts it (ep > 1) and drops
# it elsewhere, instead of refusing the base job (whose parallel block it
# chooses) for ep 1.
cat > epov.json <<'JSON'
{"model": {"preset": "mixtral-8x7b", "num_layers": 2},
 "training": {"seq_len": 1024, "global_batch_size": 16, "overlap_moe_expert_parallel_comm": true},
 "hardware": "h100"}
JSON
"$CLI" plan -c epov.json --gpus 8 --min-ep 2 --top 3 --json --progress none > epov.out 2> epov.err \
  || fail "plan with the EP overlap: $(cat epov.err)"
python3 - <<'PY' || fail "EP overlap kept where ep > 1: $(head -c 1500 epov.out)"
import json
p = json.load(open("epov.out"))
assert p["candidates"], p
for c in p["candidates"]:
    assert c["layout"]["ep"] > 1, c["layout"]
    assert c["job"]["training"].get("overlap_moe_expert_parallel_comm") is True, c["job"]["training"]
PY

# The job's router imbalance (parallel.moe_imbalance) is kept on every
# candidate, capped at its ep, and each candidate's time is simulate's of
# its own job; a value below 1 is refused naming the field.
cat > imb.json <<'JSON'
{"model": {"preset": "mixtral-8x7b", "num_layers": 2}, "parallel": {"moe_imbalance": 1.5},
 "training": {"seq_len": 1024, "global_batch_size": 16}, "hardware": "h100"}
JSON
"$CLI" plan -c imb.json --gpus 8 --top 5 --json --progress none > imb.out 2> imb.err || fail "plan with moe_imbalance: $(cat imb.err)"
python3 - imb.out imb_job.json <<'PY' || fail "moe_imbalance kept: $(head -c 1500 imb.out)"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["candidates"], p
for c in p["candidates"]:
    want = min(1.5, c["layout"]["ep"])
    assert c["job"]["parallel"].get("moe_imbalance", 1.0) == want, (c["layout"], c["job"]["parallel"])
json.dump(p["candidates"][0]["job"], open(sys.argv[2], "w"))
print(p["candidates"][0]["step_seconds"])
PY
"$CLI" simulate -c imb_job.json --json > imb_sim.json || fail "simulate of the plan's winner"
python3 - imb.out imb_sim.json <<'PY' || fail "the winner's time is simulate's of its job"
import json, sys
p, s = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert abs(p["candidates"][0]["step_seconds"] - s["step_seconds"]) < 1e-6 * s["step_seconds"], (p["candidates"][0]["step_seconds"], s["step_seconds"])
PY
sed 's/"moe_imbalance": 1.5/"moe_imbalance": 0.5/' imb.json > imb_bad.json
"$CLI" plan -c imb_bad.json --gpus 8 --progress none > /dev/null 2> imb_bad.err; rc=$?
[[ $rc == 1 ]] && grep -q "parallel.moe_imbalance: moe_imbalance (0.5) must be a number >= 1" imb_bad.err || fail "moe_imbalance 0.5: rc $rc: $(cat imb_bad.err)"

# Session 24's audit: an empty list item is refused naming the entry; a
# conflict says where each side came from; both missing sizes are named
# at once; a dense model's min_ep names the flag and the value; the JSON
# of a search the constraints leave empty says so.
SMALL=(--model llama3-8b --layers 4 --gpus 8 --seq-len 1024 --global-batch-size 16 --threads 1 --progress none)
expect_err() {  # expect_err WANT_RC "message part" CLI-ARGS...
  local want=$1 part=$2; shift 2
  "$CLI" "$@" > aud.out 2> aud.err; local rc=$?
  [[ $rc == "$want" ]] && grep -qF -- "$part" aud.err || fail "$*: exit $rc, want $want and '$part': $(cat aud.err)"
}
expect_err 1 "plan.schedules[1]: unknown value '' (known: 1f1b" plan "${SMALL[@]}" --schedules 1f1b,
expect_err 1 "plan.recompute[1]: unknown value ''" plan "${SMALL[@]}" --recompute none,,full
echo '{"model": {"preset": "llama3-8b", "num_layers": 4}, "training": {"seq_len": 1024, "global_batch_size": 16}, "plan": {"tp": 8}}' > pblock.json
expect_err 1 "plan.tp: tp 8 conflicts with max_tp 4 (tp from the job's plan block, max_tp from --max-tp)" \
  plan --config pblock.json --gpus 8 --max-tp 4 --progress none
expect_err 1 "min_tp 4 is above max_tp 2: no tp satisfies both (min_tp from --min-tp, max_tp from --max-tp)" \
  plan "${SMALL[@]}" --min-tp 4 --max-tp 2
expect_err 1 "plan.min_ep: llama3-8b has no experts: ep must be 1 (got min_ep 4096) (from --min-ep)" plan "${SMALL[@]}" --min-ep 4096
expect_err 1 "give --seq-len N (or the job's training.seq_len) and --global-batch-size N" plan --model llama3-8b --gpus 8
"$CLI" plan "${SMALL[@]}" --vp 4096 --json > vp.json 2> vp.err
python3 -c "import json,sys; d=json.load(open('vp.json')); assert d['counts']['considered'] == 0 and 'nothing was searched' in d['why_winner'], d" \
  || fail "nothing searched, JSON: $(head -c 400 vp.json)"
# A stop during the enumeration says the count is partial: DeepSeek-V3 on
# 16,384 GPUs enumerates about 3 million layouts (over a second here), far
# past a 0.05 s limit on any machine.
"$CLI" plan --model deepseek-v3 --gpus 16384 --seq-len 4096 --global-batch-size 15360 --threads 1 --progress none \
  --time-limit 0.05 > enum.txt 2> enum.err
grep -q "^searched    [0-9]* layouts (the enumeration was stopped: more exist):" enum.txt \
  || fail "a stopped enumeration's count not marked partial: $(head -3 enum.txt) $(cat enum.err)"

# A signal while the plan looks for the smallest GPU count that fits (after
# a complete search: docs/plan.md, "When nothing fits") still exits by it.
STAGECRAFT_TEST_PAUSE=plan-fit env --default-signal=INT "$CLI" plan --model llama3-8b --gpus 1 --seq-len 4096 \
  --global-batch-size 8 --zero 0 --tp 1 --pp 1 --cp 1 --threads 1 --progress none > fit.out 2> fit.err &
pid=$!
for _ in $(seq 1 600); do grep -q "test pause at plan-fit" fit.err && break; sleep 0.1; done
kill -INT $pid; wait $pid; rc=$?
[[ $rc == 130 ]] && grep -q "interrupted by SIGINT while looking for the smallest GPU count that fits" fit.err \
  || fail "SIGINT in the smallest-fit probe: exit $rc: $(cat fit.err)"

# --export-best makes generate's size check before building the winner:
# 32,768 ranks of Llama 3 70B with 8 micro-batches each are tens of GiB.
"$CLI" plan --model llama3-70b --gpus 32768 --tp 8 --pp 8 --dp 512 --mbs 1 --zero 1 --recompute none --schedules 1f1b \
  --seq-len 8192 --global-batch-size 4096 --threads 2 --progress none --export-best -o huge.zip > huge.txt 2> huge.err; rc=$?
[[ $rc == 1 ]] && grep -q "this export would write about .* over the budget of 8.0 GiB" huge.err \
  && grep -q "plan --export-best writes every rank" huge.err || fail "export-best past the output budget: exit $rc: $(cat huge.err)"
compgen -G "huge.zip*" > /dev/null && fail "a refused export left $(compgen -G "huge.zip*")"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
