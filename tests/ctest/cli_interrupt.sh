#!/usr/bin/env bash
# Issue 24 item 3 and issue 23 item 4 (docs/promises.md, "Interrupts"):
# every command stops within 1 s of SIGINT/SIGTERM, and plan within 1 s
# of its --time-limit, in whatever phase the stop lands (plan: the
# enumeration, validation, estimates, seed, simulations; inspect: the
# build, the budget count, the simulation; a serving workload's run and
# its percentiles; generate: the export and the removal of its partial
# output).
#
# A bound on correctness (the issue's "within 1 s"), not a speed target:
# the work measured is the stop itself (a poll of the cancel flag, the
# answer printed, the process ended), which took 0.03-0.45 s on the
# shared 2-core machine at load 8-12 (two `yes` beside it): 1 s leaves a
# factor 2 or more for a loaded CI.
# A phase without a poll shows as seconds of overshoot. Each check gets
# 3 attempts and fails only if none is within the bound: a regression
# fails all three, a moment of load one.
# Background jobs are started with SIGINT at its default: a script's
# background job inherits it ignored, and the CLI keeps an inherited
# SIG_IGN (checked at the end).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"

BOUND_NS=1000000000
now() { date +%s%N; }
secs() { awk -v n="$1" 'BEGIN { printf "%.3f", n / 1e9 }'; }

PLAN=(plan --model llama3-70b --gpus 4096 --seq-len 8192 --global-batch-size 2048 --threads 2)

# --- plan --time-limit L: wall time of the whole command minus L.
# limit_within_1s L CMD...
limit_within_1s() {
  local limit=$1; shift
  local ok=0 tries="" attempt start end rc over
  for attempt in 1 2 3; do
    start=$(now)
    "$CLI" "$@" --progress none --time-limit $limit > tl.txt 2> tl.err
    rc=$?
    end=$(now)
    over=$(( end - start - $(awk -v l=$limit 'BEGIN { printf "%.0f", l * 1e9 }') ))
    tries+=" $(secs $over) s (rc $rc)"
    if [[ $rc != 0 && $rc != 1 ]]; then fail "$* --time-limit $limit: exit $rc: $(tail -3 tl.err)"; return; fi
    if grep -q "stopped at the time limit" tl.err; then
      grep -q "INCOMPLETE (interrupted or time limit)" tl.txt || fail "--time-limit $limit: not marked incomplete"
      grep -q "no layout fits" tl.txt && fail "--time-limit $limit: says no layout fits: $(head -5 tl.txt)"
    fi
    (( over <= BOUND_NS )) && { ok=1; break; }
  done
  echo "plan --time-limit $limit ($3 on $5 GPUs): over the limit by$tries"
  (( ok )) || fail "plan --time-limit $limit: more than 1 s over the limit in 3 attempts:$tries"
}
# 70B on 4,096 GPUs: 0.5 s lands in the enumeration or the validation,
# 1.5 and 3 s in the validation or the estimates (seconds of each here).
for limit in ${LIMITS:-0.5 1.5 3}; do limit_within_1s $limit "${PLAN[@]}"; done
# 70B on 64 GPUs: simulations from about 2 s (here 3-5 s to 13 s at load
# 8): 6 s stops one in flight (the simulation checks every 2^14 events).
limit_within_1s 6 plan --model llama3-70b --gpus 64 --seq-len 8192 --global-batch-size 128 --threads 2
# 8B on 2^20 GPUs: the rank-order twin check (one call per layout shape,
# linear in the ranks since session 24, quadratic before) polls the stop;
# it ran 152 s past a 10 s limit at this size before.
limit_within_1s 3 plan --model llama3-8b --gpus 1048576 --seq-len 4096 --global-batch-size 1048576 --threads 2

# --- SIGINT/SIGTERM after DELAY: time from the kill to the exit.
# stop_within_1s LABEL SIG DELAY WANT_RC CMD...
# An attempt that finished before the signal is retried with 0.6 x DELAY.
# Before each attempt, the command in BEFORE_ATTEMPT (if set) runs (an
# export's output of a run that finished first is removed); LAST_SIGNALLED
# says whether the last attempt was stopped by the signal.
stop_within_1s() {
  local label=$1 sig=$2 delay=$3 want=$4; shift 4
  local ok=0 tries="" attempt pid start end rc
  LAST_SIGNALLED=0
  for attempt in 1 2 3; do
    [[ -n ${BEFORE_ATTEMPT:-} ]] && eval "$BEFORE_ATTEMPT"
    LAST_SIGNALLED=0
    env --default-signal=INT "$@" > stop.out 2> stop.err &
    pid=$!
    sleep "$delay"
    if ! kill -0 $pid 2> /dev/null; then
      wait $pid
      tries+=" finished before the signal at $delay s (rc $?)"
      # The run was faster than the measured one (the machine's load
      # changed): the next attempt signals earlier.
      delay=$(awk -v d="$delay" 'BEGIN { printf "%.2f", d * 0.6 }')
      continue
    fi
    start=$(now)
    kill -$sig $pid
    LAST_SIGNALLED=1
    wait $pid; rc=$?
    end=$(now)
    tries+=" $(secs $((end - start))) s (rc $rc)"
    if [[ $rc != "$want" ]]; then fail "$label: exit $rc after SIG$sig (expected $want): $(tail -2 stop.err)"; return; fi
    (( end - start <= BOUND_NS )) && { ok=1; break; }
  done
  echo "$label: SIG$sig after $delay s, exit after$tries"
  (( ok )) || fail "$label: not stopped within 1 s of SIG$sig in 3 attempts:$tries"
}

