# Shared preamble of the CLI test scripts (sourced, not a test itself):
# the CLI under test, a scratch directory removed on exit, failure counting.
set -u
CLI="${STAGECRAFT_CLI:?set STAGECRAFT_CLI to the stagecraft binary}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"
failures=0
fail() { echo "FAIL $*"; failures=$((failures + 1)); }
