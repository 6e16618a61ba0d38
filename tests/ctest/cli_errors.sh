#!/usr/bin/env bash
# CLI error handling: exit codes (2 usage, 1 job/input), messages on
# stderr, and no output directory (nor DIR.tmp-*) after a failed generate.
source "$(dirname "${BASH_SOURCE[0]}")/lib/common.bash"

# expect NAME EXIT_CODE STDERR_SUBSTRING -- command...
expect() {
  local name="$1" code="$2" needle="$3"
  shift 4
  "$@" >out.txt 2>err.txt
  local rc=$?
  if [[ $rc -ne $code ]]; then
    echo "FAIL $name: exit $rc, expected $code"; cat err.txt; failures=$((failures + 1)); return
  fi
  if ! grep -qF -- "$needle" err.txt; then
    echo "FAIL $name: stderr lacks '$needle':"; cat err.txt; failures=$((failures + 1)); return
  fi
  echo "ok   $name"
}

printf '{\n  "model": {"preset": "gpt3-1.7b"},\n  "parallel": {"dp": 2,, "tp": 1}\n}\n' > malformed.json
expect malformed-json 1 "malformed.json: line 3, column 24" -- "$CLI" inspect --config malformed.json

echo '{"model": "gpt3-1.7b", "parallel": {"tpp": 2}}' > unknown.json
expect unknown-key 1 "parallel.tpp: unknown key (known: dp, tp, pp, cp, cp_algorithm, virtual_stages, zero, sequence_parallel, pipeline_layout, order, world_size, ep, expert_tp, shard_group, moe_dispatcher, moe_imbalance)" -- \
  "$CLI" inspect --config unknown.json

expect tp-heads 1 "num_heads (96) is not divisible by tp (7)" -- \
  "$CLI" inspect --model gpt3-175b --tp 7 --layers 1
expect tp-heads-code 1 "[not_divisible]" -- "$CLI" inspect --model gpt3-175b --tp 7

echo '{"model": "gpt3-1.7b", "parallel": {"dp": 2, "tp": 4, "world_size": 16}}' > world.json
expect world-size 1 "world_size (16) != dp (2) x tp (4) x pp (1) x cp (1) = 8" -- "$CLI" inspect --config world.json

# fp4 weights need FP4 tensor cores: an H100 has none (docs/inference.md, "4-bit weights").
echo '{"mode": "inference", "model": "llama3-8b", "hardware": "h100", "serving": {"weights_dtype": "nvfp4"}}' > fp4.json
expect fp4-weights-h100 1 'serving.weights_dtype: weights "nvfp4" run their GEMMs on FP4 tensor cores (W4A4); hardware "h100" has none (hardware.peak_flops_fp4 is 0)' -- \
  "$CLI" inspect --config fp4.json
echo '{"model": "llama3-8b", "training": {"dtype": "int4"}}' > int4train.json
expect int4-training 1 'training.dtype: "int4" is a 4-bit weight format for serving only' -- "$CLI" inspect --config int4train.json

# plan searches training layouts: a serving job is sent to serve-capacity.
echo '{"mode": "inference", "model": "llama3-8b", "hardware": "h100", "serving": {"prompt_tokens": 512, "output_tokens": 64}}' > servejob.json
expect plan-serving-job 1 "mode: plan searches training layouts; for a serving job use serve-capacity" -- \
  "$CLI" plan --config servejob.json --gpus 8

expect negative-flag 1 "parallel.dp: must be >= 1 (got -3)" -- "$CLI" inspect --model gpt3-1.7b --dp -3
echo '{"model": "gpt3-1.7b", "training": {"seq_len": -5}}' > negative.json
expect negative-file 1 "training.seq_len: must be >= 1 (got -5)" -- "$CLI" inspect --config negative.json

