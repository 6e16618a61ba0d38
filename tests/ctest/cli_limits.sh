#!/usr/bin/env bash
# Limits and interrupts (issue 13 items 4, 5, 6, 9; docs/promises.md):
# jobs past the budget are refused with the estimate and what to change;
# SIGTERM stops a build in progress (inspect included); inputs must be
# regular files under a cap (no FIFO wait, no /dev/zero read); messages
# stay one bounded line.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"

# --- budget (item 5): refused from the estimate, nothing built.
# `timeout` turns a build that runs away into a failure instead of a hang.
# (4,096 micro-batches, ~18M nodes, now fit the 8 GiB by the counted
# estimate: 16,384 are over it by a factor of 4 even on the quick one.)
timeout -k 10 60 "$CLI" inspect --model llama3-70b --dp 1 --seq-len 8192 --global-batch-size 16384 > /dev/null 2> big.err; rc=$?
[[ $rc == 1 ]] || fail "70B x 16384 micro-batches: exit $rc"
grep -q "training.global_batch_size: this job needs about [0-9]* trace nodes (16384 micro-batches x 80 layers) and [0-9.]* GiB of memory to build, over the budget of 8.0 GiB.*micro_batch_size.*\[too_large\]" big.err \
  || fail "budget message: $(cat big.err)"
timeout -k 10 60 "$CLI" generate --model llama3-70b --dp 1 --seq-len 8192 --global-batch-size 100000000 -o huge > /dev/null 2> huge.err; rc=$?
[[ $rc == 1 ]] && grep -q "100000000 micro-batches.*\[too_large\]" huge.err || fail "global batch 1e8: exit $rc: $(cat huge.err)"
[[ -e huge ]] && fail "a refused job left huge/"
# --allow-large does not make an impossible job possible: still refused.
timeout -k 10 60 "$CLI" inspect --model llama3-70b --dp 1 --seq-len 8192 --global-batch-size 100000000 --allow-large > /dev/null 2> huge2.err; rc=$?
[[ $rc == 1 ]] && grep -q "too_large" huge2.err || fail "--allow-large 1e8: exit $rc: $(cat huge2.err)"
# 2^20 ranks: the output estimate (~60 GB) is refused before the build.
timeout -k 10 60 "$CLI" generate --model gpt3-1.7b --layers 2 --seq-len 256 --dp 1048576 --global-batch-size 1048576 -o wide > /dev/null 2> wide.err; rc=$?
[[ $rc == 1 ]] || fail "1M ranks: exit $rc"
grep -q "^stagecraft generate: error: -o: this export would write about [0-9.]* GiB (1048576 ranks x .*over the budget of 8.0 GiB. Write a subset with --ranks.*\[too_large\]" wide.err \
  || fail "output budget message: $(cat wide.err)"
[[ -e wide ]] && fail "a refused export left wide/"
# The --ranks example is as many ranks as fit the budget: its count times
# the per-rank size stays under it (it named 1,024 ranks whatever their
# size: for a 1,024-rank job, every rank again).
timeout -k 10 120 "$CLI" generate --model gpt3-175b --tp 8 --pp 8 --dp 16 --sequence-parallel --seq-len 2048 \
  --global-batch-size 1536 -o g175 > /dev/null 2> g175.err; rc=$?
[[ $rc == 1 ]] || fail "gpt3-175b on 1,024 ranks: exit $rc"
python3 - g175.err <<'PY' || fail "the --ranks example: $(cat g175.err)"
import re, sys
m = open(sys.argv[1]).read()
n = int(re.search(r"\((\d+) ranks x ([0-9.]+) MiB of trace each", m).group(1))
per = float(re.search(r"ranks x ([0-9.]+) MiB", m).group(1))
last = int(re.search(r"--ranks 0-(\d+): (\d+) ranks fit", m).group(1))
assert n == 1024 and 0 < last + 1 < n and (last + 1) * per <= 8 * 1024 * 1.01, (n, per, last)
PY
[[ -e g175 ]] && fail "a refused export left g175/"
# ... and a subset of the same job is fine.
"$CLI" generate --model gpt3-1.7b --layers 2 --seq-len 256 --dp 1048576 --global-batch-size 1048576 --ranks 0-1 -q -o wide_part 2> part.err \
  || fail "1M ranks, --ranks 0-1: $(cat part.err)"

