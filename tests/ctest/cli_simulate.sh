#!/usr/bin/env bash
# stagecraft simulate (docs/simulate.md): text and JSON output, symmetric and
# exhaustive runs agree, bad network settings name the field, and an
# export's astra-sim/run.sh treats ASTRA-sim's known abort after every rank
# finished as a success (and any other failure as one).
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"

JOB=(--model gpt3-1.7b --layers 4 --tp 2 --dp 2 --pp 2 --seq-len 128 --global-batch-size 8)

"$CLI" simulate "${JOB[@]}" > text.txt 2> text.err || { fail "simulate"; cat text.err; }
grep -q "^step time " text.txt || fail "no step time: $(cat text.txt)"
grep -q "^critical path: " text.txt || fail "no critical path"
"$CLI" simulate "${JOB[@]}" --json > sym.json || fail "simulate --json"
"$CLI" simulate "${JOB[@]}" --json --exhaustive > all.json || fail "simulate --json --exhaustive"
"$CLI" simulate "${JOB[@]}" --json --astra --timeline > astra.json || fail "simulate --astra"
"$CLI" inspect "${JOB[@]}" --json > summary.json || fail "inspect --json"
python3 - <<'PY' || fail "JSON outputs"
import json
sym, full, astra, summary = (json.load(open(f)) for f in ("sym.json", "all.json", "astra.json", "summary.json"))
assert sym["step_seconds"] > 0 and sym["step_seconds"] == full["step_seconds"], (sym["step_seconds"], full["step_seconds"])
assert full["ranks_simulated"] == 8 and sym["ranks_simulated"] < 8, (sym["ranks_simulated"], full["ranks_simulated"])
assert sym["stages"] == full["stages"]
assert astra["mode"] == "astra-sim" and astra["network"]["model"] == "astra-sim"
assert all(len(s["timeline"]) > 0 for s in astra["stages"])
t = summary["time"]
assert t["step_seconds"] == sym["step_seconds"] and t["mfu"] == sym["mfu"], t
assert set(t["exposed_comm_seconds"]) == {"tp", "cp", "ep", "pp", "dp"}
PY

# Megatron-LM's overlap flags set the training keys (docs/cli.md): the same
# result as the keys in a job file. Megatron-LM's defaults are all off, so the
# plain run and --no-overlap-grad-reduce are the same job (one reduction
# after backward), and --overlap-grad-reduce hides part of it.
OV=(--model gpt3-1.7b --layers 2 --tp 2 --dp 2 --sequence-parallel --zero 1 --seq-len 256 --global-batch-size 2)
"$CLI" simulate "${OV[@]}" --tp-comm-overlap --overlap-grad-reduce --overlap-param-gather --json > ov_flags.json || fail "overlap flags"
cat > ov.json <<'J'
{"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"tp": 2, "dp": 2, "sequence_parallel": true, "zero": 1},
 "training": {"seq_len": 256, "global_batch_size": 2, "tp_comm_overlap": true, "overlap_grad_reduce": true, "overlap_param_gather": true}}
J
"$CLI" simulate --config ov.json --json > ov_keys.json || fail "overlap keys"
"$CLI" simulate "${OV[@]}" --json > ov_none.json || fail "no overlap"
"$CLI" simulate "${OV[@]}" --no-overlap-grad-reduce --json > ov_off.json || fail "--no-overlap-grad-reduce"
"$CLI" simulate "${OV[@]}" --overlap-grad-reduce --json > ov_grad.json || fail "--overlap-grad-reduce"
"$CLI" simulate "${OV[@]}" --json --timeline > ov_tl.json || fail "timeline"
python3 - <<'PY' || fail "overlap flags JSON"
import json
f, k, n, off, tl, g = (json.load(open(x)) for x in ("ov_flags.json", "ov_keys.json", "ov_none.json", "ov_off.json",
                                                     "ov_tl.json", "ov_grad.json"))
