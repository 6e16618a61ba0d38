#!/usr/bin/env bash
# Issue 16's acceptance: Llama-3-70B served on 8 H100 with tp 8 — inspect
# prints KV bytes per token (80 layers x K,V x 8 kv heads x 128 x 2 B =
# 327,680, by hand), how many 8K-token sequences fit, TTFT and TPOT;
# generate writes prefill/, decode/ and mixed/ traces that validate and
# replay; DeepSeek-V3 with wide EP and disaggregated pools works the same
# way; the concurrency sweep and the errors name their fields; serving
# archives (zip, tar.gz, --ranks, --prefix, --force, interrupts) and the
# KV transfer's bytes per pair by hand.
# Outputs go to files before grep -q: `cmd | grep -q` under pipefail fails
# when grep exits at its match and the writer, still writing, gets SIGPIPE.
set -euo pipefail
cli=${STAGECRAFT_CLI:?}
out=$(mktemp -d)
# A background export still running when the script ends (an early exit
# under set -e) must not write into "$out" while it is being removed.
# Only the script's own shell cleans up (lib/common.bash says why: a forked
# child killed before it execs runs this trap too).
trap 'if [[ $BASHPID == $$ ]]; then jobs -p | xargs -r kill -KILL 2>/dev/null; wait 2>/dev/null; rm -rf "$out"; fi' EXIT
cat >"$out/serve.json" <<'J'
{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
 "serving": {"prompt_tokens": 8000, "output_tokens": 192}}
J
"$cli" inspect --config "$out/serve.json" | tee "$out/inspect.txt"
grep -q '^kv cache    327,680 bytes per token' "$out/inspect.txt"
grep -Eq '^fit         [0-9,]+ sequences of 8192 tokens fit' "$out/inspect.txt"
grep -Eq '^ttft        [0-9.]+ ms' "$out/inspect.txt"
grep -Eq '^tpot        [0-9.]+ ms' "$out/inspect.txt"
grep -Eq '^itl         [0-9.]+ ms' "$out/inspect.txt"
# The fit, by hand: per rank 8192 tokens x 40,960 B per sequence beside
# 17,640,734,720 B of weights (70.55 B parameters, matrices over tp 8) in the
# h100 profile's 85,017,493,504 B (what CUDA reports on an H100 80GB).
fit=$(sed -n 's/^fit         \([0-9,]*\) sequences.*/\1/p' "$out/inspect.txt" | tr -d ,)
max=$(( (85017493504 - 17640734720) / (8192 * 40960) ))
[ "$fit" -le "$max" ] && [ "$fit" -ge $((max - 5)) ] || { echo "fit $fit, expected just under $max"; exit 1; }

"$cli" generate --config "$out/serve.json" -o "$out/llama" -q
for k in prefill decode mixed; do
  [ "$(ls "$out/llama/$k"/trace.*.et | wc -l)" -eq 8 ] || { echo "$k: expected 8 traces"; exit 1; }
  [ -f "$out/llama/$k/comm_groups.json" ]
  "$cli" validate "$out/llama/$k" >/dev/null
  "$cli" replay "$out/llama/$k" >"$out/replay.txt"; grep -q '^completed: 8 ranks' "$out/replay.txt"
done
grep -q '"kv_cache_bytes_per_token": 327680' "$out/llama/summary.json"
# The whole export validates; with a part gone it does not (summary.json
# says which parts the job has).
"$cli" validate "$out/llama" >"$out/val.txt"
grep -q '^all 3 parts valid' "$out/val.txt"
cp -r "$out/llama" "$out/llama-cut"
rm -rf "$out/llama-cut/mixed"
if "$cli" validate "$out/llama-cut" >/dev/null 2>"$out/err.txt"; then echo "validated an export without mixed/"; exit 1; fi
grep -q 'missing mixed/' "$out/err.txt"
"$cli" validate "$out/llama-cut" --json >"$out/val.json" || true
python3 -c "import json,sys; v=json.load(open(sys.argv[1])); assert v['valid'] is False and v['missing'] == ['mixed'], v" "$out/val.json"
rm -rf "$out/llama-cut"

