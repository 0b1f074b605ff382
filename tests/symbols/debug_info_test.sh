#!/usr/bin/env bash
# Debug info where distributions put it, under `ringprof run`:
#   1. installed debug packages by build-id: Debian's libc6-dbg in
#      /usr/lib/debug/.build-id/xx/yyyy.debug names glibc's internal
#      functions, with malloc.c lines;
#   2. .gnu_debuglink in each of GDB's places: beside the binary, in .debug/
#      there, and under /usr/lib/debug/<the binary's directory> as the
#      workload sees it (a private mount namespace whose /usr/lib/debug is
#      not the collector's), with a stripped binary whose link finds nothing
#      beside them.
# (debuginfod against a real server: debuginfod_test.)
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/symbols/lib.sh"
need objcopy
hotloop="${runfiles}/examples/hotloop/hotloop"
rounds=150

echo "--- libc6-dbg: glibc's debug file by build-id"
libc=$(ldd "${hotloop}" | awk '$1 == "libc.so.6" { print $3 }')
libc_id=$(readelf -n "${libc}" | awk '/Build ID:/ { print $3 }')
libc_debug="/usr/lib/debug/.build-id/${libc_id:0:2}/${libc_id:2}.debug"
[[ -f "${libc_debug}" ]] || fail "${libc_debug} missing: libc6-dbg is not installed (run tools/setup)"
profile libc "${hotloop}" "${rounds}"
internal='^(_int_malloc|_int_free|malloc_consolidate|unlink_chunk|sysmalloc|systrim|_int_realloc)$'
grep -E "${internal}" "${tmp}/libc.names" ||
  fail "no glibc-internal function named: $(cat "${tmp}/libc.names")"
grep -E ' (_int_malloc|_int_free|malloc_consolidate) .*/malloc\.c:[0-9]+' "${tmp}/libc.raw" ||
  fail "glibc's internal functions have no malloc.c line: $(grep -E '_int_|malloc' "${tmp}/libc.raw")"

echo "--- .gnu_debuglink"
objcopy --only-keep-debug "${hotloop}" "${tmp}/hotloop.debug" || fail "objcopy"
strip --strip-all -o "${tmp}/hotloop.stripped" "${hotloop}"
# The link is the debug file's name and CRC-32, read where the binary is.
(cd "${tmp}" && objcopy --add-gnu-debuglink=hotloop.debug hotloop.stripped hotloop.linked) ||
  fail "objcopy --add-gnu-debuglink"
place_binary() {  # DIR: the linked binary as DIR/hotloop
  mkdir -p "$1"
  cp "${tmp}/hotloop.linked" "$1/hotloop"
}
# named NAME: the profile names HotLoop, with hotloop.cc lines.
named() {
  grep -F "HotLoop" "${tmp}/$1.raw" | grep -q "hotloop\.cc:[0-9]" ||
    fail "$1: HotLoop not named with its hotloop.cc lines: $(cat "${tmp}/$1.names")"
}
place_binary "${tmp}/bin/beside"
cp "${tmp}/hotloop.debug" "${tmp}/bin/beside/hotloop.debug"
profile beside "${tmp}/bin/beside/hotloop" "${rounds}"
named beside
place_binary "${tmp}/bin/dotdebug"
mkdir -p "${tmp}/bin/dotdebug/.debug"
cp "${tmp}/hotloop.debug" "${tmp}/bin/dotdebug/.debug/hotloop.debug"
profile dotdebug "${tmp}/bin/dotdebug/hotloop" "${rounds}"
named dotdebug
place_binary "${tmp}/bin/nowhere"
profile nowhere "${tmp}/bin/nowhere/hotloop" "${rounds}"
! grep -q HotLoop "${tmp}/nowhere.names" ||
  fail "HotLoop named without its debug file: the checks above prove nothing"
grep -qF '[hotloop] 0x' "${tmp}/nowhere.names" ||
  fail "the stripped hotloop shows no function start: $(cat "${tmp}/nowhere.names")"

# Under /usr/lib/debug as the workload sees it: in its own mount namespace,
# a directory of this test is its /usr/lib/debug; the collector's is left
# as it is (and has no such file). hotloop is a child started once the
# namespace is set up, as a container's processes are (a process that
# moves to another namespace after its ring was seen is read through the
# root it had then). A background sleep keeps the namespace, and so its
# /usr/lib/debug mount, alive after hotloop exits, as a container's other
# processes do: the collector names the last window's frames after the
# workload has gone (a namespace gone by then takes its mounts with it).
if unshare --mount --propagation private true 2>/dev/null; then
  place_binary "${tmp}/bin/global"
  mkdir -p "${tmp}/debugroot/${tmp}/bin/global"
  cp "${tmp}/hotloop.debug" "${tmp}/debugroot/${tmp}/bin/global/hotloop.debug"
  [[ ! -e "/usr/lib/debug/${tmp}/bin/global/hotloop.debug" ]] || fail "the host has the file"
  profile global unshare --mount --propagation private \
    sh -c 'mount --bind "$1" /usr/lib/debug || exit 1
           sleep 300 & echo $! >"$4"; "$2" "$3"' sh \
    "${tmp}/debugroot" "${tmp}/bin/global/hotloop" "${rounds}" "${tmp}/holder"
  kill "$(cat "${tmp}/holder")" 2>/dev/null
  named global
else
  echo "unshare --mount is not permitted here (not root?): the workload-root" \
    "/usr/lib/debug place is checked by symbolizer_test only"
fi
echo PASS