assert f["step_seconds"] == k["step_seconds"], (f["step_seconds"], k["step_seconds"])
assert f["step_seconds"] < n["step_seconds"], (f["step_seconds"], n["step_seconds"])
assert off == n, "the default is Megatron-LM's: no overlap of the gradient reduction"
assert g["exposed_comm_seconds"]["dp"] < n["exposed_comm_seconds"]["dp"], (g["exposed_comm_seconds"], n["exposed_comm_seconds"])
comm = [e for s in tl["stages"] for e in s["timeline"] if e[2] in ("tp", "cp", "ep", "pp", "dp")]
assert comm and all(len(e) == 5 and e[4] in (0, 1) for e in comm), comm[:3]
PY
"$CLI" simulate "${OV[@]}" --no-overlap-grad-reduce --overlap-param-gather > /dev/null 2> ov.err; rc=$?
[[ $rc == 1 ]] || fail "param gather without grad overlap exit $rc"
grep -q "training.overlap_param_gather" ov.err || fail "param gather without grad overlap message: $(cat ov.err)"

# A flag and its negation together are refused, naming both flags and the
# key (in the flag table's order, whatever the command line's); the two
# spellings of the same value are not.
"$CLI" simulate "${OV[@]}" --overlap-grad-reduce --no-overlap-grad-reduce > /dev/null 2> ov.err; rc=$?
[[ $rc == 2 ]] || fail "contradicting grad-reduce flags exit $rc"
grep -q -- "--no-overlap-grad-reduce contradicts --overlap-grad-reduce (training.overlap_grad_reduce)" ov.err ||
  fail "contradicting grad-reduce flags message: $(cat ov.err)"
"$CLI" simulate "${OV[@]}" --no-overlap-p2p-comm --overlap-p2p-comm > /dev/null 2> ov.err; rc=$?
[[ $rc == 2 ]] || fail "contradicting p2p flags exit $rc"
grep -q -- "--no-overlap-p2p-comm contradicts --overlap-p2p-comm (training.overlap_p2p_comm)" ov.err ||
  fail "contradicting p2p flags message: $(cat ov.err)"
# Two spellings of one flag are the flag given twice (docs/cli.md).
"$CLI" simulate "${OV[@]}" --no-overlap-p2p-comm --no-overlap-p2p-communication > /dev/null 2> ov.err; rc=$?
[[ $rc == 2 ]] && grep -q -- "are the same flag (training.overlap_p2p_comm), given twice" ov.err ||
  fail "both spellings of off: exit $rc $(cat ov.err)"

# --no-cross-entropy-loss-fusion / --cross-entropy-loss-fusion set
# training.cross_entropy_loss_fusion (docs/parallelism.md, "The loss"): the
# fused loss is the default, the unfused one is the key false in a job file
# and a longer step; with its negation, a usage error.
"$CLI" simulate "${OV[@]}" --cross-entropy-loss-fusion --json > ce_on.json || fail "--cross-entropy-loss-fusion"
"$CLI" simulate "${OV[@]}" --no-cross-entropy-loss-fusion --json > ce_off.json || fail "--no-cross-entropy-loss-fusion"
python3 - ov.json ce_key.json <<'PY' || fail "loss fusion key file"
import json, sys
j = json.load(open(sys.argv[1]))
for k in ("tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"):
    del j["training"][k]
j["training"]["cross_entropy_loss_fusion"] = False
json.dump(j, open(sys.argv[2], "w"))
PY
"$CLI" simulate --config ce_key.json --json > ce_key_out.json || fail "cross_entropy_loss_fusion key"
python3 - <<'PY' || fail "loss fusion flags JSON"
import json
on, off, key, n = (json.load(open(x)) for x in ("ce_on.json", "ce_off.json", "ce_key_out.json", "ov_none.json"))
assert on == n, "the fused loss is the default"
assert off["step_seconds"] == key["step_seconds"], (off["step_seconds"], key["step_seconds"])
assert off["step_seconds"] > on["step_seconds"], (off["step_seconds"], on["step_seconds"])
PY
"$CLI" simulate "${OV[@]}" --cross-entropy-loss-fusion --no-cross-entropy-loss-fusion > /dev/null 2> ov.err; rc=$?
[[ $rc == 2 ]] || fail "contradicting loss fusion flags exit $rc"
grep -q -- "contradicts --cross-entropy-loss-fusion (training.cross_entropy_loss_fusion)" ov.err ||
  fail "contradicting loss fusion flags message: $(cat ov.err)"

