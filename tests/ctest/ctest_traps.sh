#!/usr/bin/env bash
# Issue 24 D13: cli_serving's scratch directory vanished mid-test under
# ctest -j2. The cause: bash runs the script's EXIT trap in a forked child
# too when the child is killed by a signal before it execs its command (or
# while it evaluates a $(...)), so a SIGTERM sent to `cmd &` too early ran
# `rm -rf "$out"` in the child while the script went on. Every scratch
# directory's trap must therefore act in the script's own shell only
# ([[ $BASHPID == $$ ]]). This test takes each tests/ctest script's own
# EXIT trap line (and lib/common.bash's), installs it over a scratch
# directory, kills a child shell of it with SIGTERM and checks the
# directory is still there; then lets the shell exit and checks the trap
# removed it. A control with the old, unguarded trap must lose its
# directory (the hazard is real with this bash), so the test cannot pass
# by never running the trap.
set -u
dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }

# check TRAP_LINE: prints "kept removed", "lost ...", etc.
check() {
  local d; d=$(mktemp -d)
  echo keep >"$d/keep"
  # out, WORK and work: the names the scripts give their scratch directory.
  # The child evaluates a $(...) (as `y=$(...) &` does) and is killed there.
  bash -c 'out=$1 WORK=$1 work=$1; eval "$2"
    y=$(sleep 5) &
    sleep 0.3; kill -TERM $!; wait $! 2>/dev/null
    [[ -f $1/keep ]] && echo -n "kept " || echo -n "lost "' _ "$d" "$1"
  [[ -e $d ]] && { echo "left"; rm -rf "$d"; } || echo "removed"
}

# Control: the old trap is run by the killed child, which deletes the directory.
r=$(check "trap 'rm -rf \"\$out\"' EXIT")
[[ $r == "lost removed" ]] || fail "control (unguarded trap): expected the child to delete the directory, got '$r'"

n=0
for f in "$dir"/*.sh "$dir"/lib/*.bash; do
  while IFS= read -r line; do
    n=$((n + 1))
    r=$(check "$line")
    [[ $r == "kept removed" ]] || fail "$(basename "$f"): trap '$line': $r (expected: kept by the killed child, removed at exit)"
  done < <(grep -E "^trap '.*rm -rf.*' EXIT" "$f")
  # A scratch directory removed by a trap written any other way escapes the check above.
  if grep -E '^\s*trap\b.*rm -rf' "$f" | grep -vqE "^trap '.*rm -rf.*' EXIT"; then fail "$(basename "$f"): a trap this test cannot check"; fi
done
(( n >= 7 )) || fail "found only $n traps to check"
echo "$n traps checked, $failures failure(s)"
[[ $failures -eq 0 ]]