expect missing-o 2 "missing -o DIR" -- "$CLI" generate --model gpt3-1.7b --layers 1
expect unknown-flag 2 "unknown flag --tpp" -- "$CLI" generate --model gpt3-1.7b --tpp 2 -o x
expect not-integer 2 "--dp expects an integer (got 'two')" -- "$CLI" inspect --model gpt3-1.7b --dp two
expect no-model 2 "give --model PRESET or --config FILE" -- "$CLI" inspect
expect unknown-preset 1 "unknown model preset \"gpt9\"" -- "$CLI" inspect --model gpt9
expect missing-config 1 "cannot read nope.json" -- "$CLI" inspect --config nope.json
expect unknown-command 2 "unknown command 'generat'" -- "$CLI" generat
# An unknown command is echoed escaped and clipped like any input (echo_text).
expect unknown-command-escape 2 "unknown command 'g\\x1b[31mX\\nY'" -- "$CLI" "$(printf 'g\x1b[31mX\nY')"
expect unknown-command-bytes 2 "unknown command '\\xff\\xfe'" -- "$CLI" $'\xff\xfe'
"$CLI" "$(head -c 5000 /dev/zero | tr '\0' z)" 2> err.txt; [[ $(wc -c < err.txt) -lt 200 ]] || { echo "FAIL unknown-command-long: $(wc -c < err.txt) bytes"; failures=$((failures + 1)); }
# --prefix '.' is made of allowed characters but is not a file name: said so.
expect prefix-dot 2 "other than '.' and '..', of at most 200 characters (got '.')" -- "$CLI" generate --model gpt3-1.7b --layers 1 --prefix . -o pdot
# A concurrency past the instance's cap is a usage error naming the cap.
echo '{"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 2}, "serving": {"prompt_tokens": 16, "output_tokens": 4}}' > sweep.json
expect sweep-cap 2 "--sweep-concurrency must be a comma-separated list of 1 to 64 integers in [1, 1048576] (got '2000000')" -- \
  "$CLI" simulate --config sweep.json --sweep-concurrency 2000000
expect quiet-progress 2 "-q (no progress, no result line) contradicts --progress bar" -- \
  "$CLI" generate --model gpt3-1.7b --layers 1 -q --progress bar -o qbar
# An error a flag caused names the flag, whichever key it set.
expect sp-inference 1 "does not take it (from --sequence-parallel)" -- "$CLI" inspect --config sweep.json --sequence-parallel
echo '{"model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"pp": 2, "pipeline_layout": [2, 2]},
  "training": {"seq_len": 256, "global_batch_size": 8}}' > layout.json
expect layout-pp 1 "(from --pp)" -- "$CLI" inspect --config layout.json --pp 4
# ... but only the layout's length is pp's: a layout summing to other than
# the layers is the job's own error beside --pp, and --layers' when given.
echo '{"model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"pp": 2, "pipeline_layout": [2, 3]},
  "training": {"seq_len": 256, "global_batch_size": 8}}' > layout-sum.json
"$CLI" inspect --config layout-sum.json --pp 2 2> err.txt
if ! grep -q "parallel.pipeline_layout: sums to 5 layers; the model has 4" err.txt || grep -q "(from" err.txt; then
  echo "FAIL layout-sum-pp: $(cat err.txt)"; failures=$((failures + 1))
fi
expect layout-layers 1 "parallel.pipeline_layout: sums to 4 layers; the model has 6 (from --layers)" -- \
  "$CLI" inspect --config layout.json --layers 6
expect layout-pp-v 1 "(from --pp and --virtual-stages)" -- "$CLI" inspect --config layout.json --pp 2 --virtual-stages 2
# pp x virtual stages against the layers: every flag of the three given.
expect stages-pp-v-layers 1 "pp (2) x virtual_stages (3) = 6 stages for 4 layers: every stage needs a layer (from --pp, --virtual-stages and --layers)" -- \
  "$CLI" simulate --model llama3-8b --layers 4 --pp 2 --schedule interleaved-1f1b --virtual-stages 3
# The MoE layers' options on a dense model are refused (they did nothing
# but change the job's hash).
expect dense-dispatcher 1 'parallel.moe_dispatcher: moe_dispatcher "deepep" moves tokens to experts, but the model has none (model.num_experts is 0) (from --moe-dispatcher)' -- \
  "$CLI" inspect --model llama3-8b --layers 2 --moe-dispatcher deepep
expect dense-shared 1 "training.moe_shared_expert_overlap: overlaps the shared experts with the expert exchange, but the model has no experts (model.num_experts is 0) (from --moe-shared-expert-overlap)" -- \
  "$CLI" inspect --model llama3-8b --layers 2 --moe-shared-expert-overlap
expect dense-pad 1 "training.moe_pad_expert_input_to_capacity: pads the routed experts' inputs, but the model has no experts (model.num_experts is 0) (from --moe-pad-expert-input-to-capacity)" -- \
  "$CLI" inspect --model llama3-8b --layers 2 --moe-pad-expert-input-to-capacity