# --overlap-p2p-comm / --no-overlap-p2p-comm (and Megatron-LM's spelling
# --no-overlap-p2p-communication) set training.overlap_p2p_comm: on by
# default (Megatron-LM's), an interleaved job's steady-phase sends leave the
# compute stream (less exposed pp time, a shorter step); a 1F1B job is
# unaffected (Megatron-LM turns the option off there).
PP=(--model gpt3-1.7b --layers 4 --pp 2 --virtual-stages 2 --schedule interleaved-1f1b --seq-len 1024 --global-batch-size 4)
"$CLI" simulate "${PP[@]}" --json > p2p_default.json || fail "p2p default"
"$CLI" simulate "${PP[@]}" --overlap-p2p-comm --json > p2p_on.json || fail "--overlap-p2p-comm"
"$CLI" simulate "${PP[@]}" --no-overlap-p2p-comm --json > p2p_off.json || fail "--no-overlap-p2p-comm"
"$CLI" simulate "${PP[@]}" --no-overlap-p2p-communication --json > p2p_meg.json || fail "--no-overlap-p2p-communication"
cat > p2p.json <<'J'
{"model": {"preset": "gpt3-1.7b", "num_layers": 4}, "parallel": {"pp": 2, "virtual_stages": 2},
 "training": {"seq_len": 1024, "global_batch_size": 4, "schedule": "interleaved-1f1b", "overlap_p2p_comm": false}}
J
"$CLI" simulate --config p2p.json --json > p2p_key.json || fail "overlap_p2p_comm key"
P1=(--model gpt3-1.7b --layers 4 --pp 2 --schedule 1f1b --seq-len 1024 --global-batch-size 4)
"$CLI" simulate "${P1[@]}" --json > p2p_1f1b_on.json || fail "1f1b default"
"$CLI" simulate "${P1[@]}" --no-overlap-p2p-comm --json > p2p_1f1b_off.json || fail "1f1b --no-overlap-p2p-comm"
python3 - <<'PY' || fail "overlap_p2p_comm flags JSON"
import json
d, on, off, meg, key, a, b = (json.load(open(x)) for x in ("p2p_default.json", "p2p_on.json", "p2p_off.json", "p2p_meg.json",
                                                         "p2p_key.json", "p2p_1f1b_on.json", "p2p_1f1b_off.json"))
assert d == on, "the default is Megatron-LM's: overlap on"
assert off == meg == key, "the three spellings of off are the same job"
assert on["step_seconds"] < off["step_seconds"], (on["step_seconds"], off["step_seconds"])
assert on["exposed_comm_seconds"]["pp"] < off["exposed_comm_seconds"]["pp"], (on["exposed_comm_seconds"], off["exposed_comm_seconds"])
assert a == b, "1F1B: no effect"
PY
"$CLI" simulate --help 2>&1 | grep -q -- "--no-overlap-p2p-comm" || fail "--no-overlap-p2p-comm not in the help"

# --moe-shared-expert-overlap: the key's result; a shorter step on a model
# with shared experts (the all-to-all has the shared GEMMs beside it); the
# allgather dispatcher refused, naming the key.
MOE=(--model deepseek-v3 --layers 5 --dp 4 --ep 4 --seq-len 512 --global-batch-size 4)
"$CLI" simulate "${MOE[@]}" --moe-shared-expert-overlap --json > se_flag.json || fail "--moe-shared-expert-overlap"
"$CLI" simulate "${MOE[@]}" --json > se_none.json || fail "moe without overlap"
python3 - <<'PY' || fail "shared-expert overlap JSON"
import json
f, n = (json.load(open(x)) for x in ("se_flag.json", "se_none.json"))
assert f["step_seconds"] < n["step_seconds"], (f["step_seconds"], n["step_seconds"])
PY
"$CLI" simulate "${MOE[@]}" --moe-shared-expert-overlap --moe-dispatcher allgather > /dev/null 2> se.err; rc=$?
[[ $rc == 1 ]] || fail "shared-expert overlap with allgather exit $rc"
grep -q "training.moe_shared_expert_overlap" se.err || fail "shared-expert overlap with allgather message: $(cat se.err)"