stop_within_1s "plan (validation or estimates)" INT 1 130 "$CLI" "${PLAN[@]}" --progress none
grep -q "INCOMPLETE (interrupted or time limit)" stop.out || fail "plan SIGINT: not marked incomplete: $(head -3 stop.out)"
stop_within_1s "plan" TERM 2.5 143 "$CLI" "${PLAN[@]}" --progress none

# The signal lands at a share of the command's own run time, measured
# first on this machine (a fixed delay would find a fast machine done).
# at_share SHARE CMD...: SHARE x one full run's wall seconds.
at_share() {
  local share=$1 s; shift
  s=$(now)
  "$@" > /dev/null 2>&1
  awk -v n=$(( $(now) - s )) -v f="$share" 'BEGIN { printf "%.2f", n / 1e9 * f }'
}

# inspect of the 1T job (64 stages, 512 micro-batches): about 1.5 s of
# CPU; the build and the budget count take its first 15%, the simulation
# of summary.json most of the rest.
T1="${STAGECRAFT_SOURCE_DIR:?set STAGECRAFT_SOURCE_DIR to the source tree}/tests/bench/jobs/korthikanti-1t.json"
full=$(at_share 1 "$CLI" inspect --config "$T1")
stop_within_1s "inspect 1T (build)" INT "$(awk -v f=$full 'BEGIN { printf "%.2f", f * 0.1 }')" 130 "$CLI" inspect --config "$T1"
stop_within_1s "inspect 1T (simulation)" TERM "$(awk -v f=$full 'BEGIN { printf "%.2f", f * 0.6 }')" 143 "$CLI" inspect --config "$T1"

# A serving workload of 20,000 requests x 1,024 output tokens: the run
# (polled every 4,096 iterations) and the percentiles of 2 * 10^7
# inter-token gaps (sorted with polls: std::sort of them could not stop).
cat > work.json <<'J'
{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
 "serving": {"prompt_tokens": 2048, "output_tokens": 1024,
             "workload": {"arrival": "poisson", "rate": 200, "requests": 20000, "seed": 1}}}
J
full=$(at_share 1 "$CLI" inspect --config work.json)
stop_within_1s "inspect serving workload (early)" INT "$(awk -v f=$full 'BEGIN { printf "%.2f", f * 0.2 }')" 130 "$CLI" inspect --config work.json
stop_within_1s "inspect serving workload (late)" TERM "$(awk -v f=$full 'BEGIN { printf "%.2f", f * 0.7 }')" 143 "$CLI" inspect --config work.json

# generate of 4,096 ranks (833 MB; one writer thread): the export stops and
# removes what it wrote. Its time depends on the disk (under half a second
# into a page cache or tmpfs, seconds on a slow disk), so the signal lands
# at 20% of a full run measured here first (after a warm-up run: a cold
# first run would overstate it), and any output of an attempt that
# finished before it is removed before the next.
GEN=(generate --model llama3-8b --layers 8 --tp 2 --pp 2 --dp 1024 --seq-len 1024 --global-batch-size 8192 --threads 1 -q)
"$CLI" "${GEN[@]}" -o gen_full > /dev/null 2>&1
rm -rf gen_full
full=$(at_share 1 "$CLI" "${GEN[@]}" -o gen_full)
rm -rf gen_full
BEFORE_ATTEMPT='rm -rf gen_out' stop_within_1s "generate 4,096 ranks (directory)" TERM \
  "$(awk -v f=$full 'BEGIN { printf "%.2f", f * 0.2 }')" 143 "$CLI" "${GEN[@]}" -o gen_out
if (( LAST_SIGNALLED )); then
  compgen -G "gen_out*" && fail "the stopped generate left $(compgen -G 'gen_out*')"
fi
rm -rf gen_out

# --- An inherited SIG_IGN stays: this script's background job has SIGINT
# ignored (bash, without job control), so SIGINT does not stop the CLI
# and SIGTERM still does. Held at a test pause (which returns on a
# signal the CLI caught) so this does not depend on timing.
STAGECRAFT_TEST_PAUSE=plan-validate "$CLI" "${PLAN[@]}" --progress none > ign.txt 2> ign.err &
pid=$!
for _ in $(seq 1 600); do grep -q "test pause at plan-validate" ign.err && break; sleep 0.1; done
grep -q "test pause at plan-validate" ign.err || fail "SIG_IGN: the search never paused: $(cat ign.err)"
kill -INT $pid
sleep 0.5
kill -0 $pid 2> /dev/null || fail "SIG_IGN: an inherited ignored SIGINT stopped plan"
kill -TERM $pid
wait $pid; rc=$?
[[ $rc == 143 ]] || fail "SIG_IGN: exit $rc after SIGTERM (expected 143): $(cat ign.err)"
grep -q "interrupted by SIGTERM" ign.err || fail "SIG_IGN: no SIGTERM note: $(cat ign.err)"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