# generate's own memory (issue 24 item 4): the build plus the exporter's
# templates and buffers (api/budget.h generate_bytes). One 913 MB rank
# (4,096 micro-batches of a 24-layer GPT): the build (1.9 GB estimated) and
# the output (0.9 GB) are within their budgets, but encoding it into an
# archive holds the template, its transients and the archive's buffers
# (9.3 GB estimated): refused before the build, where the old binary built
# it and wrote the archive.
timeout -k 10 120 "$CLI" generate --model gpt3-1.7b --layers 24 --seq-len 256 --global-batch-size 6144 --threads 1 \
  -o mem.tar.gz > /dev/null 2> mem.err; rc=$?
[[ $rc == 1 ]] || fail "one 913 MB rank into an archive: exit $rc"
grep -q "^stagecraft generate: error: -o: writing 1 ranks needs about [0-9.]* GiB of memory (the build and the exporter's templates and buffers, counted with 1 threads), over the budget of 8.0 GiB. Use a directory instead of an archive, fewer --threads.*\[too_large\]$" mem.err \
  || fail "generate memory message: $(cat mem.err)"
compgen -G "mem.tar.gz*" > /dev/null && fail "a refused export left mem.tar.gz"

# The seed's headline (issue 24): 32,768 ranks of Llama-3-70B (tp 8, pp 8,
# dp 512, 2 micro-batches) write 4.5 GB and must pass the default 8 GiB
# budget (the quick estimate from the numbers alone says 19.8 GiB; the
# counted one 4.7 GB, docs/promises.md "Budgets"). Held at the first trace and stopped there, so the
# test writes one trace, not 5 GB: exit 143 means the budget let it
# through (the old binary refused it with exit 1).
STAGECRAFT_TEST_PAUSE=rank timeout -k 10 120 "$CLI" generate --model llama3-70b --tp 8 --pp 8 --dp 512 --seq-len 8192 \
  --global-batch-size 1024 -q -o big70 2> big70.err &
pid=$!
for _ in $(seq 1 6000); do grep -q "test pause at rank" big70.err 2>/dev/null && break; sleep 0.01; done
kill -TERM $pid; wait $pid; rc=$?
[[ $rc == 143 ]] || fail "32,768-rank Llama-3-70B export: exit $rc (1: refused by the budget): $(cat big70.err)"
compgen -G "big70*" | grep -v '\.err$' && fail "the stopped export left files"
# Twice the ranks is over the budget however it is counted (~10.7 GB).
timeout -k 10 60 "$CLI" generate --model llama3-70b --tp 8 --pp 8 --dp 1024 --seq-len 8192 --global-batch-size 2048 -q -o big70b 2> big70b.err; rc=$?
[[ $rc == 1 ]] && grep -q "this export would write about .*\[too_large\]" big70b.err || fail "65,536-rank Llama-3-70B: exit $rc: $(cat big70b.err)"

# --- simulate --exhaustive (issue 24 D7): every rank's state at once is
# checked against the memory budget before the work. 131,072 ranks of a
# 2-layer GPT (~98 GiB estimated) are refused at once with the estimate and
# what to change (the old binary ran out of memory under this limit and
# said "out of memory reading the input"); 2,048 ranks run.
(ulimit -v 4000000; exec timeout -k 5 120 "$CLI" simulate --model gpt3-1.7b --layers 2 --seq-len 256 --tp 2 --dp 65536 \
  --global-batch-size 131072 --exhaustive > /dev/null 2> exh.err); rc=$?
[[ $rc == 1 ]] || fail "exhaustive 131072 ranks: exit $rc"
grep -q "^stagecraft simulate: error: --exhaustive: simulating every one of the 131072 ranks needs about [0-9.]* GiB of memory ([0-9]* nodes per rank, largest group 65536), over the budget of 8.0 GiB. Drop --exhaustive.*\[too_large\]$" exh.err \
  || fail "exhaustive budget message: $(head -c 400 exh.err)"
"$CLI" simulate --model gpt3-1.7b --layers 2 --seq-len 256 --tp 2 --dp 1024 --global-batch-size 2048 --exhaustive > exh_ok.out 2>&1 \
  || fail "exhaustive 2048 ranks refused: $(cat exh_ok.out)"