expect help-extra 2 "help takes at most one command (got 'extra')" -- "$CLI" help generate extra
expect version-extra 2 "--version takes no argument (got 'extra')" -- "$CLI" --version extra
# help is a command too: `help help` and `help --help` print the usage.
for a in help --help; do
  "$CLI" help $a > out.txt 2>&1 && grep -q '^usage: stagecraft <command>' out.txt || { echo "FAIL help $a: $(head -c 200 out.txt)"; failures=$((failures + 1)); }
done
expect no-command 2 "usage: stagecraft" -- "$CLI"
expect dump-missing 1 "cannot read none.et" -- "$CLI" dump none.et
expect dump-usage 2 "missing FILE.et" -- "$CLI" dump
echo "not a trace" > junk.et
expect dump-garbage 1 "junk.et" -- "$CLI" dump junk.et

# A failed generate leaves neither DIR nor DIR.tmp-*.
expect failed-generate 1 "num_heads (96) is not divisible by tp (7)" -- \
  "$CLI" generate --model gpt3-175b --tp 7 -o failed
if [[ -e failed ]] || compgen -G "failed.tmp-*" >/dev/null; then
  echo "FAIL failed-generate left files:"; ls -a; failures=$((failures + 1))
else
  echo "ok   failed-generate-clean"
fi

# A non-empty DIR is not replaced without --force, and is left untouched.
mkdir keep && echo precious > keep/file
expect refuse-nonempty 1 "exists and is not empty (use --force" -- \
  "$CLI" generate --model gpt3-1.7b --layers 1 --seq-len 128 -o keep
if [[ "$(cat keep/file)" != precious ]]; then echo "FAIL keep/ was modified"; failures=$((failures + 1)); fi

# Every command answers --help with exit 0.
for c in generate inspect graph dump; do
  if "$CLI" "$c" --help >/dev/null 2>&1 && "$CLI" help "$c" >/dev/null 2>&1; then
    echo "ok   help-$c"
  else
    echo "FAIL help-$c"; failures=$((failures + 1))
  fi
done
"$CLI" --version | grep -q '^stagecraft [0-9]' && echo "ok   version" || { echo "FAIL version"; failures=$((failures + 1)); }

# Issue 24 D4, D9, D11, D12, D10. one_line NAME FILE: FILE (stderr) is one
# line of valid UTF-8 with no control character but the final newline,
# no U+0085/2028/2029, under 2,500 bytes.
one_line() {
  python3 - "$2" <<'PY' || fail_d "$1: not one clean line: $(head -c 300 "$2" | od -c | head -5)"
import sys
b = open(sys.argv[1], "rb").read()
t = b.decode("utf-8")  # raises on invalid UTF-8
assert t.endswith("\n") and t.count("\n") == 1, t[:200]
assert not any(ord(c) < 0x20 and c != "\n" or ord(c) == 0x7f or 0x80 <= ord(c) <= 0x9f or c in "\u2028\u2029" for c in t), t[:200]
assert len(b) < 2500, len(b)
PY
}
fail_d() { echo "FAIL $*"; failures=$((failures + 1)); }
# D4: a syntax error beside a non-ASCII character (smart quotes): the
# message used to quote a lone byte of the character.
printf '{"model": \xe2\x80\x9cgpt3-1.7b\xe2\x80\x9d}' > smart.json
expect smart-quotes 1 "smart.json: line 1, column 11: syntax error" -- "$CLI" inspect --config smart.json
one_line smart-quotes err.txt
# D9: a value with a newline, a terminal escape, a line separator, or 1 MB,
# echoed in an error: one line, escaped, clipped.
printf '{"model": "gpt3-1.7b\\nfake: line", "training": {"dtype": "x\\u001b[2Jy"}}' > nl.json
expect preset-newline 1 'unknown model preset "gpt3-1.7b\nfake: line"' -- "$CLI" inspect --config nl.json
one_line preset-newline err.txt
printf '{"model": "gpt3-1.7b", "training": {"dtype": "x\\u001b[2J\\u2028y"}}' > esc.json
expect dtype-escape 1 'unknown dtype "x\x1b[2J\u2028y"' -- "$CLI" inspect --config esc.json
one_line dtype-escape err.txt
for field in '"model": {"preset": "gpt3-1.7b"}, "training": {"schedule": "V"}' '"model": "gpt3-1.7b", "network": {"algorithm": "V"}' \
             '"model": "gpt3-1.7b", "training": {"recompute": "V"}' '"model": "gpt3-1.7b", "training": {"optimizer": "V"}' \
             '"model": "gpt3-1.7b", "hardware": "V"' '"model": "V"'; do
  python3 -c "import sys; print('{' + sys.argv[1].replace('V', 'v\\\\n' * 200000) + '}')" "$field" > big.json
  "$CLI" inspect --config big.json > /dev/null 2> big.err; rc=$?
  [[ $rc == 1 ]] || fail_d "1 MB value ($field): exit $rc"
  one_line "1 MB value ($field)" big.err
  grep -q '\.\.\.(400000 bytes)' big.err || fail_d "1 MB value ($field) not clipped: $(head -c 300 big.err)"
