#!/usr/bin/env bash
# Repeats every suite to find flakes (issue 24 item 7; docs/promises.md
# "Repeat runs"). Run from a built tree (.ci/build native wasm web):
#   tests/tools/repeat_suites.sh LOGDIR ROUNDS DEADLINE_EPOCH [FUZZ_EVERY]
# Each round runs, in this order and each at nice 10 (NICE=n to change): every ctest except
# fuzz_sanitizers (ctest -j2), the Node suite and the Chromium suite
# (.ci/test node / browser, with CI=true so nothing may skip itself);
# fuzz_sanitizers alone in rounds 1, 1+FUZZ_EVERY, ... (default 4: it takes
# minutes of both cores). A suite is not started past DEADLINE_EPOCH.
# LOGDIR gets one log per suite and round and summary.txt, one line per
# suite run: "round N SUITE rc=RC SECONDS s [failed: names]".
set -u
cd "$(dirname "$0")/../.."
logdir=$1 rounds=$2 deadline=$3 fuzz_every=${4:-4}
mkdir -p "$logdir"
export CI=true
summary="$logdir/summary.txt"
echo "commit $(cat COMMIT 2>/dev/null || git rev-parse --short HEAD) started $(date -u +%FT%TZ)" >>"$summary"

run() {  # run ROUND SUITE COMMAND...
  local round=$1 suite=$2; shift 2
  if (( $(date +%s) >= deadline )); then echo "round $round $suite not started: deadline" >>"$summary"; return 1; fi
  local log="$logdir/r$(printf %02d "$round")-$suite.log" t0=$(date +%s)
  nice -n ${NICE:-10} "$@" >"$log" 2>&1; local rc=$?
  local failed=""
  if [[ $rc != 0 ]]; then
    failed=$(grep -E '^\s+[0-9]+ - .* \((Failed|Timeout|Subprocess|Exception)' "$log" | sed -E 's/^\s+[0-9]+ - ([^ ]+).*/\1/' | tr '\n' ' ')
    [[ -z $failed ]] && failed=$(grep -E '^(not ok|✖|FAIL)' "$log" | head -5 | tr '\n' ' ')
  fi
  echo "round $round $suite rc=$rc $(( $(date +%s) - t0 )) s${failed:+ [failed: $failed]}" >>"$summary"
}

for ((r = 1; r <= rounds; r++)); do
  run "$r" ctest ctest --test-dir build/native -j2 -E '^fuzz_sanitizers$' --output-on-failure || break
  run "$r" node bash .ci/test node || break
  run "$r" browser bash .ci/test browser || break
  if (( (r - 1) % fuzz_every == 0 )); then
    run "$r" fuzz ctest --test-dir build/native -R '^fuzz_sanitizers$' --output-on-failure || break
  fi
done
echo "finished $(date -u +%FT%TZ)" >>"$summary"
