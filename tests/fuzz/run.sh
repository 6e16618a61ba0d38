#!/usr/bin/env bash
# Builds the fuzz targets (ASan + UBSan + libFuzzer, clang-14) into
# build/fuzz and runs each for SECONDS seconds from a seed corpus made of
# the golden job cases, the docs' examples and traces the CLI writes.
# Usage: tests/fuzz/run.sh [SECONDS per target, default 20] [CLI]
# Prints libFuzzer's final figures (runs, coverage, corpus) per target;
# exits non-zero on a crash, a sanitizer report or a timeout (the crashing
# input is left in build/fuzz/artifacts/). docs/promises.md, "Fuzzing".
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
secs="${1:-20}"
cli="${2:-${STAGECRAFT_CLI:-$root/build/native/stagecraft}}"
out="$root/build/fuzz"
cxx="$(command -v clang++-14 || command -v clang++)"
cmake -S "$root/tests/fuzz" -B "$out" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$cxx" \
  ${CMAKE_CXX_COMPILER_LAUNCHER:+-DCMAKE_CXX_COMPILER_LAUNCHER=$CMAKE_CXX_COMPILER_LAUNCHER} > "$out.configure.log" 2>&1 \
  || { cat "$out.configure.log"; exit 1; }
cmake --build "$out" -j"${JOBS:-2}" > "$out.build.log" 2>&1 || { tail -50 "$out.build.log"; exit 1; }

# Seed corpora (rebuilt each run; libFuzzer adds what it finds to work/).
seeds="$out/seeds"; rm -rf "$seeds"; mkdir -p "$seeds/job" "$seeds/trace" "$out/artifacts"
cp "$root"/tests/golden/cases/*.json "$seeds/job/" 2>/dev/null || true
# Every ```json block of the docs that looks like a job.
python3 - "$root/docs" "$seeds/job" <<'PY'
import pathlib, re, sys
n = 0
for md in sorted(pathlib.Path(sys.argv[1]).glob("*.md")):
    for block in re.findall(r"```json\n(.*?)```", md.read_text(), re.S):
        if '"model"' in block:
            n += 1
            pathlib.Path(sys.argv[2], f"doc{n}.json").write_text(block)
PY
if [[ -x "$cli" ]]; then
  "$cli" generate --model gpt3-1.7b --layers 2 --tp 2 --pp 2 --seq-len 64 --global-batch-size 2 -o "$seeds/gen" -q
  "$cli" generate --model mixtral-8x7b --layers 1 --tp 2 --sequence-parallel --ep 2 --expert-tp 1 --seq-len 64 --global-batch-size 1 -o "$seeds/moe" -q
  cp "$seeds/gen/trace.0.et" "$seeds/gen/trace.3.et" "$seeds/moe/trace.1.et" "$seeds/trace/"
  cp "$seeds/gen/comm_groups.json" "$seeds/trace/groups.json"
  cp "$seeds/moe/comm_groups.json" "$seeds/trace/groups_moe.json"
fi
echo "seeds: $(ls "$seeds/job" | wc -l) jobs, $(ls "$seeds/trace" | wc -l) trace/group files"

rc=0
for t in job_fuzz trace_fuzz; do
  corpus="$out/work/$t"; mkdir -p "$corpus"
  kind=${t%_fuzz}
  # -seed fixed: the same run for the same corpus and build. -timeout is a
  # hang detector, not a speed bound: a legitimate job that takes 1 s in the
  # release build (a serving job prefilling 8,000 tokens in 1-token chunks)
  # takes 10.5 s under ASan + UBSan on an idle core, and several times that
  # on a loaded one (a 1.4 s input timed out at 10 s at load 10), so the
  # bound is 120 s (docs/promises.md, "Fuzzing").
  if ! "$out/$t" "$corpus" "$seeds/$kind" -seed=1 -max_total_time="$secs" -timeout=120 -rss_limit_mb=2048 \
       -max_len=65536 -artifact_prefix="$out/artifacts/$t-" -print_final_stats=1 > "$out/$t.log" 2>&1; then
    echo "FAIL $t: see $out/$t.log"; grep -E "ERROR|SUMMARY|runtime error|Test unit written" "$out/$t.log" | head -20
    rc=1
  fi
  echo "$t: $(grep -E '^#[0-9]+.*DONE' "$out/$t.log" | tail -1)"
  grep -E "stat::number_of_executed_units|stat::peak_rss_mb" "$out/$t.log" | tr '\n' ' '; echo
done
exit $rc