# --- cancellation (item 4): a signal while the job is being built stops
# the build (inspect had no handler; generate ignored it while building).
# The "build" pause holds the CLI just before Generator::create until the
# signal has arrived, so the build starts with the cancel pending.
for cmd in inspect generate simulate; do
  extra=(); [[ $cmd == generate ]] && extra=(-o cancelled_out)
  STAGECRAFT_TEST_PAUSE=build "$CLI" $cmd --model gpt3-1.7b --layers 2 --seq-len 256 "${extra[@]}" > /dev/null 2> $cmd.err &
  pid=$!
  for _ in $(seq 1 3000); do grep -q "test pause at build" $cmd.err 2>/dev/null && break; sleep 0.01; done
  kill -TERM $pid; wait $pid; rc=$?
  [[ $rc == 143 ]] || fail "$cmd: SIGTERM during the build: exit $rc"
  grep -q "^stagecraft $cmd: interrupted by SIGTERM (cancelled during the graph build)" $cmd.err || fail "$cmd cancel message: $(cat $cmd.err)"
done
[[ -e cancelled_out ]] && fail "a cancelled generate left output"
# simulate interrupted in its simulation (after the build) says so too
# (it used to exit by the signal with nothing on stderr).
# (2,048 ranks at once: about 25 s of work here, so the signal at 2 s
# lands in the build or the simulation on any machine.)
env --default-signal=INT "$CLI" simulate --model gpt3-175b --tp 8 --pp 8 --dp 32 --sequence-parallel --seq-len 2048 \
  --global-batch-size 3072 --exhaustive > /dev/null 2> simint.err &
pid=$!
sleep 2; kill -INT $pid; wait $pid; rc=$?
[[ $rc == 130 ]] && grep -q "^stagecraft simulate: interrupted by SIGINT (cancelled during the" simint.err \
  || fail "simulate SIGINT: exit $rc: $(cat simint.err)"

# --- inputs (item 6): regular files only, capped; never wait on a FIFO.
timeout -k 5 20 "$CLI" inspect --config /dev/zero > /dev/null 2> zero.err; rc=$?
[[ $rc == 1 ]] && grep -q "^stagecraft inspect: error: /dev/zero: is not a regular file" zero.err || fail "--config /dev/zero: exit $rc: $(cat zero.err)"
head -c $((33 << 20)) /dev/zero | tr '\0' ' ' > big.json
timeout -k 5 20 "$CLI" inspect --config big.json > /dev/null 2> bigjson.err; rc=$?
[[ $rc == 1 ]] && grep -q "big.json: is 34603008 bytes; the limit for this input is 33554432" bigjson.err || fail "33 MiB job: exit $rc: $(cat bigjson.err)"
rm -f big.json
timeout -k 5 20 "$CLI" dump /dev/urandom > /dev/null 2> urandom.err; rc=$?
[[ $rc == 1 ]] && grep -q "/dev/urandom: is not a regular file" urandom.err || fail "dump /dev/urandom: exit $rc: $(cat urandom.err)"
"$CLI" generate --model gpt3-1.7b --layers 1 --tp 2 --seq-len 256 -q -o fifo || fail "generate fifo/"
rm fifo/trace.1.et && mkfifo fifo/trace.1.et
timeout -k 5 20 "$CLI" validate fifo > fifo_v.out 2>&1; rc=$?
[[ $rc == 1 ]] || fail "validate with a FIFO trace: exit $rc (124 = it blocked)"
grep -q "trace.1.et: is not a regular file" fifo_v.out || fail "validate FIFO message: $(cat fifo_v.out)"
timeout -k 5 20 "$CLI" replay fifo > fifo_r.out 2>&1; rc=$?
[[ $rc == 1 ]] || fail "replay with a FIFO trace: exit $rc (124 = it blocked)"
grep -q "trace.1.et: is not a regular file" fifo_r.out || fail "replay FIFO message: $(cat fifo_r.out)"
rm fifo/trace.1.et && cp fifo/trace.0.et fifo/trace.1.et && rm fifo/comm_groups.json && ln -s /dev/zero fifo/comm_groups.json
timeout -k 5 20 "$CLI" validate fifo > zero_g.out 2>&1; rc=$?
[[ $rc == 1 ]] && grep -q "comm_groups.json: is not a regular file" zero_g.out || fail "validate /dev/zero groups: exit $rc: $(cat zero_g.out | head -5)"