done
# inspect prints model.name and hardware.name escaped.
printf '{"model": {"preset": "gpt3-1.7b", "name": "a\\u001b[31mb\\nc"}, "hardware": {"preset": "h100", "name": "h\\u2028x"}}' > names.json
"$CLI" inspect --config names.json --layers 1 > names.out 2>&1 || fail_d "inspect with odd names: $(cat names.out)"
grep -qF 'model       a\x1b[31mb\nc: ' names.out || fail_d "model.name not escaped: $(grep model names.out | od -c | head -3)"
grep -qF 'hardware    h\u2028x: ' names.out || fail_d "hardware.name not escaped: $(grep hardware names.out | od -c | head -3)"
# D12: hardware.name with U+2028/2029/0085 in astra-sim/network.yml: no
# line separator reaches the YAML (a reader would see an injected key).
printf '{"model": {"preset": "gpt3-1.7b", "num_layers": 1}, "hardware": {"preset": "h100", "name": "h\\u2028npus_count: [ 9 ]\\u2029x\\u0085y\\nz"}, "training": {"seq_len": 256}}' > yml.json
"$CLI" generate --config yml.json -q -o yml.zip || fail_d "generate yml.zip"
mkdir yml && (cd yml && unzip -q ../yml.zip) || fail_d "unzip yml.zip"
python3 - yml/astra-sim/network.yml <<'PY' || fail_d "network.yml: $(od -c yml/astra-sim/network.yml | head)"
import sys, yaml
b = open(sys.argv[1], "rb").read()
assert b"\xe2\x80\xa8" not in b and b"\xe2\x80\xa9" not in b and b"\xc2\x85" not in b, b[:300]
d = yaml.safe_load(b.decode())
assert d["npus_count"] == [1], d
assert "\\u2028npus_count" in b.decode(), b
PY
# D11: bytes after a NUL are not ignored.
printf '{"model":"gpt3-1.7b"}\0garbage' > nul.json
expect nul-byte 1 "nul.json: line 1, column 22: a NUL byte (\x00), which JSON text cannot contain [parse_error]" -- "$CLI" inspect --config nul.json
# D10: a denormal bandwidth is refused naming the field and the range.
echo '{"model": "gpt3-1.7b", "network": {"scale_out_bandwidth_gbs": 5e-324}}' > denormal.json
expect denormal 1 "network.scale_out_bandwidth_gbs: must be >= 0.01 (got 4.940656458e-324)" -- "$CLI" simulate --config denormal.json
echo '{"model": "gpt3-1.7b", "network": {"domain_bandwidth_gbs": 0.001}}' > slow.json
expect slow-domain 1 "network.domain_bandwidth_gbs: must be >= 0.01 (got 0.001)" -- "$CLI" inspect --config slow.json

# D14: one job file for every command: a "plan" block is accepted by
# inspect (and changes nothing it prints), and must be an object.
echo '{"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "training": {"seq_len": 256}, "plan": {"objective": "step_time"}}' > withplan.json
echo '{"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "training": {"seq_len": 256}}' > noplan.json
"$CLI" inspect --config withplan.json --json > withplan.out 2>&1 || fail_d "a job with a plan block refused: $(cat withplan.out)"
"$CLI" inspect --config noplan.json --json > noplan.out 2>&1
cmp -s withplan.out noplan.out || fail_d "the plan block changed inspect's output"
echo '{"model": "gpt3-1.7b", "plan": 3}' > badplan.json
expect plan-not-object 1 "plan: must be an object (got integer 3) [invalid_argument]" -- "$CLI" inspect --config badplan.json

