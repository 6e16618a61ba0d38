#!/usr/bin/env bash
# The short fuzz run of CI (issue 13 item 13; docs/promises.md "Fuzzing"):
# builds the job-parser and trace-reader libFuzzer targets under ASan +
# UBSan (tests/fuzz/run.sh, into build/fuzz) and runs each for 20 s from
# the seed corpus. Fails on a crash, a sanitizer report or a timeout, and
# when clang's libFuzzer is missing (.ci/setup installs clang-14 and
# libclang-rt-14-dev).
set -u
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
exec bash "$root/tests/fuzz/run.sh" "${STAGECRAFT_FUZZ_SECONDS:-20}" "${STAGECRAFT_CLI:?set STAGECRAFT_CLI}"
