#!/usr/bin/env bash
# The emitter image's copier (copy.c): copies a file whole and atomically,
# with mode 0755, says what went wrong otherwise, and is a static
# executable without an interpreter or any shared library (the image has
# nothing else).
#
#   copy_test.sh [RUNNER...]   e.g. qemu-aarch64 -cpu max, for the aarch64
#                              build of the copier
set -uo pipefail

runner=("$@")
copier=$(cd "$(dirname "$0")" && pwd)/copier
copy() { "${runner[@]}" "${copier}" "$@"; }
tmp=$(mktemp -d "${TEST_TMPDIR:-/tmp}/copy_test.XXXXXX")
trap 'rm -rf "${tmp}"' EXIT
cd "${tmp}"
failures=0

check() {  # check DESCRIPTION COMMAND...
  local what=$1
  shift
  if "$@"; then
    echo "ok: ${what}"
  else
    echo "FAIL: ${what}"
    failures=$((failures + 1))
  fi
}

# A file larger than the copier's 64 KiB buffer, not a multiple of it.
head -c 200001 /dev/urandom >"src"
mkdir "dest"
umask 077
out=$(copy "src" "dest/lib.so" 2>&1)
status=$?
check "exit 0 (${status}: ${out})" test "${status}" -eq 0
check "the bytes arrive whole" cmp -s "src" "dest/lib.so"
check "mode 0755 whatever the umask ($(stat -c %a "dest/lib.so"))" \
  test "$(stat -c %a "dest/lib.so")" = 755
check "one line saying what was copied (${out})" \
  test "${out}" = "copy: src -> dest/lib.so (200001 bytes)"
check "no temporary file left" test "$(ls dest)" = lib.so

# Again over the existing file (an init container that runs twice).
echo replaced >"src2"
copy "src2" "dest/lib.so" >/dev/null 2>&1
check "replaces an existing destination" cmp -s "src2" "dest/lib.so"

expect_failure() {  # expect_failure STATUS MESSAGE ARGS...
  local want_status=$1 want=$2
  shift 2
  local got status
  got=$(copy "$@" 2>&1 >/dev/null)
  status=$?
  check "copy $* -> exit ${want_status}, '${want}' (${status}, '${got}')" \
    test "${status}" -eq "${want_status}" -a "${got}" = "${want}"
}
expect_failure 1 "copy: cannot open missing: ENOENT (errno 2)" \
  "missing" "dest/x"
got=$(copy "src" "nodir/x" 2>&1)
check "a missing directory is named, with ENOENT (${got})" \
  bash -c '[[ $1 == "copy: cannot create nodir/x.copy-"*": ENOENT (errno 2)" ]]' _ "${got}"
expect_failure 1 "copy: not a regular file: dest" "dest" "x"
expect_failure 2 "usage: copy SRC DEST" "src"
check "nothing left behind by the failures" test "$(ls dest)" = lib.so

headers=$(readelf -lW "${copier}")
dynamic=$(readelf -dW "${copier}")
check "static: no program interpreter" \
  bash -c '! grep -q INTERP <<<"$1"' _ "${headers}"
check "no shared library needed" bash -c '! grep -q NEEDED <<<"$1"' _ "${dynamic}"
size=$(stat -L -c %s "${copier}")
check "a few KB (${size} bytes)" test "${size}" -lt 65536
machine=$(readelf -hW "${copier}" | sed -n 's/^ *Machine: *//p')
echo "machine: ${machine}${runner:+, run by ${runner[*]}}"

if ((failures)); then
  echo "${failures} check(s) failed"
  exit 1
fi
echo "PASS"