# A flag value that is not valid UTF-8 (it goes into the job's JSON) used
# to abort the CLI (exit 134); now a usage error naming the flag. Paths may
# hold any bytes.
expect flag-utf8 2 "--model is not valid UTF-8 (got 'gpt\xff\n')" -- "$CLI" inspect --model $'gpt\xff\n'
one_line flag-utf8 <(head -1 err.txt)
expect flag-utf8-order 2 "--order is not valid UTF-8" -- "$CLI" generate --model gpt3-1.7b --order $'\xff,tp' -o x
"$CLI" generate --model gpt3-1.7b --layers 1 --seq-len 256 -q -o $'odd\xffdir' || fail_d "an -o path with a non-UTF-8 byte refused"

# A Hugging Face config with keys the import does not read (issue 25): it
# runs (exit 0), each unknown key a warning on stderr; keys known to have no
# cost (torch_dtype, architectures) stay quiet; --json carries the same.
cat > hfwarn.json <<'JSON'
{"model": {"hf_config": {"model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4,
  "intermediate_size": 128, "vocab_size": 100, "torch_dtype": "bfloat16", "architectures": ["LlamaForCausalLM"],
  "vision_config": {"model_type": "siglip_vision_model"}, "made_up_field": 3}},
 "training": {"seq_len": 64, "global_batch_size": 1}}
JSON
expect hf-unknown-key 0 "stagecraft inspect: warning: model.hf_config: made_up_field = 3: not read by the llama import" -- \
  "$CLI" inspect --config hfwarn.json --json
grep -qF 'warning: model.hf_config: vision_config = {"model_type":"siglip_vision_model"}: not read' err.txt ||
  fail_d "vision_config warned on stderr"
[[ $(grep -c warning err.txt) -eq 2 ]] || fail_d "exactly two warnings (torch_dtype, architectures are quiet)"
grep -qF '"made_up_field = 3: not read by the llama import' out.txt || fail_d "--json carries hf_import.warnings"

# Session 21's audit: messages that named the wrong field or value.
expect order-echo 1 '(got "tp,tp,pp,dp") (from --order)' -- "$CLI" inspect --model gpt3-1.7b --order tp,tp,pp,dp
echo '{"model": {"preset": "llama3-8b", "mlp": "silu"}}' > mlp.json
expect mlp-known 1 'model.mlp: unknown value "silu" (known: gelu, swiglu, geglu, relu2)' -- "$CLI" inspect --config mlp.json
echo '{"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "num_experts": 4,
  "experts_per_token": 2, "moe_ffn_hidden": 128, "dense_layers": [5]}}' > dense.json
expect dense-layers-range 1 "model.dense_layers[0]: must be a layer index below num_layers (2) (got 5)" -- \
  "$CLI" inspect --config dense.json
expect expert-tp-path 1 "parallel.expert_tp: expert_tp (3) x ep (4) = 12 does not divide" -- \
  "$CLI" inspect --model mixtral-8x7b --layers 4 --tp 2 --ep 4 --dp 4 --sequence-parallel --expert-tp 3
grep -qF "(from --expert-tp)" err.txt || fail_d "the expert_tp error names --expert-tp"
expect int-range 2 "--dp is out of range (got '99999999999999999999')" -- "$CLI" inspect --model gpt3-1.7b --dp 99999999999999999999
expect plan-reserve-both 2 "give --memory-reserve-gib or --memory-reserve-fraction, not both" -- \
  "$CLI" plan --model llama3-8b --gpus 16 --seq-len 4096 --global-batch-size 64 --memory-reserve-fraction 0.1 --memory-reserve-gib 2
expect plan-dtype-fp8 1 'write "dtype": "bf16", "fp8_recipe"' -- \
  "$CLI" plan --model llama3-8b --gpus 8 --seq-len 4096 --global-batch-size 64 --dtype fp8
grep -qF "(from --dtype)" err.txt || fail_d "plan's dtype error names --dtype"
expect flag-spellings 2 "--no-overlap-p2p-communication and --no-overlap-p2p-comm are the same flag (training.overlap_p2p_comm), given twice" -- \
  "$CLI" inspect --model gpt3-1.7b --no-overlap-p2p-comm --no-overlap-p2p-communication
echo '{"mode": "inference", "model": "llama3-8b", "serving": {"scheduler": {"acceptance_rate": 0.7}}}' > accept.json
expect acceptance-alone 1 "serving.scheduler.acceptance_rate: is the chance a draft token is accepted: it needs speculative_tokens > 0 (got 0)" -- \
  "$CLI" inspect --config accept.json

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