# A hybrid model (Nemotron-H 8B): its 24 Mamba-2 layers keep a fixed state
# per sequence, by hand 24 x ((8192 + 2 x 8 x 128) x 3 + 128 x 64 x 128) x 2 B
# (docs/inference.md, "Hybrid models"), beside 4 attention layers' KV.
cat >"$out/nemo.json" <<'J'
{"mode": "inference", "model": "nemotron-h-8b", "parallel": {"tp": 1}, "hardware": "h100",
 "serving": {"prompt_tokens": 4000, "output_tokens": 500}}
J
"$cli" inspect --config "$out/nemo.json" >"$out/nemo.txt"
grep -q '^kv cache    16,384 bytes per token' "$out/nemo.txt"
grep -q '^mamba state 51,806,208 bytes per sequence' "$out/nemo.txt"

# DeepSeek-V3: DP attention with wide EP, disaggregated pools (61 x (512 + 64) x 2 B = 70,272 per token).
cat >"$out/ds.json" <<'J'
{"mode": "inference", "model": "deepseek-v3", "parallel": {"dp": 32, "ep": 32},
 "serving": {"prompt_tokens": 2000, "output_tokens": 500, "weights_dtype": "fp8",
   "disaggregated": {"prefill": {"dp": 16, "ep": 16, "replicas": 2}, "decode": {"dp": 32, "ep": 32}}}}
J
"$cli" inspect --config "$out/ds.json" | tee "$out/ds.txt"
grep -q '^kv cache    70,272 bytes per token' "$out/ds.txt"
# The pools' expert layout is on the serving line (prefill ep 16 x 2 replicas, decode ep 32), not the job's parallel block's.
grep -q 'disaggregated pools (prefill tp 1 dp 16 ep 16 x 2 replicas, decode tp 1 dp 32 ep 32)' "$out/ds.txt"
if grep -q 'experts: ep' "$out/ds.txt"; then echo "an experts line beside disaggregated pools"; exit 1; fi
"$cli" generate --config "$out/ds.json" -o "$out/ds" -q
[ "$(ls "$out/ds/prefill"/trace.*.et | wc -l)" -eq 16 ]
[ "$(ls "$out/ds/decode"/trace.*.et | wc -l)" -eq 32 ]
[ ! -e "$out/ds/mixed" ]
"$cli" replay "$out/ds/decode" >"$out/replay.txt"; grep -q '^completed: 32 ranks' "$out/replay.txt"
"$cli" replay "$out/ds/prefill" >"$out/replay.txt"; grep -q '^completed: 16 ranks' "$out/replay.txt"
# The KV cache moves from the 16 prefill ranks to the 32 decode ranks as send/recv.
[ "$(ls "$out/ds/kv_transfer"/trace.*.et | wc -l)" -eq 48 ]
"$cli" validate "$out/ds/kv_transfer" >/dev/null
"$cli" replay "$out/ds/kv_transfer" >"$out/replay.txt"; grep -q '^completed: 48 ranks' "$out/replay.txt"
# Serving archives (docs/export.md, "Inference jobs"): one archive holds
# every part's folder; zip and tar.gz are deterministic and hold the
# directory export's files byte for byte plus, per folder, astra-sim/ and a
# manifest.json (and one on top); --ranks shards merge into the full
# export; --prefix, --force and an interrupted export behave as for training.
# Llama 3 8B cut to 4 layers, pools prefill tp 4 pp 2 (8 ranks) and decode
# tp 2 dp 2 (4 ranks): kv_transfer/ has 12.
cat >"$out/dis.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 2},
 "serving": {"prompt_tokens": 1000, "output_tokens": 200, "concurrency": 2,
   "disaggregated": {"prefill": {"tp": 4, "pp": 2, "dp": 1}, "decode": {"tp": 2, "pp": 1, "dp": 2}}}}
J
cat >"$out/col.json" <<'J'
{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 2, "pp": 2},
 "serving": {"prompt_tokens": 1000, "output_tokens": 200, "concurrency": 8, "chunk_tokens": 256}}
