#!/usr/bin/env bash
# The real `ringprof` binary shipping to a real Grafana Pyroscope v2.2.1
# (tests/pyroscope_server) behind a fault proxy, through an outage and a
# restart:
#  1. `ringprof run` profiles examples/hotloop while the proxy's port is
#     closed: at exit its profiles land in the spool (one file each) and
#     nothing reached the server;
#  2. the port opens; a new `ringprof collect` with the same spool replays
#     every spooled profile, and exits promptly on SIGTERM with an empty
#     spool; read back from the server, every window of the run is there
#     exactly once (totals and hot functions equal the run's local
#     profiles: nothing lost, nothing stored twice).
# Every wait polls recorded state with a deadline.
set -euo pipefail

RINGPROF=collector/ringprof
EMITTER=emitter/libringprof.so
HOTLOOP=examples/hotloop/hotloop
PROXY=tests/pyroscope_server/fault_proxy.py
source tests/pyroscope_server/server_lib.sh
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/shipping.XXXXXX")
proxy_pid=""
collect_pid=""
cleanup() {
  [[ -n "${collect_pid}" ]] && kill -KILL "${collect_pid}" 2>/dev/null || true
  [[ -n "${proxy_pid}" ]] && kill "${proxy_pid}" 2>/dev/null || true
  stop_pyroscope
}
trap cleanup EXIT

fail() {
  echo "FAIL: $*" >&2
  for f in "${work}"/*.log; do echo "--- ${f}" >&2; tail -20 "${f}" >&2; done
  exit 1
}

# wait_for SECONDS COMMAND...: polls every 0.1 s.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

json_field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
control() { curl -sf -X "$1" "${control_url}$2"; }
forwarded() { control GET /stats | json_field pushes_forwarded; }
spool_files() { find "${work}/spool" -name '*.rpspool' 2>/dev/null | wc -l; }
spool_empty() { [[ $(spool_files) -eq 0 ]]; }
exited() { ! kill -0 "$1" 2>/dev/null; }

require_pyroscope
start_pyroscope "${work}/server" || fail "the Pyroscope server did not start"
/usr/bin/python3 "${PROXY}" "${pyroscope_url}" --start-down \
  --ready-file "${work}/proxy.json" >"${work}/proxy.log" 2>&1 &
proxy_pid=$!
wait_for 30 test -s "${work}/proxy.json" || fail "the fault proxy did not start"
url=$(json_field url <"${work}/proxy.json")
control_url=$(json_field control <"${work}/proxy.json")

# 1. Outage: everything goes to the spool.
(cd "${work}" && "${OLDPWD}/${RINGPROF}" run --server-address="${url}" \
  --spool-dir="${work}/spool" --emitter="${OLDPWD}/${EMITTER}" \
  --output-dir="${work}/out" --service=shipping-outage \
  -- "${OLDPWD}/${HOTLOOP}" >"${work}/run.log" 2>&1) || fail "ringprof run failed"
spooled=$(spool_files)
((spooled >= 2)) || fail "expected a CPU and a memory profile in the spool, found ${spooled}"
[[ $(forwarded) == 0 ]] || fail "profiles reached the server during the outage"
grep -q "ringprof: warning: upload of a" "${work}/run.log" ||
  fail "the outage was not logged"

# 2. Back up: a new collector replays the spool.
control POST /up >/dev/null
mkdir -p "${work}/rings"
"${RINGPROF}" collect --ring-dir="${work}/rings" --server-address="${url}" \
  --spool-dir="${work}/spool" --metrics-port=0 >"${work}/collect.log" 2>&1 &
collect_pid=$!
wait_for 60 spool_empty || fail "spool not replayed: $(spool_files) left"
grep -q "replaying ${spooled} spooled profiles" "${work}/collect.log" ||
  fail "replay not logged"

kill -TERM "${collect_pid}"
wait_for 15 exited "${collect_pid}" ||
  fail "ringprof collect did not exit on SIGTERM"
rc=0
wait "${collect_pid}" || rc=$?
collect_pid=""
[[ "${rc}" == 0 ]] || fail "ringprof collect exited with ${rc} after SIGTERM"

[[ $(forwarded) == "${spooled}" ]] ||
  fail "expected ${spooled} pushes, the proxy forwarded $(forwarded)"
readback "${work}/out" shipping-outage >"${work}/readback.log" 2>&1 ||
  { cat "${work}/readback.log"; fail "the server does not hold the run's profiles once"; }
cat "${work}/readback.log"
echo "PASS: ${spooled} profiles spooled during the outage, replayed once by the next collector"