# --overlap-moe-expert-parallel-comm / --delay-wgrad-compute (Megatron-Core's
# EP all-to-all overlap): the flags set the keys (the same result as the
# job file), a shorter step; a flag with its negation is a usage error; the
# delay without the overlap and the overlap without ep > 1 name their key.
# Four micro-batches per rank: three combined steps.
EPO=(--model deepseek-v3 --layers 5 --dp 4 --ep 4 --seq-len 512 --global-batch-size 16)
"$CLI" simulate "${EPO[@]}" --overlap-moe-expert-parallel-comm --delay-wgrad-compute --json > epo_flag.json ||
  fail "--overlap-moe-expert-parallel-comm --delay-wgrad-compute"
"$CLI" simulate "${EPO[@]}" --json > epo_none.json || fail "EP overlap off"
"$CLI" inspect "${EPO[@]}" --overlap-moe-expert-parallel-comm --delay-wgrad-compute --json > epo_summary.json || fail "inspect epo"
python3 - <<'PY' || fail "EP overlap JSON"
import json
f, n, s = (json.load(open(x)) for x in ("epo_flag.json", "epo_none.json", "epo_summary.json"))
assert f["step_seconds"] < n["step_seconds"], (f["step_seconds"], n["step_seconds"])
t = s["job"]["training"]
assert t["overlap_moe_expert_parallel_comm"] is True and t["delay_wgrad_compute"] is True, t
PY
"$CLI" simulate "${MOE[@]}" --overlap-moe-expert-parallel-comm --no-overlap-moe-expert-parallel-comm > /dev/null 2> epo.err; rc=$?
[[ $rc == 2 ]] || fail "contradicting EP overlap flags exit $rc"
grep -q -- "--no-overlap-moe-expert-parallel-comm contradicts --overlap-moe-expert-parallel-comm (training.overlap_moe_expert_parallel_comm)" epo.err ||
  fail "contradicting EP overlap flags message: $(cat epo.err)"
"$CLI" simulate "${MOE[@]}" --delay-wgrad-compute > /dev/null 2> epo.err; rc=$?
[[ $rc == 1 ]] || fail "delay without overlap exit $rc"
grep -q "training.delay_wgrad_compute" epo.err || fail "delay without overlap message: $(cat epo.err)"
"$CLI" simulate --model deepseek-v3 --layers 5 --dp 4 --ep 1 --seq-len 512 --global-batch-size 4 \
  --overlap-moe-expert-parallel-comm > /dev/null 2> epo.err; rc=$?
[[ $rc == 1 ]] || fail "EP overlap with ep 1 exit $rc"
grep -q "training.overlap_moe_expert_parallel_comm" epo.err || fail "EP overlap with ep 1 message: $(cat epo.err)"
"$CLI" simulate --help 2>&1 | grep -q -- "--delay-wgrad-compute" || fail "--delay-wgrad-compute not in the help"

