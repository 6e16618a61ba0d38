#!/usr/bin/env bash
# Issue 26: requests over time. The issue's workload form runs through
# inspect (percentiles under explicit keys) and simulate; a seeded run is
# the same bytes twice; serve-capacity finds a rate whose curve meets the
# SLO below it and not far above; bad workloads name their fields.
set -euo pipefail
cli=${STAGECRAFT_CLI:?}
out=$(mktemp -d)
trap '[[ $BASHPID == $$ ]] && rm -rf "$out"' EXIT  # main shell only: see lib/common.bash
cat >"$out/w.json" <<'J'
{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
 "serving": {"prompt_tokens": 2048, "output_tokens": 256,
             "workload": {"arrival": "poisson", "rate": 10, "duration_seconds": 600, "seed": 1}}}
J
"$cli" inspect --config "$out/w.json" >"$out/inspect.txt"
grep -Eq '^workload    [0-9,]+ requests over [0-9.]+ s' "$out/inspect.txt"
grep -Eq '^  ttft      p50 [0-9.]+ ms, p90 [0-9.]+ ms, p99 [0-9.]+ ms' "$out/inspect.txt"
grep -Eq '^  tpot      p50 [0-9.]+ ms' "$out/inspect.txt"
"$cli" inspect --config "$out/w.json" --json >"$out/a.json"
"$cli" inspect --config "$out/w.json" --json >"$out/b.json"
cmp "$out/a.json" "$out/b.json"
python3 - "$out/a.json" <<'PY'
import json, sys
inf = json.load(open(sys.argv[1]))["inference"]
for k in ("ttft", "tpot", "itl", "e2e", "queue"):
    for q in ("mean", "p50", "p90", "p99"):
        assert f"{k}_seconds_{q}" in inf, (k, q)
w = inf["workload"]
# 10 requests/s for 600 s: 6,000 expected (sd 77); every one finishes with its 256 tokens.
assert 5700 < w["requests"] < 6300, w["requests"]
assert w["output_tokens"] == 256 * w["requests"]
assert inf["ttft_seconds_p50"] <= inf["ttft_seconds_p90"] <= inf["ttft_seconds_p99"]
PY
"$cli" simulate --config "$out/w.json" >"$out/sim.txt"
grep -Eq '^ *ttft +[0-9.]+ +[0-9.]+ +[0-9.]+' "$out/sim.txt"
# Capacity: the latency-rate curve meets the SLO at and below the capacity.
cat >"$out/c.json" <<'J'
{"mode": "inference", "model": "llama3-8b", "parallel": {"tp": 1}, "hardware": "h100",
 "serving": {"prompt_tokens": 1024, "output_tokens": 128, "workload": {"rate": 1, "requests": 300, "seed": 5}}}
J
"$cli" serve-capacity --config "$out/c.json" --slo-ttft 0.5 --slo-tpot 0.04 --json >"$out/cap.json"
python3 - "$out/cap.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
cap = c["capacity_requests_per_second"]
assert cap > 0
for p in c["curve"]:
    if p["requests_per_second"] <= cap:
        assert p["meets_slo"], p
        assert p["ttft_seconds_p99"] <= 0.5 and p["tpot_seconds_p99"] <= 0.04, p
assert not c["curve"][-1]["meets_slo"], c["curve"][-1]  # 1.5x the capacity misses
# 300 requests at the capacity arrive over 300 / cap s, more than two P99
# end-to-end latencies (1,024-token prompt + 128 tokens under 0.5 s + 127 x 0.04 s):
# a steady state, no warning.
assert "short_run" not in c, c
PY
# A run too short to measure: 200 requests of a 4-layer model meet the
# targets even when all arrive at once, so the doubling reaches its cap;
# the result says the run was shorter than two P99 end-to-end latencies.
cat >"$out/short.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 2}, "hardware": "h100",
 "serving": {"prompt_tokens": 256, "output_tokens": 32, "workload": {"rate": 1, "requests": 200, "seed": 1}}}
