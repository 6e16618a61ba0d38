# Shared preamble of the CLI test scripts (sourced, not a test itself):
# the CLI under test, a scratch directory removed on exit, failure counting.
set -u
CLI="${STAGECRAFT_CLI:?set STAGECRAFT_CLI to the stagecraft binary}"
WORK="$(mktemp -d)"
# Removed by the script's own shell only ($BASHPID == $$). Bash runs the
# EXIT trap in a forked child too when the child is killed by a signal
# before it execs its command (or while it evaluates a $(...)): a test that
# sends SIGTERM to `cmd &` too early (the cause of issue 24 D13: cli_serving's
# wait saw the previous run's pause line in a shared stderr file) would
# otherwise delete the whole scratch directory under the running test.
# tests/ctest/ctest_traps.sh checks this for every script.
trap '[[ $BASHPID == $$ ]] && rm -rf "$WORK"' EXIT
cd "$WORK"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