# Usage and job errors.
"$CLI" simulate "${JOB[@]}" --timeline > /dev/null 2>&1; [[ $? == 2 ]] || fail "--timeline without --json is not a usage error"
cat > bad.json <<'J'
{"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"dp": 4}, "network": {"algorithm": "mesh"}}
J
"$CLI" simulate --config bad.json > /dev/null 2> bad.err; rc=$?
[[ $rc == 1 ]] || fail "bad algorithm exit $rc"
grep -q "network.algorithm: unknown algorithm \"mesh\"" bad.err || fail "bad algorithm message: $(cat bad.err)"
cat > small.json <<'J'
{"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"dp": 32}, "network": {"nodes": 2}}
J
"$CLI" simulate --config small.json > /dev/null 2> small.err; rc=$?
[[ $rc == 1 ]] || fail "small network exit $rc"
grep -q "network.nodes: the network is too small for the job" small.err || fail "small network message: $(cat small.err)"

# run.sh of an export, against stand-ins for the simulator binary.
"$CLI" generate "${JOB[@]}" -o job.zip > /dev/null 2>&1 || fail "generate zip"
mkdir x && (cd x && unzip -q ../job.zip) || fail "unzip"
fake() {  # $1: ranks that print "finished", $2: exit status, $3: extra line
  cat > "fake$2$1" <<F
#!/bin/sh
i=0
while [ \$i -lt $1 ]; do echo "[info] sys[\$i] finished, 1000 cycles"; i=\$((i + 1)); done
echo "$3"
exit $2
F
  chmod +x "fake$2$1"
  echo "$WORK/fake$2$1"
}
ASTRA_SIM=$(fake 8 134 "malloc_consolidate(): unaligned fastbin chunk detected") sh x/astra-sim/run.sh > ok.out 2> ok.err
[[ $? == 0 ]] || fail "abort after all ranks finished: run.sh exit not 0"
grep -q "known upstream" ok.err || fail "run.sh does not explain the abort: $(cat ok.err)"
ASTRA_SIM=$(fake 7 134 "free(): invalid pointer") sh x/astra-sim/run.sh > part.out 2> part.err
[[ $? == 134 ]] || fail "abort before every rank finished is not a failure"
ASTRA_SIM=$(fake 8 0 "[critical] something") sh x/astra-sim/run.sh > crit0.out 2>&1
[[ $? == 1 ]] || fail "a [critical] line is not a failure"
ASTRA_SIM=$(fake 8 1 "[critical] something") sh x/astra-sim/run.sh > crit.out 2>&1
[[ $? == 1 ]] || fail "a [critical] line with a failing exit is not a failure"
ASTRA_SIM=$(fake 8 0 "") sh x/astra-sim/run.sh > clean.out 2> clean.err || fail "a clean run fails"
[[ -s clean.err ]] && fail "a clean run printed: $(cat clean.err)"

# A layout that does not fit is said to, by simulate and by inspect's
# memory lines; one that fits has no such line (session 21's audit).
grep -q "does not fit" text.txt && fail "simulate said a fitting job does not fit"
"$CLI" simulate --model gpt3-175b --layers 8 --global-batch-size 8 --seq-len 2048 > big.txt 2> big.err || fail "simulate big"
grep -q "^memory      does not fit: stage 0 needs [0-9.]* GiB per GPU at its peak, the device has 79.18 GiB" big.txt ||
  fail "no memory line: $(tail -2 big.txt)"
"$CLI" inspect "${JOB[@]}" > insp.txt || fail "inspect"
grep -q "^memory      per GPU at the peak" insp.txt || fail "inspect prints no memory"
[[ $(grep -c "^  stage [01] (2 layers): weights .* = .* of 79.18 GiB$" insp.txt) -eq 2 ]] || fail "inspect's stage memory lines: $(grep stage insp.txt)"
"$CLI" inspect --model gpt3-175b --layers 8 --global-batch-size 8 --seq-len 2048 > binsp.txt || fail "inspect big"
grep -q "^  stage 0 (8 layers): .*: does not fit$" binsp.txt || fail "inspect did not say it does not fit"

# The JSON says whether the layout fits, per stage (the text's "memory
# does not fit" line had no JSON counterpart).
echo '{"model": {"preset": "llama3-8b", "num_layers": 2}, "hardware": {"preset": "h100", "memory_bytes": 1}}' > nofit.json
"$CLI" simulate --config nofit.json --json > nofit.out || fail "simulate of a layout that does not fit"
python3 -c "import json; m = json.load(open('nofit.out'))['memory']; assert m['fits'] is False and m['stages'][0]['capacity_bytes'] == 1 and m['stages'][0]['peak_live_bytes'] > 1, m" \
  || fail "memory in the JSON: $(head -c 400 nofit.out)"
python3 -c "import json; m = json.load(open('sym.json'))['memory']; assert m['fits'] is True and all(s['peak_live_bytes'] <= s['capacity_bytes'] for s in m['stages']), m" \
  || fail "memory of a fitting layout"
echo "$failures failure(s)"
[[ $failures -eq 0 ]]
