#!/usr/bin/env bash
# ASTRA-sim agreement benchmark (docs/simulate.md, "Agreement with ASTRA-sim").
# Not a ctest: ASTRA-sim is not installable from the project's package sources.
#
# For each job below: `stagecraft generate ... -o job.zip`, extract it, run the
# archive's own astra-sim/run.sh (its network.yml, system.json, comm_groups.json)
# with ASTRA-sim's analytical congestion-unaware binary, take max_ns = the largest
# "sys[i] finished, T cycles" (1 cycle = 1 ns); run `stagecraft simulate --astra
# --json` on the same flags and take step_seconds; print the relative error
# (simulate - ASTRA-sim) / ASTRA-sim. Exit 1 if a run fails or a row is outside 5%.
#
# usage: tests/bench/astra_agreement.sh [STAGECRAFT]
#   STAGECRAFT  the CLI (default build/native/stagecraft)
#   ASTRA_SIM   the simulator (default /tmp/astra/build/astra_analytical/build/bin/
#               AstraSim_Analytical_Congestion_Unaware, as ../shared/tools/build-astra-sim.sh builds it)
set -u
sc=${1:-build/native/stagecraft}
: "${ASTRA_SIM:=/tmp/astra/build/astra_analytical/build/bin/AstraSim_Analytical_Congestion_Unaware}"
export ASTRA_SIM
[ -x "$sc" ] || { echo "no stagecraft CLI at $sc"; exit 2; }
[ -x "$ASTRA_SIM" ] || { echo "no ASTRA-sim at $ASTRA_SIM (build it with ../shared/tools/build-astra-sim.sh)"; exit 2; }
command -v unzip >/dev/null || { echo "needs unzip"; exit 2; }
sc=$(cd "$(dirname "$sc")" && pwd)/$(basename "$sc")

work=$(mktemp -d /tmp/astra_agreement.XXXX)
trap 'rm -rf "$work"' EXIT

# name|ranks|flags  (small jobs: seconds in ASTRA-sim; h100 profile, 8 GPUs per node: 8 ranks = one
# network dimension, more = two)
jobs=(
  "dp8|8|--model gpt3-1.7b --layers 2 --dp 8 --seq-len 512 --global-batch-size 8"
  "dp16 (2 nodes)|16|--model gpt3-1.7b --layers 2 --dp 16 --seq-len 512 --global-batch-size 16"
  "dp64 (8 nodes)|64|--model gpt3-1.7b --layers 2 --dp 64 --seq-len 512 --global-batch-size 64"
  "tp8+sp dp2|16|--model gpt3-1.7b --layers 2 --tp 8 --sequence-parallel --dp 2 --seq-len 1024 --global-batch-size 4"
  "pp4 1f1b tp2 dp2|16|--model gpt3-1.7b --layers 8 --pp 4 --tp 2 --dp 2 --seq-len 512 --global-batch-size 16 --schedule 1f1b"
  "pp4 1f1b tp8+sp dp2|64|--model gpt3-1.7b --layers 8 --pp 4 --tp 8 --dp 2 --sequence-parallel --seq-len 512 --global-batch-size 16 --schedule 1f1b"
  "pp4 interleaved v2 tp2 dp2|16|--model gpt3-1.7b --layers 8 --pp 4 --virtual-stages 2 --tp 2 --dp 2 --seq-len 512 --global-batch-size 16 --schedule interleaved-1f1b"
  "pp4 zero-bubble tp2 dp2|16|--model gpt3-1.7b --layers 8 --pp 4 --tp 2 --dp 2 --seq-len 512 --global-batch-size 16 --schedule zero-bubble"
  "cp4 ring tp2 dp2|16|--model gpt3-1.7b --layers 2 --cp 4 --cp-algorithm ring --tp 2 --dp 2 --seq-len 2048 --global-batch-size 2"
  "moe ep4 tp2 dp4 (all-to-all)|8|--model mixtral-8x7b --layers 2 --tp 2 --sequence-parallel --dp 4 --ep 4 --seq-len 512 --global-batch-size 4"
  "zero3 dp8|8|--model gpt3-1.7b --layers 2 --dp 8 --zero 3 --seq-len 512 --global-batch-size 8"
  "zero3 dp16 (2 nodes)|16|--model gpt3-1.7b --layers 2 --dp 16 --zero 3 --seq-len 512 --global-batch-size 16"
  "zero3 dp32 (4 nodes)|32|--model gpt3-1.7b --layers 2 --dp 32 --zero 3 --seq-len 512 --global-batch-size 32"
)

printf '| %s | %s | %s | %s | %s |\n' job ranks "ASTRA-sim ns" "simulate ns" error
printf '|---|---:|---:|---:|---:|\n'
bad=0
for j in "${jobs[@]}"; do
  IFS='|' read -r name n flags <<<"$j"
  d="$work/job"; rm -rf "$d" "$work/job.zip"
  # shellcheck disable=SC2086
  "$sc" generate $flags -q -o "$work/job.zip" || { echo "$name: generate failed"; bad=1; continue; }
  unzip -q "$work/job.zip" -d "$d"
  log=$(sh "$d/astra-sim/run.sh" 2>&1); rc=$?
  fin=$(printf '%s\n' "$log" | grep -c 'sys\[[0-9]*\] finished')
  astra=$(printf '%s\n' "$log" | sed -n 's/.*sys\[[0-9]*\] finished, \([0-9]*\) cycles.*/\1/p' | sort -n | tail -1)
  if [ "$rc" -ne 0 ] || [ "$fin" -ne "$n" ] || [ -z "$astra" ]; then
    echo "| $name | $n | FAIL (rc $rc, $fin/$n finished) | | |"; bad=1; continue
  fi
  # shellcheck disable=SC2086
  sim=$("$sc" simulate $flags --astra --json | python3 -c 'import json,sys; print(round(json.load(sys.stdin)["step_seconds"]*1e9))')
  row=$(python3 -c "a,s=$astra,$sim; e=(s-a)/a*100; print('%d %d %+.2f%% %d' % (a, s, e, abs(e) > 5))")
  read -r a s e out <<<"$row"
  printf '| %s | %s | %s | %s | %s |\n' "$name" "$n" "$a" "$s" "$e"
  [ "$out" = 1 ] && bad=1
done
exit $bad
