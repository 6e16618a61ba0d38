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

echo "$failures failure(s)"
[[ $failures -eq 0 ]]
