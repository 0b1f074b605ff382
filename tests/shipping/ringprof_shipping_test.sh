#!/usr/bin/env bash
# The real `ringprof` binary shipping to the local Pyroscope receiver
# (tests/pyroscope_receiver), through an outage and a restart:
#  1. `ringprof run` profiles examples/hotloop while the server is down: at
#     exit its profiles land in the spool (one file each) and nothing is
#     accepted;
#  2. the server comes back; a new `ringprof collect` with the same spool
#     replays every spooled profile (exactly once, accepted by the
#     receiver's Pyroscope rules), reports it on /metrics, and exits
#     promptly on SIGTERM with an empty spool.
# Every wait polls recorded state with a deadline.
set -euo pipefail

RINGPROF=collector/ringprof
EMITTER=emitter/libringprof.so
HOTLOOP=examples/hotloop/hotloop
RECEIVER=tests/pyroscope_receiver/receiver.py
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/shipping.XXXXXX")
receiver_pid=""
collect_pid=""
cleanup() {
  [[ -n "${collect_pid}" ]] && kill -KILL "${collect_pid}" 2>/dev/null || true
  [[ -n "${receiver_pid}" ]] && kill "${receiver_pid}" 2>/dev/null || true
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
control() { curl -sf -X "$1" "http://127.0.0.1:${control_port}$2"; }
accepted() { control GET /stats | json_field accepted; }
spool_files() { find "${work}/spool" -name '*.rpspool' 2>/dev/null | wc -l; }
accepted_at_least() { [[ $(accepted) -ge $1 ]]; }
spool_empty() { [[ $(spool_files) -eq 0 ]]; }
exited() { ! kill -0 "$1" 2>/dev/null; }

/usr/bin/python3 "${RECEIVER}" --start-down --exit-with-parent \
  --ready-file "${work}/ready.json" >"${work}/receiver.log" 2>&1 &
receiver_pid=$!
wait_for 30 test -f "${work}/ready.json" || fail "receiver did not start"
url=$(json_field url <"${work}/ready.json")
control_port=$(json_field control_port <"${work}/ready.json")

# 1. Outage: everything goes to the spool.
(cd "${work}" && "${OLDPWD}/${RINGPROF}" run --server-address="${url}" \
  --spool-dir="${work}/spool" --emitter="${OLDPWD}/${EMITTER}" \
  -- "${OLDPWD}/${HOTLOOP}" >"${work}/run.log" 2>&1) || fail "ringprof run failed"
spooled=$(spool_files)
((spooled >= 2)) || fail "expected a CPU and a memory profile in the spool, found ${spooled}"
[[ $(accepted) == 0 ]] || fail "the receiver accepted profiles while down"
grep -q "ringprof: warning: upload of a" "${work}/run.log" ||
  fail "the outage was not logged"

# 2. Back up: a new collector replays the spool.
control POST /up >/dev/null
mkdir -p "${work}/rings"
"${RINGPROF}" collect --ring-dir="${work}/rings" --server-address="${url}" \
  --spool-dir="${work}/spool" --metrics-port=0 >"${work}/collect.log" 2>&1 &
collect_pid=$!
wait_for 30 accepted_at_least "${spooled}" ||
  fail "spool not replayed: $(accepted) of ${spooled} accepted"
wait_for 10 spool_empty || fail "spool not emptied"
grep -q "replaying ${spooled} spooled profiles" "${work}/collect.log" ||
  fail "replay not logged"

kill -TERM "${collect_pid}"
wait_for 15 exited "${collect_pid}" ||
  fail "ringprof collect did not exit on SIGTERM"
rc=0
wait "${collect_pid}" || rc=$?
collect_pid=""
[[ "${rc}" == 0 ]] || fail "ringprof collect exited with ${rc} after SIGTERM"

stats=$(control GET /accepted)
count=$(/usr/bin/python3 -c "import json,sys; print(len(json.loads(sys.argv[1])))" "${stats}")
ids=$(/usr/bin/python3 -c "import json,sys; print(len({e['id'] for e in json.loads(sys.argv[1])}))" "${stats}")
[[ "${count}" == "${spooled}" && "${ids}" == "${spooled}" ]] ||
  fail "expected ${spooled} distinct profiles exactly once, got ${count} (${ids} ids)"
names=$(/usr/bin/python3 -c "import json,sys; print(' '.join(sorted({e['labels']['__name__'] for e in json.loads(sys.argv[1])})))" "${stats}")
[[ "${names}" == "memory process_cpu" ]] || fail "unexpected series: ${names}"
echo "PASS: ${spooled} profiles spooled during the outage, replayed once by the next collector"