J
for job in dis col; do
  d="$out/$job"
  "$cli" generate --config "$out/$job.json" -o "$d.dir" -q
  for fmt in zip tar.gz; do
    "$cli" generate --config "$out/$job.json" -o "$d.a.$fmt" -q
    "$cli" generate --config "$out/$job.json" -o "$d.b.$fmt" -q --threads 3
    cmp "$d.a.$fmt" "$d.b.$fmt" || { echo "$job: two $fmt archives of one job differ"; exit 1; }
    mkdir "$d.x.$fmt"
    if [ "$fmt" = zip ]; then (cd "$d.x.$fmt" && unzip -q "../$job.a.zip"); else tar xzf "$d.a.$fmt" -C "$d.x.$fmt"; fi
    # Every file of the directory export, byte for byte; besides them only
    # astra-sim/ and manifest.json, in every folder and on top.
    (cd "$d.dir" && find . -type f | sort) >"$d.files"
    while read -r f; do cmp "$d.dir/$f" "$d.x.$fmt/$f" || { echo "$job $fmt: $f differs"; exit 1; }; done <"$d.files"
    extra=$(cd "$d.x.$fmt" && find . -type f | sort | comm -23 - "$d.files" | grep -Ev '^\./([a-z_]+/)?(astra-sim/(network.yml|system.json|remote_memory.json|run.sh)|manifest.json)$' || true)
    [ -z "$extra" ] || { echo "$job $fmt: unexpected members: $extra"; exit 1; }
    python3 - "$d.x.$fmt" "$job" <<'PY'
import hashlib, json, os, sys
root, job = sys.argv[1], sys.argv[2]
parts = ["prefill", "decode", "kv_transfer"] if job == "dis" else ["prefill", "decode", "mixed"]
worlds = {"prefill": 8, "decode": 4, "kv_transfer": 12} if job == "dis" else {p: 4 for p in parts}
def check(folder):
    m = json.load(open(os.path.join(folder, "manifest.json")))
    for f in m["files"]:
        b = open(os.path.join(folder, f["name"]), "rb").read()
        assert len(b) == f["bytes"] and hashlib.sha256(b).hexdigest() == f["sha256"], (folder, f["name"])
    return m
top = check(root)
assert [p["name"] for p in top["inference_iterations"]] == parts, top["inference_iterations"]
assert top["ranks"] == "all" and top["job"]["mode"] == "inference"
names = [f["name"] for f in top["files"]]
assert names[0] == "prefill/comm_groups.json" and names[-1] == "summary.json", names
for p in parts:
    assert p + "/manifest.json" in names
    m = check(os.path.join(root, p))
    assert m["inference_iteration"] == p and m["world_size"] == worlds[p] and m["ranks"] == "all", (p, m["world_size"])
    assert m["config_hash"] == top["config_hash"]
    traces = [f for f in os.listdir(os.path.join(root, p)) if f.endswith(".et")]
    assert len(traces) == worlds[p], (p, len(traces))
    # Each folder is a workload of its own: its run.sh names its own world.
    assert "npus_count: [ %d ]" % worlds[p] in open(os.path.join(root, p, "astra-sim/network.yml")).read()
PY
    for p in prefill decode; do "$cli" validate "$d.x.$fmt/$p" >/dev/null; done
  done
  # --ranks: rank numbers of every part's own world; shards merge into the full export.
  "$cli" generate --config "$out/$job.json" -o "$d.s1" -q --ranks 0,2-3
  "$cli" generate --config "$out/$job.json" -o "$d.s2.zip" -q --ranks 1
  "$cli" generate --config "$out/$job.json" -o "$d.s3.tar.gz" -q --ranks "$([ "$job" = dis ] && echo 4-11,11 || echo 3)"
  mkdir "$d.m" "$d.s2" "$d.s3"
  (cd "$d.s2" && unzip -q "../$job.s2.zip")
  tar xzf "$d.s3.tar.gz" -C "$d.s3"
  [ "$(ls "$d.s1/decode" | grep -c '\.et$')" -eq 3 ] || { echo "$job: --ranks 0,2-3 wrote $(ls "$d.s1/decode")"; exit 1; }
  [ "$(ls "$d.s2/prefill" | grep -c '\.et$')" -eq 1 ] || { echo "$job: --ranks 1 wrote $(ls "$d.s2/prefill")"; exit 1; }
  grep -q '"ranks": "1"' "$d.s2/decode/manifest.json"
  cp -r "$d.s1/." "$d.m/"
  for s in s2 s3; do (cd "$d.$s" && find . -name '*.et' -exec cp --parents {} "$d.m/" \;); done
  diff -r "$d.dir" "$d.m" || { echo "$job: merged --ranks shards differ from the full export"; exit 1; }
