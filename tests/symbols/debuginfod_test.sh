#!/usr/bin/env bash
# debuginfod against Debian's real server: `debuginfod -F` serves the debug
# file of a stripped hotloop (no .gnu_debuglink, nothing under
# /usr/lib/debug); with DEBUGINFOD_URLS naming it, `ringprof run` names
# HotLoop with its hotloop.cc lines, and the server logs the collector's
# request; with --debuginfod=false, nothing is asked and HotLoop is not
# named. The test runs in a network namespace of its own when it may (root):
# the server, which listens on every interface, then has only loopback.
set -uo pipefail
if [[ -z ${RINGPROF_TEST_NETNS:-} ]] && unshare --net true 2>/dev/null; then
  exec env RINGPROF_TEST_NETNS=1 unshare --net -- "$0" "$@"
fi
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/symbols/lib.sh"
if [[ -n ${RINGPROF_TEST_NETNS:-} ]]; then
  ip link set lo up || fail "ip link set lo up"
else
  echo "unshare --net is not permitted here (not root?): the server runs on this machine's network"
fi
need debuginfod
need debuginfod-find
need objcopy
hotloop="${runfiles}/examples/hotloop/hotloop"
rounds=150

mkdir -p "${tmp}/served" "${tmp}/bin"
objcopy --only-keep-debug "${hotloop}" "${tmp}/served/hotloop.debug" || fail "objcopy"
strip --strip-all -o "${tmp}/bin/hotloop" "${hotloop}"
id=$(readelf -n "${hotloop}" | awk '/Build ID:/ { print $3 }')
[[ -n "${id}" ]] || fail "hotloop has no build-id"

port=$(free_port)
debuginfod -F -p "${port}" -d "${tmp}/debuginfod.sqlite" -t 0 -g 0 \
  "${tmp}/served" >"${tmp}/debuginfod.log" 2>&1 &
server=$!
trap 'kill "${server}" 2>/dev/null; wait "${server}" 2>/dev/null' EXIT
url="http://127.0.0.1:${port}"
# Ready once it has indexed the file: asked by its own client, each time
# with a new cache (the client remembers a miss for 10 minutes).
probe() {
  DEBUGINFOD_URLS="${url}" DEBUGINFOD_CACHE_PATH=$(mktemp -d -p "${tmp}") \
    debuginfod-find debuginfo "${id}"
}
wait_for 60 probe ||
  fail "debuginfod did not serve ${id} within 60 s: $(tail -5 "${tmp}/debuginfod.log")"
requests() { grep -c "GET /buildid/${id}/debuginfo 200" "${tmp}/debuginfod.log"; }
before=$(requests)

export DEBUGINFOD_URLS="${url}" DEBUGINFOD_CACHE_PATH="${tmp}/cache" DEBUGINFOD_TIMEOUT=30
profile served "${tmp}/bin/hotloop" "${rounds}"
grep -F "HotLoop" "${tmp}/served.raw" | grep -q "hotloop\.cc:[0-9]" ||
  fail "HotLoop not named with its hotloop.cc lines through debuginfod: $(cat "${tmp}/served.names")"
(($(requests) == before + 1)) ||
  fail "the server saw $(($(requests) - before)) requests for the debuginfo, not 1: $(tail "${tmp}/debuginfod.log")"
[[ -s "${tmp}/cache/${id}/debuginfo" ]] || fail "no debuginfo in DEBUGINFOD_CACHE_PATH"

rm -rf "${tmp}/cache"
before=$(requests)
RUN_FLAGS=(--debuginfod=false)
profile unasked "${tmp}/bin/hotloop" "${rounds}"
! grep -q HotLoop "${tmp}/unasked.names" ||
  fail "HotLoop named with --debuginfod=false: the check above proves nothing"
(($(requests) == before)) || fail "--debuginfod=false still asked the server"
echo PASS