J
"$cli" serve-capacity --config "$out/short.json" --slo-ttft 1 --slo-tpot 0.05 --json >"$out/short.out"
python3 - "$out/short.out" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
assert c.get("short_run") is True, c
assert abs(c["run_seconds_at_capacity"] - 200 / c["capacity_requests_per_second"]) <= 1e-6 * c["run_seconds_at_capacity"], c
assert c["run_seconds_at_capacity"] < 2 * c["e2e_seconds_p99_at_capacity"], c
PY
"$cli" serve-capacity --config "$out/short.json" --slo-ttft 1 --slo-tpot 0.05 >"$out/short.txt"
grep -q '^warning: at this rate the 200 requests arrive within .* too short for a steady state' "$out/short.txt"
# A sweep whose runs are all too short names no layout as the most per GPU.
"$cli" serve-capacity --config "$out/short.json" --slo-ttft 1 --slo-tpot 0.05 --replicas-list 1,2 >"$out/short2.txt"
grep -q "^most per GPU: not named: no layout's run was long enough to measure its capacity" "$out/short2.txt" \
  || { echo "short runs ranked: $(tail -3 "$out/short2.txt")"; exit 1; }
"$cli" serve-capacity --config "$out/c.json" --slo-ttft 0.5 --replicas-list 1,2 >"$out/cap.txt"
grep -q '^tp 1, replicas 2 (2 GPUs): capacity' "$out/cap.txt"
"$cli" serve-capacity --config "$out/c.json" --slo-tpot 0.03 --tp-list 1,2 --requests 100 --json >"$out/tps.json"
python3 - "$out/tps.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["layouts"]
assert [(x["tp"], x["gpus"]) for x in c] == [(1, 1), (2, 2)], c
PY
if "$cli" serve-capacity --config "$out/c.json" 2>"$out/err.txt"; then echo "accepted no SLO"; exit 1; fi
grep -q 'slo-ttft' "$out/err.txt"
# Bad workloads name their fields.
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"workload": {"arrival": "poisson", "duration_seconds": 5}}}' >"$out/bad.json"
if "$cli" inspect --config "$out/bad.json" 2>"$out/err.txt"; then echo "accepted no rate"; exit 1; fi
grep -q 'serving.workload.rate' "$out/err.txt"
# Session 21's audit. An SLO no rate meets: said so, not a capacity of 0.
"$cli" serve-capacity --config "$out/c.json" --slo-ttft 0.000001 --requests 50 >"$out/none.txt"
grep -q '^tp 1, replicas 1 (1 GPUs): no request rate meets the SLOs: even at .* (requests alone) P99 TTFT is' "$out/none.txt"
"$cli" serve-capacity --config "$out/c.json" --slo-ttft 0.000001 --requests 50 --json >"$out/none.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert c['no_rate_meets_slo'] is True and c['capacity_requests_per_second'] == 0, c" "$out/none.json"
"$cli" serve-capacity --config "$out/c.json" --slo-ttft 1 --requests 50 --json >"$out/some.json"
python3 -c "import json,sys; c=json.load(open(sys.argv[1])); assert 'no_rate_meets_slo' not in c and c['capacity_requests_per_second'] > 0, c" "$out/some.json"
# simulate prints the targets given, not a 0 for the one left out.
python3 - "$out/c.json" "$out/slo1.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["serving"]["workload"] = {"rate": 2, "requests": 50, "seed": 1}
j["serving"]["slo"] = {"ttft_seconds_p99": 1}
json.dump(j, open(sys.argv[2], "w"))
PY
"$cli" simulate --config "$out/slo1.json" >"$out/slo1.txt"
grep -q '^capacity: [0-9.]* requests/s within the SLOs (P99 TTFT 1 s)$' "$out/slo1.txt"
# No request drawn: no table of zeros; one-token outputs: no TPOT or ITL.
python3 - "$out/c.json" "$out/empty.json" "$out/one.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["serving"]["workload"] = {"rate": 0.001, "duration_seconds": 10, "seed": 1}
json.dump(j, open(sys.argv[2], "w"))
j["serving"]["output_tokens"] = 1
j["serving"]["workload"] = {"rate": 1, "requests": 5, "seed": 1}
json.dump(j, open(sys.argv[3], "w"))
PY
"$cli" simulate --config "$out/empty.json" >"$out/empty.txt"
grep -q '^workload: no request arrived' "$out/empty.txt"
"$cli" simulate --config "$out/one.json" >"$out/one.txt"
grep -Eq '^ +tpot +- +- +- +-$' "$out/one.txt"
grep -Eq '^ +itl +- +- +- +-$' "$out/one.txt"
# A rate too small to time in milliseconds; a trace request checked alone.
python3 - "$out/c.json" "$out/tiny.json" "$out/tr_ok.json" "$out/tr_bad.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["serving"]["workload"] = {"rate": 1e-15, "requests": 3}
json.dump(j, open(sys.argv[2], "w"))
j["serving"]["workload"] = {"arrival": "trace", "trace": [{"arrival_seconds": 0, "prompt_tokens": 8100, "output_tokens": 10},
                                                         {"arrival_seconds": 1, "prompt_tokens": 10, "output_tokens": 100}]}