done
# A shard past a part's world holds none of its traces, and says so.
grep -q '"ranks": "none"' "$out/dis.s3/decode/manifest.json"
grep -q '"ranks": "4-11"' "$out/dis.s3/kv_transfer/manifest.json"
[ "$(ls "$out/dis.s3/kv_transfer" | grep -c '\.et$')" -eq 8 ]
if "$cli" generate --config "$out/dis.json" -o "$out/bad" --ranks 12 2>"$out/err.txt"; then echo "--ranks 12 accepted"; exit 1; fi
grep -q -- '--ranks: rank 12 is outside 0..11' "$out/err.txt"
if "$cli" generate --config "$out/col.json" -o "$out/bad" --ranks 4 2>"$out/err.txt"; then echo "--ranks 4 accepted"; exit 1; fi
grep -q -- '--ranks: rank 4 is outside 0..3' "$out/err.txt"
[ ! -e "$out/bad" ]

# The KV transfer's bytes per pair (serve/kv_transfer.h), by hand: prefill
# (tp t, stage s) holds KV heads 2t, 2t+1 of layers 2s, 2s+1; decode tp t'
# holds heads 4t'..4t'+3 of all layers: each of the 8 prefill ranks sends
# one decode rank 2 layers x 2 heads x 1,008 tokens x 2 x 128 x 2 B = 2,064,384 B.
for r in 0 1 2 3 4 5 6 7; do
  "$cli" dump "$out/dis.dir/kv_transfer/trace.$r.et" | grep -c 'COMM_SEND_NODE.*comm_size=2064384$' | grep -qx 1 ||
    { echo "prefill rank $r: $("$cli" dump "$out/dis.dir/kv_transfer/trace.$r.et")"; exit 1; }
done
recv=$(for r in 8 9 10 11; do "$cli" dump "$out/dis.dir/kv_transfer/trace.$r.et"; done | grep -c 'COMM_RECV_NODE.*comm_size=2064384$')
[ "$recv" -eq 8 ] || { echo "decode ranks receive $recv pairs, expected 8"; exit 1; }
"$cli" replay "$out/dis.x.zip/kv_transfer" >"$out/replay.txt"; grep -q '^completed: 12 ranks' "$out/replay.txt"

# --prefix names every folder's traces; --force replaces a previous serving
# export (directory or archive) but nothing else.
"$cli" generate --config "$out/dis.json" -o "$out/dis.p.zip" -q --prefix wl
unzip -l "$out/dis.p.zip" >"$out/list.txt"
grep -q ' kv_transfer/wl\.11\.et$' "$out/list.txt"
"$cli" generate --config "$out/dis.json" -o "$out/dis.dir" -q --force
"$cli" generate --config "$out/dis.json" -o "$out/dis.a.zip" -q --force
cmp "$out/dis.a.zip" "$out/dis.b.zip"
if "$cli" generate --config "$out/dis.json" -o "$out/dis.dir" -q 2>"$out/err.txt"; then echo "replaced without --force"; exit 1; fi
echo note >"$out/dis.dir/decode/notes.txt"
if "$cli" generate --config "$out/dis.json" -o "$out/dis.dir" -q --force 2>"$out/err.txt"; then echo "--force replaced a stranger"; exit 1; fi
grep -q "holds 'decode/notes.txt'" "$out/err.txt"
# Interrupted after the first trace: nothing left, exit by SIGTERM.
for fmt in zip dir; do
  o="$out/int.$fmt"; [ "$fmt" = dir ] && o="$out/int"
  set +e
  # One stderr file per run: with a shared one the wait below could see the
  # previous run's pause line before this run's redirection truncates it.
  perr="$out/pause.$fmt.err"
  STAGECRAFT_TEST_PAUSE=rank "$cli" generate --config "$out/dis.json" -o "$o" -q 2>"$perr" &
  pid=$!
  # Up to the pause's own 60 s (a loaded machine can take more than 10 s to
  # get there); a run that never pauses fails here, not in a later check.
  paused=0
  for _ in $(seq 1200); do grep -q "test pause at rank" "$perr" 2>/dev/null && { paused=1; break; }; sleep 0.05; done
  [ "$paused" = 1 ] || { echo "interrupted $fmt export: never paused: $(cat "$perr")"; exit 1; }
  kill -TERM "$pid"; wait "$pid"; rc=$?
  set -e
  [ "$rc" -eq 143 ] || { echo "interrupted $fmt export: exit $rc"; exit 1; }
  [ -z "$(ls -d "$o"* 2>/dev/null)" ] || { echo "interrupted $fmt export left $(ls -d "$o"*)"; exit 1; }
