#!/usr/bin/env bash
# Byte-compares everything two stagecraft binaries write for a corpus of
# jobs: every trace, comm_groups.json, summary.json, the .zip archive (with
# manifest.json and astra-sim/), `graph` text and `inspect` (text and --json).
# For refactors that must not change outputs (docs/building.md).
# Usage: compare_outputs.sh BASELINE_CLI NEW_CLI [WORKDIR]
set -euo pipefail
base=$1 new=$2
work=${3:-$(mktemp -d)}
src=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$work"

# name|arguments: the golden cases plus flag combinations they do not cover.
cases=()
for f in "$src"/tests/golden/cases/*.json; do cases+=("$(basename "$f" .json)|--config $f"); done
cases+=(
  "dense-zero1|--model gpt3-1.7b --layers 2 --dp 4 --zero 1"
  "dense-zero2|--model gpt3-1.7b --layers 2 --dp 4 --tp 2 --zero 2"
  "fsdp-zero3|--model llama3-8b --layers 2 --dp 8 --zero 3"
  "hsdp|--model llama3-8b --layers 2 --dp 8 --zero 3 --shard-group 4"
  "cp-ring|--model llama3-8b --layers 2 --cp 2 --tp 2 --cp-algorithm ring"
  "cp-allgather-sp|--model llama3-8b --layers 2 --cp 2 --tp 2 --sequence-parallel"
  "pp4-interleaved|--model gpt3-1.7b --layers 8 --pp 4 --virtual-stages 2 --schedule interleaved-1f1b --dp 2 --global-batch-size 16"
  "pp2-zb-llama3-order|--model llama3-8b --layers 4 --pp 2 --dp 2 --schedule zero-bubble --order llama3 --global-batch-size 8"
  "moe-mixtral|--model mixtral-8x7b --layers 2 --tp 2 --ep 4 --dp 4 --sequence-parallel"
  "mla-deepseek|--model deepseek-v3 --layers 4 --tp 2 --ep 4 --expert-tp 1 --dp 4 --pp 2 --global-batch-size 8"
  "bad-job-error|--model gpt3-1.7b --tp 7"
  "recompute-full|--model gpt3-1.7b --layers 2 --tp 2 --dp 2 --recompute full"
  "recompute-selective|--model gpt3-1.7b --layers 2 --tp 2 --recompute selective --sequence-parallel"
)

fail=0 n=0
for c in "${cases[@]}"; do
  name=${c%%|*} args=${c#*|}
  for which in base new; do
    cli=${!which} out=$work/$which/$name
    rm -rf "$out" && mkdir -p "$out"
    # shellcheck disable=SC2086
    { $cli generate $args -o "$out/dir" --quiet >/dev/null 2>"$out/generate.err" &&
      $cli generate $args -o "$out/archive.zip" --quiet >/dev/null 2>>"$out/generate.err" &&
      $cli graph $args >"$out/graph.txt" 2>>"$out/generate.err" &&
      $cli inspect $args >"$out/inspect.txt" 2>>"$out/generate.err" &&
      $cli inspect $args --json >"$out/inspect.json" 2>>"$out/generate.err"; } ||
      echo "exit $? ($(head -c 300 "$out/generate.err"))" >"$out/failed"
  done
  if diff -r "$work/base/$name" "$work/new/$name" >/dev/null; then
    files=$(find "$work/new/$name" -type f | wc -l)
    ranks=$(find "$work/new/$name" -name "*.et" | wc -l)
    state=$([ -f "$work/new/$name/failed" ] && echo "both failed alike" || echo "identical")
    echo "ok   $name: $files files ($ranks traces) $state"
    n=$((n + 1))
  else
    echo "DIFF $name:"; diff -rq "$work/base/$name" "$work/new/$name" | head -5
    fail=1
  fi
done
echo "compare_outputs: $n of ${#cases[@]} jobs byte-identical ($work)"
exit $fail