json.dump(j, open(sys.argv[3], "w"))
j["serving"]["workload"]["trace"][1]["prompt_tokens"] = 8100
json.dump(j, open(sys.argv[4], "w"))
PY
if "$cli" inspect --config "$out/tiny.json" 2>"$out/err.txt" >/dev/null; then echo "accepted rate 1e-15"; exit 1; fi
grep -q 'serving.workload.rate: must be >= 0.001 (got 1e-15)' "$out/err.txt"
"$cli" inspect --config "$out/tr_ok.json" >/dev/null
if "$cli" inspect --config "$out/tr_bad.json" 2>"$out/err.txt" >/dev/null; then echo "accepted 8100 + 100 tokens"; exit 1; fi
grep -q 'serving.workload.trace\[1\]: prompt_tokens (8100) + output_tokens (100) = 8200 exceeds' "$out/err.txt"
# serving.slo beside a burst (or trace) workload: simulate prints the
# workload's own percentiles and says the capacity is not searched (exit
# 0); serve-capacity refuses it before printing anything. A layout of
# --tp-list that cannot be built is refused before any search runs.
python3 - "$out/c.json" "$out/burst.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
j["serving"]["workload"] = {"arrival": "burst", "requests": 5}
j["serving"]["slo"] = {"ttft_seconds_p99": 1, "tpot_seconds_p99": 0.05}
json.dump(j, open(sys.argv[2], "w"))
PY
"$cli" simulate --config "$out/burst.json" >"$out/burst.txt"
grep -q '^workload: 5 requests' "$out/burst.txt"
grep -q '^capacity: not searched, serving.workload.arrival: .*needs poisson or fixed arrivals (got burst)' "$out/burst.txt"
"$cli" simulate --config "$out/burst.json" --json >"$out/burst.out"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert 'capacity' not in d and 'got burst' in d['capacity_not_searched'], d" "$out/burst.out"
if "$cli" serve-capacity --config "$out/burst.json" >"$out/bc.txt" 2>"$out/err.txt"; then echo "searched a burst"; exit 1; fi
[ ! -s "$out/bc.txt" ] || { echo "serve-capacity printed before refusing: $(cat "$out/bc.txt")"; exit 1; }
grep -q 'serving.workload.arrival' "$out/err.txt"
if "$cli" serve-capacity --config "$out/c.json" --slo-ttft 1 --tp-list 1,3 --requests 20 >"$out/bc.txt" 2>"$out/err.txt"; then
  echo "searched tp 3"; exit 1
fi
[ ! -s "$out/bc.txt" ] || { echo "serve-capacity searched before refusing tp 3: $(cat "$out/bc.txt")"; exit 1; }
grep -q 'tp 3, replicas 1 (from --tp-list)' "$out/err.txt"
# A layout that validates but whose model does not fit its memory: alone,
# the command's error before anything is printed; in a sweep, a row that
# says why (JSON: not_searched), found before any search runs, and the
# other layouts are searched; the sweep names the layout serving the most
# per GPU. Llama 3 70B in bf16 needs 131 GiB of weights: not on one H100.
cat >"$out/big.json" <<'J'
{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 1}, "hardware": "h100",
 "serving": {"prompt_tokens": 512, "output_tokens": 64, "workload": {"rate": 1, "requests": 40, "seed": 2}}}