done


# The sweep: one row per concurrency.
"$cli" simulate --config "$out/serve.json" --sweep-concurrency 1,8,64 | tee "$out/sweep.txt"
[ "$(grep -cE '^ +(1|8|64) ' "$out/sweep.txt")" -eq 3 ]
"$cli" simulate --config "$out/serve.json" --sweep-concurrency 1,8 --json >"$out/sweep.json"
grep -q '"tpot_seconds"' "$out/sweep.json"

# Errors name the field.
echo '{"mode": "inference", "model": "llama3-70b", "training": {"seq_len": 4096}}' >"$out/bad.json"
if "$cli" inspect --config "$out/bad.json" 2>"$out/err.txt"; then echo "accepted a training field"; exit 1; fi
grep -q 'training.seq_len' "$out/err.txt"
echo '{"mode": "inference", "model": "llama3-70b"}' >"$out/big.json"
if "$cli" inspect --config "$out/big.json" 2>"$out/err.txt"; then echo "70B in bf16 on one H100 fit"; exit 1; fi
grep -q 'parallel.tp: the model does not fit even at one sequence' "$out/err.txt"
grep -q 'short by' "$out/err.txt"
echo '{"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "serving": {"prompt_tokens": 8000, "output_tokens": 500}}' >"$out/long.json"
if "$cli" inspect --config "$out/long.json" 2>"$out/err.txt"; then echo "accepted 8500 tokens on an 8192 context"; exit 1; fi
grep -q 'serving.prompt_tokens' "$out/err.txt"
# MoE with attention tp (Mixtral 8x7B at tp 2): expert tp 2 (the default) and
# ep 2 over the same ranks both serve; their traces validate and replay, with
# one all-reduce per attention and per MoE layer and no all-to-all.
for par in '{"tp": 2}' '{"tp": 2, "ep": 2}'; do
  echo '{"mode": "inference", "model": {"preset": "mixtral-8x7b", "num_layers": 2}, "parallel": '"$par"',
   "serving": {"prompt_tokens": 256, "output_tokens": 64, "concurrency": 8}}' >"$out/moe_tp.json"
  "$cli" inspect --config "$out/moe_tp.json" >/dev/null
  rm -rf "$out/moe"
  "$cli" generate --config "$out/moe_tp.json" -o "$out/moe" -q
  for k in prefill decode mixed; do
    "$cli" validate "$out/moe/$k" >/dev/null
    "$cli" replay "$out/moe/$k" >"$out/replay.txt"; grep -q '^completed: 2 ranks' "$out/replay.txt"
  done
done
# Experts over more ranks than tp: refused, naming ep and the layout to use instead.
echo '{"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 2, "dp": 2, "ep": 4}}' >"$out/moe_wide.json"
if "$cli" inspect --config "$out/moe_wide.json" 2>"$out/err.txt"; then echo "accepted ep 4 over tp 2"; exit 1; fi
grep -q 'parallel.ep: a mixture-of-experts model at tp 2' "$out/err.txt"
grep -q '"tp": 1, "dp": 4, "ep": 4' "$out/err.txt"
echo '{"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 1, "dp": 4, "ep": 4}}' >"$out/moe_dp.json"
"$cli" inspect --config "$out/moe_dp.json" >/dev/null
# Two-batch overlap (docs/inference.md, "Two-batch overlap"): DeepSeek-V3
# cut to 5 layers (3 dense, 2 MoE), DP attention 8 x ep 8; inspect says
# so, the three iterations' traces validate and replay; a dense model is
# refused, naming the field.
cat >"$out/tbo.json" <<'J'
{"mode": "inference", "model": {"preset": "deepseek-v3", "num_layers": 5}, "parallel": {"dp": 8, "ep": 8},
 "serving": {"prompt_tokens": 1024, "output_tokens": 64, "concurrency": 32, "weights_dtype": "fp8",
   "two_batch_overlap": true}}
