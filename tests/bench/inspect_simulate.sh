#!/usr/bin/env bash
# Speed of `inspect` and `simulate` on the jobs issue 11 names (docs/performance.md).
# Not a test: prints CPU (user + system) and wall seconds per job and command for
# the CLI under test and for a baseline CLI (e.g. the previous build) in the same
# run, and the CPU ratio baseline / new. Best of --repeat runs.
#
# usage: tests/bench/inspect_simulate.sh NEW_CLI BASELINE_CLI [REPEAT]
set -u
new=${1:?NEW_CLI}; base=${2:?BASELINE_CLI}; rep=${3:-2}
dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/jobs
jobs=(gpt3-175b-job-format korthikanti-530b korthikanti-1t)
best() {  # CLI CMD JOB -> "cpu wall"
  local b="" line cpu wall
  for ((i = 0; i < rep; i++)); do
    line=$( { /usr/bin/time -f "%U %S %e" "$1" "$2" --config "$dir/$3.json" > /dev/null; } 2>&1 | tail -1)
    cpu=$(awk '{printf "%.2f", $1 + $2}' <<< "$line"); wall=$(awk '{print $3}' <<< "$line")
    if [[ -z $b ]] || awk -v a="$cpu" -v c="${b%% *}" 'BEGIN{exit !(a < c)}'; then b="$cpu $wall"; fi
  done
  echo "$b"
}
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
printf "| job | command | new CPU s | new wall s | baseline CPU s | baseline wall s | CPU ratio |\n|---|---|---:|---:|---:|---:|---:|\n"
for j in "${jobs[@]}"; do
  for c in inspect simulate; do
    read -r nc nw < <(best "$new" "$c" "$j")
    read -r bc bw < <(best "$base" "$c" "$j")
    printf "| %s | %s | %s | %s | %s | %s | %s |\n" "$j" "$c" "$nc" "$nw" "$bc" "$bw" "$(awk -v a="$bc" -v b="$nc" 'BEGIN{printf "%.2f", a / b}')"
  done
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
