#!/usr/bin/env bash
# stagecraft validate on a generated 4-rank job: valid as generated; then
# broken on disk (a missing file, extra files, a file under the wrong rank,
# corrupt or hand-encoded bytes, a bad group file). Every break must give
# exit 1 and name the rule, rank and file; no input may crash it.
set -u
CLI="${STAGECRAFT_CLI:?set STAGECRAFT_CLI to the stagecraft binary}"
[[ "$CLI" == */* ]] && CLI="$(cd "$(dirname "$CLI")" && pwd)/$(basename "$CLI")"  # we cd below
WORK="$(mktemp -d)"
trap '[[ $BASHPID == $$ ]] && rm -rf "$WORK"' EXIT  # main shell only: see lib/common.bash
cd "$WORK"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# validate DIR [flags] -> $rc, output in out.txt (stdout + stderr)
check() { "$CLI" validate "$@" > out.txt 2>&1; rc=$?; }
expect() {  # expect RC PATTERN WHAT
  [[ $rc == "$1" ]] || fail "$3: exit $rc, expected $1: $(head -c 600 out.txt)"
  grep -q -- "$2" out.txt || fail "$3: no '$2' in: $(head -c 600 out.txt)"
}
fresh() { rm -rf "$1"; cp -r gen "$1"; }

"$CLI" generate --model gpt3-1.7b --layers 2 --tp 2 --dp 2 --seq-len 256 --global-batch-size 4 -o gen \
  > /dev/null 2>&1 || { echo "FAIL generate"; exit 1; }

check gen; expect 0 "^valid$" "generated job"
grep -q "0 errors, 0 warnings" out.txt || fail "generated job has findings: $(cat out.txt)"
check gen --json; expect 0 '"ok":true' "--json"

# MoE with Megatron's all-gather dispatcher (its all-gather / reduce-scatter
# pair over ep in place of the all-to-all) and the shared experts on their
# own stream: valid Chakra traces, every rank runs to completion.
cat > moe.json <<'J'
{"model": {"preset": "deepseek-v3", "num_layers": 5}, "parallel": {"dp": 4, "ep": 4, "moe_dispatcher": "allgather"},
 "training": {"seq_len": 256, "global_batch_size": 4}}
J
"$CLI" generate --config moe.json -o moe_ag > /dev/null 2>&1 || fail "generate allgather MoE"
check moe_ag; expect 0 "^valid$" "allgather MoE job"
grep -q "0 errors, 0 warnings" out.txt || fail "allgather MoE job has findings: $(cat out.txt)"
"$CLI" dump moe_ag/*.0.et | grep -q "moe.dispatch.all_gather(ep) COMM_COLL_NODE .*ALL_GATHER" || fail "no ep all-gather in the allgather trace"
"$CLI" dump moe_ag/*.0.et | grep -q "ALL_TO_ALL" && fail "an all-to-all left in the allgather trace"
"$CLI" replay moe_ag > out.txt 2>&1 || fail "replay allgather MoE: $(head -c 300 out.txt)"
"$CLI" generate --config moe.json --moe-dispatcher alltoall --moe-shared-expert-overlap -o moe_se > /dev/null 2>&1 ||
  fail "generate shared-expert overlap"
check moe_se; expect 0 "^valid$" "shared-expert overlap job"
"$CLI" replay moe_se > out.txt 2>&1 || fail "replay shared-expert overlap: $(head -c 300 out.txt)"
"$CLI" help validate > /dev/null 2>&1 || fail "help validate"

# A missing rank file.
fresh d1; rm d1/trace.3.et
check d1; expect 1 "error R9 rank 3: rank 3 is missing" "missing trace.3.et"
check d1 --json; expect 1 '"R9":1' "missing file, --json"

# Corrupt bytes: a zero metadata length is always detected, precisely.
fresh d2; printf '\x00' | dd of=d2/trace.1.et bs=1 seek=0 conv=notrunc 2> /dev/null
check d2; expect 1 "error R0 rank 1: trace.1.et does not decode: global metadata: missing version" "corrupt byte 0"
# Any other byte: a finding or (if the change is benign) valid, never a crash.
size=$(stat -c %s gen/trace.2.et)
for off in 1 2 3 5 8 13 40 77 150 333 1000 $((size / 2)) $((size - 40)) $((size - 2)) $((size - 1)); do
  for byte in '\xff' '\x80' '\x00'; do
    fresh d3; printf "$byte" | dd of=d3/trace.2.et bs=1 seek=$off conv=notrunc 2> /dev/null
    check d3
    if [[ $rc != 0 && $rc != 1 ]]; then fail "byte $off=$byte: exit $rc: $(head -c 300 out.txt)"; fi
    if [[ $rc == 1 ]] && ! grep -q "^error R[0-9]" out.txt; then fail "byte $off=$byte: no finding: $(head -c 300 out.txt)"; fi
  done
done
fresh d3; head -c $((size - 3)) gen/trace.2.et > d3/trace.2.et
check d3; expect 1 "error R0 rank 2: trace.2.et does not decode: truncated frame" "truncated file"

# Hand-encoded nodes appended to rank 0: the reader's errors map to rules.
# Node{id 99, name "meta", type METADATA_NODE}
fresh d4; printf '\x0a\x08\x63\x12\x04meta\x18\x01' >> d4/trace.0.et
check d4; expect 1 "error R4 rank 0 node 99 (meta): trace.0.et does not decode: unknown node type 1" "METADATA node"
# Node{id 99, name "x", type COMP_NODE, data_deps [123456]}
fresh d5; printf '\x0c\x08\x63\x12\x01x\x18\x04\x2a\x03\xc0\xc4\x07' >> d5/trace.0.et
check d5; expect 1 "error R2 rank 0 node 99 (x): .*dependency on id 123456" "dangling dependency"

# Files: extra ranks, odd names, a file under another rank's name.
fresh d6; cp gen/trace.0.et d6/trace.4.et; cp gen/trace.0.et d6/trace.01.et
check d6; expect 1 "error R9 rank 4: extra file trace.4.et" "extra rank file"
grep -q "extra file trace.01.et" out.txt || fail "trace.01.et not reported: $(cat out.txt)"
fresh d7; mv d7/trace.0.et tmp.et; mv d7/trace.1.et d7/trace.0.et; mv tmp.et d7/trace.1.et
check d7; expect 1 "error R9 rank 0: trace.0.et says rank 1 in its metadata" "swapped files"

# The group file: missing, malformed, a group left out.
fresh d8; rm d8/comm_groups.json
check d8; expect 1 "error R6: group file: .*comm_groups.json" "missing group file"
fresh d9; printf '{"1": [0, 1], "01": [2]}' > d9/comm_groups.json
check d9; expect 1 "error R6: group file: .*\"01\"" "non-canonical group key"
fresh d10; printf '{"1": [0, 1]}' > d10/comm_groups.json
check d10; expect 1 "error R6 rank [0-3] node [0-9]* (.*): pg_name \"[0-9]*\" is not a key of the group file" "group left out"

# Streaming: ranks are dropped once checked, yet R7 and R8 name the node at
# fault (the CLI reads those ranks again), and the report does not depend
# on --threads. Rank 5 from a job with twice the micro-batches.
"$CLI" generate --model gpt3-1.7b --layers 2 --tp 2 --pp 2 --dp 2 --seq-len 256 --global-batch-size 4 -o pp > /dev/null 2>&1 \
  || fail "generate pp"
"$CLI" generate --model gpt3-1.7b --layers 2 --tp 2 --pp 2 --dp 2 --seq-len 256 --global-batch-size 8 -o pp8 > /dev/null 2>&1 \
  || fail "generate pp8"
check pp; expect 0 "^valid$" "pp job"
cp pp8/trace.5.et pp/trace.5.et
check pp --threads 1; expect 1 "error R7 rank 5 node [0-9]* (mb2\..*): issues 32 collectives on group [0-9]*, rank 4 only 16; the first extra is #16" "R7 through the CLI"
grep -q "error R8 rank 5 node [0-9]* (.*): send to rank 1 tag [0-9]* size [0-9]* has no matching recv on rank 1" out.txt \
  || fail "R8 through the CLI: $(head -c 600 out.txt)"
grep -q "6 errors, 0 warnings: R7 1, R8 4, R9 1" out.txt || fail "R7/R8 counts: $(cat out.txt)"
cp out.txt threads1.txt
for t in 2 3 8; do
  check pp --threads $t; cmp -s out.txt threads1.txt || fail "--threads $t changes the report: $(diff threads1.txt out.txt | head -5)"
done
check pp --json; expect 1 '"R8":4' "R7/R8 --json"
check pp --threads 0; [[ $rc == 2 ]] || fail "--threads 0: exit $rc"

# --prefix; usage and I/O errors.
"$CLI" generate --model gpt3-1.7b --layers 1 --tp 2 --seq-len 256 --prefix llm -o p > /dev/null 2>&1 || fail "generate --prefix"
check p --prefix llm; expect 0 "^valid$" "--prefix llm"
check p; expect 1 "error R9: no trace.<rank>.et files in p; it holds llm.<rank>.et files: give --prefix llm" "wrong prefix"
check; [[ $rc == 2 ]] || fail "no DIR: exit $rc"
check nope; expect 1 "nope: no such file or directory" "missing DIR"
touch afile; check afile; expect 1 "afile: not a directory" "DIR a file"

# A serving job's export (issue 24): no traces of its own, one folder per
# phase; validate checks each and is valid when all are.
echo '{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 2}, "parallel": {"tp": 2},
  "serving": {"prompt_tokens": 256, "output_tokens": 16}}' > serve.json
"$CLI" generate --config serve.json -q -o serve || fail "generate serving"
check serve; expect 0 "^all 3 parts valid$" "serving export"
for part in prefill decode mixed; do grep -q "^serve/$part: 2 trace files" out.txt || fail "serving: no report for $part: $(cat out.txt)"; done
"$CLI" validate serve --json > serve.json.out || fail "serving --json: exit $?"
python3 -c "import json; d = json.load(open('serve.json.out')); assert list(d['parts']) == ['prefill', 'decode', 'mixed'] and d['valid'] is True, d" \
  || fail "serving --json: $(head -c 300 serve.json.out)"
# A part gone, every part gone, or a part the job does not have: validate
# and replay both refuse the export, naming the parts (summary.json's job).
cp -r serve s1 && rm -rf s1/mixed
check s1; expect 1 "s1: missing mixed/ (summary.json's job has 3 parts: prefill/, decode/, mixed/; found prefill/, decode/)" "a part gone"
"$CLI" replay s1 > out.txt 2>&1; rc=$?; expect 1 "s1: missing mixed/" "replay, a part gone"
cp -r serve s2 && rm -rf s2/prefill s2/decode s2/mixed
check s2; expect 1 "s2: missing prefill/, decode/, mixed/" "every part gone"
check s2 --json; expect 1 '"missing": \["prefill", "decode", "mixed"\]' "every part gone, --json"
# The top summary.json gone or torn: the parts come from the decode part's
# own summary (which names the whole job), and a missing part is still
# caught; with both summaries gone the export cannot be checked: refused.
cp -r serve s4 && rm -rf s4/mixed s4/summary.json
check s4; expect 1 "s4: missing mixed/ (decode/summary.json's job has 3 parts: prefill/, decode/, mixed/; found prefill/, decode/)" "a part and the summary gone"
"$CLI" replay s4 > out.txt 2>&1; rc=$?; expect 1 "s4: missing mixed/ (decode/summary.json" "replay, a part and the summary gone"
cp -r serve s5 && head -c 300 serve/summary.json > s5/summary.json && rm -rf s5/mixed
check s5; expect 1 "s5: missing mixed/ (decode/summary.json" "a part gone, the summary torn"
cp -r serve s6 && rm -f s6/summary.json s6/decode/summary.json
check s6; expect 1 "s6: a serving export (phase folders found) whose summary.json and decode/summary.json are missing or unreadable" "both summaries gone"
check s6 --json; expect 1 '"valid": false' "both summaries gone, --json"
cp -r serve s7 && rm -f s7/summary.json
check s7; expect 0 "^all 3 parts valid$" "the top summary gone, every part there"
cp -r serve s3 && cp -r serve/mixed s3/kv_transfer
check s3; expect 1 "kv_transfer/ not a part of its job" "a part of another kind of job"
"$CLI" replay s3 > out.txt 2>&1; rc=$?; expect 1 "kv_transfer/ not a part of its job" "replay, a part of another kind of job"
head -c 100 serve/decode/trace.1.et > cut && mv cut serve/decode/trace.1.et
check serve; expect 1 "^not all 3 parts valid$" "serving export with a cut decode trace"
grep -q "trace.1.et does not decode" out.txt || fail "serving: the cut file is not named: $(cat out.txt)"
# --prefix is a file name, never a path (D14): "../x" would read outside DIR.
mkdir -p inside && cp gen/comm_groups.json inside/
check inside --prefix ../gen/trace; [[ $rc == 2 ]] && grep -q "prefix must be a file name" out.txt || fail "validate --prefix ../: exit $rc: $(cat out.txt)"
# A trace file past the world is not part of the job: replay says so
# (never opening it: a FIFO would block) and replays the world's ranks.
"$CLI" generate --model gpt3-1.7b --layers 1 --tp 2 --seq-len 128 --global-batch-size 2 -q -o extra || fail "generate extra"
cp extra/trace.1.et extra/trace.5.et && mkfifo extra/trace.9.et
timeout 30 "$CLI" replay extra > out.txt 2> err.txt; rc=$?
[[ $rc == 0 ]] && grep -q "^completed: 2 ranks" out.txt || fail "replay with extra files: exit $rc $(cat out.txt err.txt)"
grep -q "warning: trace.5.et is past world_size 2: not replayed" err.txt && grep -q "trace.9.et is past world_size 2" err.txt ||
  fail "replay did not name the extra files: $(cat err.txt)"
"$CLI" replay inside --prefix ../gen/trace > out.txt 2>&1; rc=$?
[[ $rc == 2 ]] && grep -q "prefix must be a file name" out.txt || fail "replay --prefix ../ read outside DIR: exit $rc: $(cat out.txt)"

# Archives (docs/validate.md, "Archives"): what generate writes as .zip or
# .tar.gz is validated and replayed as its directory is, and names its
# findings by the archive's members; the extraction never outlives the run.
export TMPDIR="$WORK/tmp"; mkdir -p "$TMPDIR"
leftover() { compgen -G "$TMPDIR/stagecraft-*" > /dev/null && fail "$1: left $(ls "$TMPDIR")"; }
"$CLI" generate --model gpt3-1.7b --layers 2 --tp 2 --dp 2 --seq-len 256 --global-batch-size 4 -q -o gen.zip || fail "generate zip"
"$CLI" generate --config serve.json -q -o serve.tar.gz || fail "generate serving tar.gz"
check gen.zip; expect 0 "^valid$" "zip"
grep -q "^gen.zip: 4 trace files" out.txt || fail "zip: header does not name the archive: $(head -c 300 out.txt)"
check serve.tar.gz; expect 0 "^all 3 parts valid$" "serving tar.gz"
for part in prefill decode mixed; do grep -q "^serve.tar.gz:$part: 2 trace files" out.txt || fail "serving tar.gz: no $part: $(cat out.txt)"; done
check serve.tar.gz --json; expect 0 '"valid": true' "serving tar.gz --json"
"$CLI" replay gen.zip > out.txt 2>&1 && grep -q "^completed: 4 ranks" out.txt || fail "replay zip: $(cat out.txt)"
"$CLI" replay serve.tar.gz > out.txt 2>&1 && [[ $(grep -c "^serve.tar.gz:[a-z]*: completed: 2 ranks" out.txt) == 3 ]] ||
  fail "replay serving tar.gz: $(cat out.txt)"
leftover "valid archives"
# A directory archived by hand (one top folder, or "./") reads the same.
(cd gen && tar czf ../bytar.tar.gz . ) && (tar czf wrapped.tar.gz gen) || fail "tar"
check bytar.tar.gz; expect 0 "^valid$" "tar of ."
check wrapped.tar.gz; expect 0 "^valid$" "tar of a folder"
# A training export in a folder that happens to be called like a phase is
# that export (as validating the folder reads it), not a serving part.
mkdir -p pf && cp -r gen pf/prefill && (cd pf && tar czf ../pf.tar.gz prefill) || fail "tar prefill"
check pf.tar.gz; expect 0 "^valid$" "a folder named prefill"
grep -q "^pf.tar.gz:prefill: 4 trace files" out.txt || fail "a folder named prefill: $(head -c 300 out.txt)"
grep -q "parts valid" out.txt && fail "a folder named prefill read as a serving export: $(cat out.txt)"
# A broken member is named by the archive; a cut archive, a member that is a
# link or appears twice, traces under two folders: an error naming the member.
mkdir -p broken && cp gen/* broken/ 2> /dev/null; printf '\x00' | dd of=broken/trace.1.et bs=1 seek=0 conv=notrunc 2> /dev/null
python3 -c "import os, zipfile; z = zipfile.ZipFile('broken.zip', 'w')
for n in sorted(os.listdir('broken')): z.write('broken/' + n, n)" || fail "zip broken"
check broken.zip; expect 1 "error R0 rank 1: trace.1.et does not decode" "a broken member"
head -c 3000 gen.zip > cut.zip; check cut.zip; expect 1 "cut.zip: a corrupt or truncated archive" "a cut zip"
python3 - "$PWD/gen/trace.0.et" <<'PY' || fail "python tar"
import io, sys, tarfile
g = open(sys.argv[1], 'rb').read()
def tar(path, members):
    with tarfile.open(path, 'w:gz') as t:
        for name, kind in members:
            ti = tarfile.TarInfo(name); ti.type = kind
            if kind == tarfile.SYMTYPE: ti.linkname = '/etc/passwd'
            ti.size = len(g) if kind == tarfile.REGTYPE else 0
            t.addfile(ti, io.BytesIO(g) if kind == tarfile.REGTYPE else None)
R, L = tarfile.REGTYPE, tarfile.SYMTYPE
tar('link.tar.gz', [('trace.0.et', L)])
tar('twice.tar.gz', [('trace.0.et', R), ('./trace.0.et', R)])
tar('two.tar.gz', [('a/trace.0.et', R), ('b/trace.1.et', R)])
tar('escape.tar.gz', [('../escaped.0.et', R), ('/tmp/escaped.1.et', R), ('prefill/../../escaped.2.et', R)])
PY
check link.tar.gz; expect 1 "link.tar.gz:trace.0.et: not a regular file" "a link member"
check twice.tar.gz; expect 1 "twice.tar.gz:./trace.0.et: appears twice" "a member twice"
check two.tar.gz; expect 1 "traces under 'a/' and under 'b/'" "two folders"
check escape.tar.gz; expect 1 "no trace.<rank>.et files in escape.tar.gz" "names outside the archive's folders"
# ../ from the extraction directory is $TMPDIR, two up $WORK; /tmp the absolute one.
found=$(find "$WORK" /tmp/escaped.1.et -maxdepth 3 -name 'escaped.*' 2> /dev/null)
[[ -z $found ]] || fail "a member was written outside the extraction: $found"
leftover "refused archives"
# Interrupted mid-extraction (STAGECRAFT_TEST_PAUSE): exit by the signal, nothing left.
STAGECRAFT_TEST_PAUSE=extract env --default-signal=INT "$CLI" validate gen.zip > int.out 2> int.err &
pid=$!
for _ in $(seq 1 3000); do grep -q "test pause at extract" int.err 2> /dev/null && break; sleep 0.01; done
grep -q "test pause at extract" int.err || fail "validate never paused at extract: $(cat int.err)"
kill -INT $pid; wait $pid; rc=$?
[[ $rc == 130 ]] || fail "SIGINT mid-extraction: exit $rc ($(cat int.err))"
grep -q "valid" int.out && fail "SIGINT mid-extraction printed a verdict: $(cat int.out)"
leftover "SIGINT mid-extraction"
# SIGHUP (a closed terminal) the same: exit by the signal, nothing left.
STAGECRAFT_TEST_PAUSE=extract "$CLI" validate gen.zip > hup.out 2> hup.err &
pid=$!
for _ in $(seq 1 3000); do grep -q "test pause at extract" hup.err 2> /dev/null && break; sleep 0.01; done
kill -HUP $pid; wait $pid; rc=$?
[[ $rc == 129 ]] || fail "SIGHUP mid-extraction: exit $rc ($(cat hup.err))"
leftover "SIGHUP mid-extraction"

if [[ $failures -gt 0 ]]; then echo "$failures failure(s)"; exit 1; fi
echo "cli_validate: all passed"
