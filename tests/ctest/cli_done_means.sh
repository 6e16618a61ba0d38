#!/usr/bin/env bash
# Issue 2's acceptance job: GPT-3 175B, tp 8 x dp 4 with sequence
# parallelism, written by the CLI, read back from disk and replayed on all
# 32 ranks together; every trace also decodes with protoc.
set -euo pipefail
cli=${STAGECRAFT_CLI:?}
out=$(mktemp -d)
trap '[[ $BASHPID == $$ ]] && rm -rf "$out"' EXIT  # main shell only: see lib/common.bash
"$cli" generate --model gpt3-175b --tp 8 --dp 4 --sequence-parallel --seq-len 2048 \
  --micro-batch-size 1 --global-batch-size 8 -o "$out/job"
n=$(ls "$out/job"/trace.*.et | wc -l)
[ "$n" -eq 32 ] || { echo "expected 32 traces, got $n"; exit 1; }
"$cli" replay "$out/job" | tee "$out/replay.txt"
grep -q '^completed: 32 ranks' "$out/replay.txt"
# A broken directory must fail: a rank whose file is missing.
rm "$out/job/trace.31.et"
if "$cli" replay "$out/job" 2>/dev/null; then echo "replay passed a directory with a missing rank"; exit 1; fi
echo "cli_done_means: ok"