J
if "$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 >"$out/bc.txt" 2>"$out/err.txt"; then echo "searched a 70B on one GPU"; exit 1; fi
[ ! -s "$out/bc.txt" ] || { echo "serve-capacity printed before refusing: $(cat "$out/bc.txt")"; exit 1; }
grep -q 'parallel.tp: the model does not fit even at one sequence: a rank needs .* short by' "$out/err.txt"
# 300 requests a run: long enough to measure a capacity (a run too short is
# left out of "most per GPU").
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --slo-tpot 0.05 --tp-list 1,4,8 --requests 300 >"$out/sweep.txt"
grep -q '^tp 1, replicas 1 (1 GPUs): not searched: parallel.tp: the model does not fit even at one sequence' "$out/sweep.txt"
grep -q '^tp 4, replicas 1 (4 GPUs): capacity' "$out/sweep.txt"
grep -q '^tp 8, replicas 1 (8 GPUs): capacity' "$out/sweep.txt"
grep -q '^most per GPU: tp [48], replicas 1: ' "$out/sweep.txt"
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --slo-tpot 0.05 --tp-list 1,4,8 --requests 300 --json >"$out/sweep.json"
python3 - "$out/sweep.json" "$out/sweep.txt" <<'PY'
import json, re, sys
d = json.load(open(sys.argv[1]))
c = d["layouts"]
assert not any(x.get("short_run") for x in c), c
assert [x["tp"] for x in c] == [1, 4, 8], c
ns = c[0]["not_searched"]
assert ns["code"] == "invalid_argument" and ns["field"] == "parallel.tp" and "does not fit" in ns["message"], ns
assert "capacity_requests_per_second" not in c[0] and c[0]["gpus"] == 1, c[0]
per = {x["tp"]: x["capacity_requests_per_second_per_gpu"] for x in c[1:]}
assert all(v > 0 for v in per.values()), per
best = max(per, key=lambda t: (per[t], -t))  # the first of equals
assert d["most_per_gpu"] == {"tp": best, "replicas": 1}, (d["most_per_gpu"], per)
assert f"most per GPU: tp {best}, replicas 1: " in open(sys.argv[2]).read()
PY
# Every layout of a sweep failing: the error names each, before any output.
if "$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --replicas-list 1,2 >"$out/bc.txt" 2>"$out/err.txt"; then
  echo "searched a 70B on one GPU"; exit 1
fi
[ ! -s "$out/bc.txt" ] || { echo "serve-capacity printed before refusing: $(cat "$out/bc.txt")"; exit 1; }
grep -q 'no layout can be searched: tp 1, replicas 1 (from --replicas-list): the model does not fit .*; tp 1, replicas 2: the same' "$out/err.txt"
# A GPU budget: each tp degree up to a node whose instance divides it, with
# the replicas that fill it; a degree that does not divide is left out and
# said so; --gpus beside --replicas-list is a usage error.
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --slo-tpot 0.05 --gpus 6 --requests 300 --json >"$out/budget.json"
python3 - "$out/budget.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = d["layouts"]
assert [(x["tp"], x["replicas"], x["gpus"]) for x in c] == [(1, 6, 6), (2, 3, 6)], c
assert "not_searched" in c[0] and c[1]["capacity_requests_per_second"] > 0, c
assert d["left_out"] == "tp 4: an instance of 4 GPUs does not divide 6", d
assert d["most_per_gpu"] == {"tp": 2, "replicas": 3}, d
PY
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --slo-tpot 0.05 --gpus 6 --requests 300 >"$out/budget.txt"
grep -q '^left out: tp 4: an instance of 4 GPUs does not divide 6$' "$out/budget.txt"
grep -q '^tp 2, replicas 3 (6 GPUs): capacity' "$out/budget.txt"
if "$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --gpus 3 >"$out/bc.txt" 2>"$out/err.txt"; then echo "searched tp 1 x 3"; exit 1; fi
grep -q 'tp 1, replicas 3 (from --gpus): the model does not fit .*(left out: tp 2: an instance of 2 GPUs does not divide 3)' "$out/err.txt"
set +e
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --gpus 8 --replicas-list 2 2>"$out/err.txt"; rc=$?
set -e
[ "$rc" = 2 ] && grep -q 'give --gpus or --replicas-list, not both' "$out/err.txt" || { echo "rc $rc: $(cat "$out/err.txt")"; exit 1; }
# A budget that fixes the degree: --tp N with --gpus searches that degree
# alone; --tp with --tp-list, or a list naming a value twice, is refused.
"$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 --slo-tpot 0.05 --gpus 6 --tp 2 --requests 300 >"$out/tp2.txt"
[ "$(grep -c '^tp [0-9]*, replicas' "$out/tp2.txt")" = 1 ] && grep -q '^tp 2, replicas 3 (6 GPUs): capacity' "$out/tp2.txt" ||
  { echo "--tp 2 --gpus 6: $(cat "$out/tp2.txt")"; exit 1; }