J
"$cli" inspect --config "$out/tbo.json" >"$out/tbo.txt"
grep -q '^serving .*, two-batch overlap (two micro-batches of half the tokens)$' "$out/tbo.txt"
"$cli" generate --config "$out/tbo.json" -o "$out/tbo" -q
for k in prefill decode mixed; do
  "$cli" validate "$out/tbo/$k" >/dev/null
  "$cli" replay "$out/tbo/$k" >"$out/replay.txt"; grep -q '^completed: 8 ranks' "$out/replay.txt"
done
echo '{"mode": "inference", "model": "llama3-8b", "parallel": {"dp": 2}, "serving": {"two_batch_overlap": true}}' >"$out/tbo_dense.json"
if "$cli" inspect --config "$out/tbo_dense.json" 2>"$out/err.txt"; then echo "accepted two-batch overlap on a dense model"; exit 1; fi
grep -q 'serving.two_batch_overlap: needs a mixture-of-experts model' "$out/err.txt"
# A request mix: inspect and generate (the longest prompt's prefill) work, the traces validate.
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 1000, "output_tokens": 100, "weight": 3},
  {"prompt_tokens": 3000, "output_tokens": 300}], "concurrency": 8, "chunk_tokens": 512}}' >"$out/mix.json"
"$cli" inspect --config "$out/mix.json" >"$out/mix.txt"
grep -q '^requests    a mix of 2 classes: 1000 + 100 (75%' "$out/mix.txt"
grep -Eq '^fit         [0-9,]+ sequences of the mix fit' "$out/mix.txt"
"$cli" generate --config "$out/mix.json" -o "$out/mix" -q
for k in prefill decode mixed; do "$cli" validate "$out/mix/$k" >/dev/null; done
grep -q '"requests"' "$out/mix/summary.json"
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"prompt_tokens": 10, "requests": [{"prompt_tokens": 1, "output_tokens": 1}]}}' >"$out/mixbad.json"
if "$cli" inspect --config "$out/mixbad.json" 2>"$out/err.txt"; then echo "accepted requests with prompt_tokens"; exit 1; fi
grep -q 'serving.requests' "$out/err.txt"
# "As many as fit" past the instance's cap (tiny sequences, dp 4): the
# concurrency is the cap, 1,048,576, which simulate takes back (it refused
# the 4,194,304 that inspect had printed).
echo '{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 4, "dp": 4}, "hardware": "b200",
  "serving": {"prompt_tokens": 17, "output_tokens": 1, "kv_dtype": "fp8"}}' >"$out/cap.json"
"$cli" inspect --config "$out/cap.json" >"$out/cap.txt"
grep -q '^concurrency 1,048,576 (as many as fit)' "$out/cap.txt"
"$cli" simulate --config "$out/cap.json" >"$out/cap_sim.txt"
grep -Eq '^ +1048576 ' "$out/cap_sim.txt"
# Disaggregated pools in inspect: each pool's whole layout (pp, replicas)
# and the GPUs of both (8 + 4 x 2 x 2 = 24), not the job's parallel block.
echo '{"mode": "inference", "model": {"preset": "llama3-70b", "num_layers": 8}, "parallel": {"tp": 8}, "hardware": "h100",
  "serving": {"prompt_tokens": 2048, "output_tokens": 256,
              "disaggregated": {"prefill": {"tp": 8}, "decode": {"tp": 4, "pp": 2, "replicas": 2}}}}' >"$out/dis.json"
"$cli" inspect --config "$out/dis.json" >"$out/dis.txt"
grep -q '^parallel    disaggregated: prefill pool 8 GPUs + decode pool 16 GPUs = 24 GPUs' "$out/dis.txt"
grep -q 'disaggregated pools (prefill tp 8 dp 1 ep 1, decode tp 4 pp 2 dp 1 ep 1 x 2 replicas)' "$out/dis.txt"
# graph of an inference job says what it is: a forward pass, no backward.
"$cli" graph --config "$out/cap.json" >"$out/graph.txt"
grep -q '^# inference: one forward pass over the KV cache' "$out/graph.txt"
# The step simulation's options on an inference job: refused, not ignored.
for f in --astra --exhaustive --timeline; do
  if "$cli" simulate --config "$out/cap.json" $f --json >/dev/null 2>"$out/err.txt"; then echo "simulate $f accepted on a serving job"; exit 1; fi
  grep -q -- "$f applies to a training step" "$out/err.txt"
done
echo "cli_serving: ok"

