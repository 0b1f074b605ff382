#!/usr/bin/env bash
# Runs an example workload briefly and checks that it exits 0 (its built-in
# correctness check passed) and prints its summary line. Under
# --config=asan/tsan this is what exercises the examples' threads.
#
#   smoke_test.sh BINARY SUMMARY_REGEX [ARGS...]
set -euo pipefail
binary=$1
pattern=$2
shift 2
out=$("${binary}" "$@")
echo "${out}"
if ! grep -Eq -- "${pattern}" <<<"${out}"; then
  echo "FAIL: summary does not match /${pattern}/" >&2
  exit 1
fi