for bad in "--tp 2 --tp-list 1,4|give --tp or --tp-list, not both" "--tp-list 1,1|distinct positive integers" \
           "--replicas-list 2,2|distinct positive integers"; do
  set +e
  "$cli" serve-capacity --config "$out/big.json" --slo-ttft 1 ${bad%%|*} 2>"$out/err.txt"; rc=$?
  set -e
  [ "$rc" = 2 ] && grep -q -- "${bad#*|}" "$out/err.txt" || { echo "${bad%%|*}: rc $rc: $(cat "$out/err.txt")"; exit 1; }
done
# serve-capacity --model PRESET alone is an inference job (the preset's
# serving defaults), as its usage line offers.
"$cli" serve-capacity --model llama3-8b --layers 2 --slo-ttft 1 --requests 100 >"$out/model.txt"
grep -q '^tp 1, replicas 1 (1 GPUs): capacity' "$out/model.txt"
# A capacity too small for three decimals is printed to three digits, not 0.000.
cat >"$out/slow.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "hardware": "h100",
 "serving": {"prompt_tokens": 512, "output_tokens": 64, "workload": {"rate": 1, "requests": 20, "seed": 2},
             "scheduler": {"token_overhead_seconds": 10}}}
J
"$cli" serve-capacity --config "$out/slow.json" --slo-tpot 12 >"$out/slow.txt"
grep -Eq '^tp 1, replicas 1 \(1 GPUs\): capacity 0\.000[1-9][0-9]* requests/s' "$out/slow.txt" ||
  { echo "small capacity: $(cat "$out/slow.txt")"; exit 1; }
grep -q ' 0.000 ' "$out/slow.txt" && { echo "a rate printed as 0.000: $(cat "$out/slow.txt")"; exit 1; }
# simulate's capacity line carries the short-run warning serve-capacity prints.
cat >"$out/short.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "hardware": "h100",
 "serving": {"prompt_tokens": 512, "output_tokens": 64, "workload": {"rate": 20, "requests": 10, "seed": 3},
             "slo": {"ttft_seconds_p99": 1}}}
J
"$cli" simulate --config "$out/short.json" >"$out/short.txt"
grep -q '^warning: at this rate the 10 requests arrive within .* raise serving.workload' "$out/short.txt" ||
  { echo "no short-run warning: $(cat "$out/short.txt")"; exit 1; }
# inspect says when no request arrived instead of printing zero latencies.
cat >"$out/none.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "hardware": "h100",
 "serving": {"prompt_tokens": 512, "output_tokens": 64, "workload": {"rate": 0.001, "duration_seconds": 10, "seed": 1}}}
J
"$cli" inspect --config "$out/none.json" >"$out/none.txt"
grep -q '^workload    no request arrived' "$out/none.txt" && ! grep -q '^  ttft ' "$out/none.txt"
# A million replicas: the requests go to the few that receive any; the
# run is as fast as with one (it scanned every replica for every request).
cat >"$out/wide.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "hardware": "h100",
 "serving": {"prompt_tokens": 512, "output_tokens": 64, "replicas": 1000000,
             "workload": {"rate": 1000, "requests": 20000, "seed": 1}}}
J
timeout 60 "$cli" simulate --config "$out/wide.json" >"$out/wide.txt"
grep -q '^workload: 20000 requests' "$out/wide.txt"
echo "serving_workload: ok"