# --- messages (item 9): bounded, no library-internal text.
python3 -c "import sys; sys.stdout.write('{\"model\": \"gpt3-1.7b\", \"parallel\": {\"' + 'k' * (3 << 20) + '\": 1}}')" > longkey.json
"$CLI" inspect --config longkey.json > /dev/null 2> longkey.err; rc=$?
[[ $rc == 1 ]] || fail "3 MB key: exit $rc"
(( $(wc -c < longkey.err) < 3000 )) || fail "3 MB key: a $(wc -c < longkey.err)-byte message"
grep -q "parallel.kkkk.*(3145728 bytes): unknown key.*\[unknown_field\]" longkey.err || fail "long key message: $(head -c 300 longkey.err)"
echo '{"model": "gpt3-1.7b", "training": {"dp_bucket_mb": 1e400}}' > e400.json
"$CLI" inspect --config e400.json > /dev/null 2> e400.err
grep -q "json.exception" e400.err && fail "1e400 leaks the JSON library's text: $(cat e400.err)"
grep -q "number 1e400 is out of range" e400.err || fail "1e400 message: $(cat e400.err)"
"$CLI" generate --model gpt3-1.7b "--$(printf 'x%.0s' $(seq 1 5000))" -o x > /dev/null 2> flag.err
(( $(wc -c < flag.err) < 3000 )) || fail "a 5000-char flag gives a $(wc -c < flag.err)-byte message"

# Out of memory while reading input (a 37 MB group file of 2M groups under
# a 400 MB address-space limit): a clean error, never an abort (the JSON
# tree's destructor used to abort), and no "try a smaller job" advice
# where there is no job.
python3 -c "import json; open('fifo/comm_groups.json.new','w').write(json.dumps({str(i): [0, 1] for i in range(1, 2000000)}))"
rm -f fifo/comm_groups.json && mv fifo/comm_groups.json.new fifo/comm_groups.json
(ulimit -v 400000; exec "$CLI" validate fifo > oom.out 2> oom.err); rc=$?
[[ $rc == 1 ]] || fail "validate under a memory limit: exit $rc: $(head -c 300 oom.err)"
grep -q "smaller job" oom.err && fail "validate's out-of-memory message talks about a job: $(cat oom.err)"
grep -q "out of memory" oom.err && { grep -q "^stagecraft validate: error: out of memory reading the input$" oom.err || fail "oom message: $(cat oom.err)"; }

# Out of memory in plan (issue 24 D5): deepseek-v3 on 16,384 GPUs holds
# about 1.9 GiB of layout records, over a 1.2 GB address-space limit. With
# --time-limit a watch thread runs beside the search; the search's
# std::bad_alloc unwound past it and std::terminate aborted (exit 134,
# "terminate called without an active exception"). Now: one line naming
# the phase, exit 1 (core/base/workers.h).
(ulimit -v 1200000; exec timeout -k 5 120 "$CLI" plan --model deepseek-v3 --gpus 16384 --seq-len 4096 \
  --global-batch-size 15360 --time-limit 30 > planoom.out 2> planoom.err); rc=$?
[[ $rc == 1 ]] || fail "plan under a memory limit: exit $rc: $(head -c 300 planoom.err)"
grep -q "^stagecraft plan: error: out of memory .*enumerating layouts" planoom.err \
  || fail "plan oom message: $(head -c 300 planoom.err)"
grep -q "terminate" planoom.err && fail "plan oom: $(head -c 300 planoom.err)"
# A search too large for the budget is refused before any work, naming the
# count and the estimate (deepseek-v3 on 24,576 GPUs: ~10.9M layouts).
timeout -k 5 60 "$CLI" plan --model deepseek-v3 --gpus 24576 --seq-len 4096 --global-batch-size 61440 \
  > planbig.out 2> planbig.err; rc=$?
[[ $rc == 1 ]] && grep -q "^stagecraft plan: error: gpus: the search over [0-9]* layouts would hold about [0-9.]* GiB (budget 4.0 GiB).*\[too_large\]$" planbig.err \
  || fail "plan over the budget: exit $rc: $(head -c 300 planbig.err)"

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
