#!/usr/bin/env bash
# Decodes every frame of every .et file with the reference decoder (protoc)
# against core/emit/chakra.proto, independently of our own reader: frame 0
# as ChakraProtoMsg.GlobalMetadata, the nodes as ChakraProtoMsg.Node. Fails
# on a framing or decode error, a field unknown to the schema, a node
# without a name or with a type other than COMP/SEND/RECV/COLL, or a
# metadata version other than 0.0.4.
#
# usage: protoc_decode.sh [DIR]
#   DIR given: decode DIR/*.et (no CLI needed).
#   no DIR: run "$STAGECRAFT_CLI generate" for a small gpt3-1.7b job into a
#   temporary directory, check its outputs exist, then decode them.
set -euo pipefail

src="${STAGECRAFT_SOURCE_DIR:-$(cd "$(dirname "$0")/../.." && pwd)}"
split="$src/tests/tools/split_delimited.py"
work="$(mktemp -d)"
trap '[[ $BASHPID == $$ ]] && rm -rf "$work"' EXIT  # main shell only: see lib/common.bash

fail() { echo "protoc_decode: $*" >&2; exit 1; }

if [[ $# -ge 1 ]]; then
  dir="$1"
else
  [[ -x "${STAGECRAFT_CLI:-}" ]] || fail "STAGECRAFT_CLI ('${STAGECRAFT_CLI:-}') is not an executable"
  dir="$work/out"
  "$STAGECRAFT_CLI" generate --model gpt3-1.7b --layers 2 --tp 2 --dp 2 --seq-len 256 \
    --micro-batch-size 1 --global-batch-size 4 -o "$dir" || fail "generate failed"
  for r in 0 1 2 3; do [[ -s "$dir/trace.$r.et" ]] || fail "missing $dir/trace.$r.et"; done
  for f in comm_groups.json summary.json; do
    python3 -m json.tool "$dir/$f" >/dev/null || fail "$dir/$f is not valid JSON"
  done
fi

shopt -s nullglob
files=("$dir"/*.et)
[[ ${#files[@]} -gt 0 ]] || fail "no .et files in $dir"

# One protoc call per file for all its nodes (one per node takes minutes):
# each node frame becomes one element of a repeated ChakraProtoMsg.Node.
cp "$src/core/emit/chakra.proto" "$work/"
cat >"$work/node_stream.proto" <<'PROTO'
syntax = "proto3";
package stagecraft_test;
option optimize_for = LITE_RUNTIME;
import "chakra.proto";
message NodeStream { repeated ChakraProtoMsg.Node node = 1; }
PROTO
decode() { protoc --decode="$1" -I"$work" "$2" <"$3" 2>&1; }

# protoc prints a field unknown to the schema by its number ("12: 5").
unknown_re='^[[:space:]]*[0-9]+[[:space:]]*[:{]'
total=0
for et in "${files[@]}"; do
  frames="$work/frames"
  rm -rf "$frames"
  n="$(python3 "$split" "$et" "$frames")" || fail "$et: bad framing"

  text="$(decode ChakraProtoMsg.GlobalMetadata chakra.proto "$frames/000000.bin")" \
    || fail "$et: metadata: $text"
  grep -q '^version: "0.0.4"$' <<<"$text" || fail "$et: metadata version is not 0.0.4"
  if grep -Eq "$unknown_re" <<<"$text"; then fail "$et: metadata has unknown fields"; fi

  if ! text="$(decode stagecraft_test.NodeStream node_stream.proto "$frames/nodes.stream")"; then
    # Find the first frame protoc rejects, for the message.
    for bin in "$frames"/0*.bin; do
      [[ "$bin" == */000000.bin ]] && continue
      one="$(decode ChakraProtoMsg.Node chakra.proto "$bin")" \
        || fail "$et: frame $((10#$(basename "$bin" .bin))): $one"
    done
    fail "$et: nodes: $text"
  fi
  if grep -Eq "$unknown_re" <<<"$text"; then fail "$et: a node has unknown fields"; fi
  # Node fields are the lines indented by exactly two spaces in a block.
  awk -v want=$((n - 1)) -v file="$et" '
    function check() {
      if (!name) { printf "%s: node frame %d has no name\n", file, count; bad = 1 }
      if (!type) { printf "%s: node frame %d has no supported type\n", file, count; bad = 1 }
    }
    /^node \{$/ { count++; name = 0; type = 0; next }
    /^  name: ".+"$/ { name = 1 }
    /^  type: (COMP_NODE|COMM_SEND_NODE|COMM_RECV_NODE|COMM_COLL_NODE)$/ { type = 1 }
    /^\}$/ { check() }
    END {
      if (count != want) { printf "%s: decoded %d nodes, framed %d\n", file, count, want; bad = 1 }
      exit bad
    }' <<<"$text" >&2 || fail "$et: node check failed"
  total=$((total + n))
done
echo "protoc_decode: ${#files[@]} files, $total frames decoded"
