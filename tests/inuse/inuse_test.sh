#!/usr/bin/env bash
# In-use heap end to end (README.md): keep_churn keeps 64 MiB from
# KeepBlocks and churns 1 GiB from ChurnWorker threads (frees on other
# threads, realloc, fork children freeing the kept blocks in their copy).
# A 32 KiB sampling interval (~2000 live samples for the kept bytes) and,
# where a collector is late or restarted, small rings (256 KiB: the
# allocation records are overwritten long before anyone reads them). Three
# ways to look:
#   late:    the collector starts after the churn; the workload is then
#            SIGKILLed (no exit sweep): its last window must be right from
#            the periodic sweep alone;
#   restart: a collector follows from the start, is stopped, and a second
#            one takes over; the same check on the second one's output;
#   run:     `ringprof run` to the end (default rings): live at exit in
#            memory.pb.gz, inuse.html and top.txt; shipped to a real
#            Grafana Pyroscope v2.2.1 (tests/pyroscope_server), which must
#            hold each window's in-use as that window's snapshot (never a
#            sum of windows) and the allocations' totals.
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
ringprof="${root}/collector/ringprof"
emitter="${root}/emitter/libringprof.so"
workload="${root}/tests/inuse/keep_churn"
check="${root}/tests/inuse/check_inuse.py"
work=$(mktemp -d /dev/shm/ringprof-inuse.XXXXXX 2>/dev/null ||
  mktemp -d "${TEST_TMPDIR:-/tmp}/ringprof-inuse.XXXXXX")
pids=()
source "${root}/tests/pyroscope_server/server_lib.sh"
cleanup() {
  for pid in "${pids[@]}"; do kill -9 "${pid}" 2>/dev/null; done
  stop_pyroscope
  rm -rf "${work}"
}
trap cleanup EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

keep_mib=64
keep_bytes=$((keep_mib << 20))
export RINGPROF_SAMPLE_BYTES=32768 RINGPROF_MIN_SAMPLES_PER_SEC=0

# Waits (bounded) until FILE contains WORD.
wait_for() {
  local file=$1 word=$2 seconds=$3
  for ((i = 0; i < seconds * 10; ++i)); do
    grep -q "${word}" "${file}" 2>/dev/null && return 0
    sleep 0.1
  done
  cat "${file}" 2>/dev/null
  fail "timed out waiting for '${word}' in ${file}"
}

start_workload() {  # DIR OUT HOLD -> sets workload_pid
  mkdir -p "$1"
  LD_PRELOAD="${emitter}" RINGPROF_DIR="$1" RINGPROF_RING_KIB=256 \
    "${workload}" wait "${keep_mib}" 1024 "$3" >"$2" 2>&1 &
  workload_pid=$!
  pids+=("${workload_pid}")
}

start_collector() {  # RINGDIR OUTDIR LOG -> sets collector_pid
  "${ringprof}" collect --ring-dir="$1" --output-dir="$2" --window=2s \
    >"$3" 2>&1 &
  collector_pid=$!
  pids+=("${collector_pid}")
}

stop_collector() {  # PID LOG
  kill -TERM "$1"
  for ((i = 0; i < 300; ++i)); do
    kill -0 "$1" 2>/dev/null || break
    sleep 0.1
  done
  kill -0 "$1" 2>/dev/null && fail "collector did not stop"
  wait "$1" || { cat "$2"; fail "collector exited with $?"; }
}

# The newest memory window of `pid` under OUTDIR.
last_window() {
  ls "$1"/*/memory/"$2".*.pb.gz 2>/dev/null | sort | tail -1
}

failures=0

# --- late start -----------------------------------------------------------
start_workload "${work}/late" "${work}/late.out" 14
wait_for "${work}/late.out" steady 120
start_collector "${work}/late" "${work}/late-profiles" "${work}/late.log"
wait_for "${work}/late.out" done 60
kill -9 "${workload_pid}"
wait "${workload_pid}" 2>/dev/null
sleep 2
stop_collector "${collector_pid}" "${work}/late.log"
window=$(last_window "${work}/late-profiles" "${workload_pid}")
[[ -n ${window} ]] || { cat "${work}/late.log"; fail "late: no memory window"; }
/usr/bin/python3 "${check}" "${window}" "${keep_bytes}" late || ((++failures))

# --- restart --------------------------------------------------------------
mkdir -p "${work}/restart"
start_collector "${work}/restart" "${work}/first" "${work}/first.log"
first=${collector_pid}
start_workload "${work}/restart" "${work}/restart.out" 14
wait_for "${work}/restart.out" steady 120
stop_collector "${first}" "${work}/first.log"
start_collector "${work}/restart" "${work}/second" "${work}/second.log"
wait_for "${work}/restart.out" done 60
kill -9 "${workload_pid}"
wait "${workload_pid}" 2>/dev/null
sleep 2
stop_collector "${collector_pid}" "${work}/second.log"
window=$(last_window "${work}/second" "${workload_pid}")
[[ -n ${window} ]] || { cat "${work}/second.log"; fail "restart: no window"; }
/usr/bin/python3 "${check}" "${window}" "${keep_bytes}" restart ||
  ((++failures))

# --- run: live at exit, and shipped ----------------------------------------
# Shipped to the real server where this machine has one (tools/pyroscope/
# build); without it the run is checked locally and the readback skipped.
# The shutdown deadline is long: on a loaded machine the real server can take
# more than the default 10 s to accept the last windows of every child.
server_args=()
if pyroscope_available; then
  start_pyroscope "${work}/server" || fail "the Pyroscope server did not start"
  server_args=(--server-address="${pyroscope_url}")
fi
timeout --kill-after=5 300 "${ringprof}" run --emitter="${emitter}" \
  --output-dir="${work}/run" "${server_args[@]}" \
  --service=inuse-run --window=2s --shutdown-deadline=60s -- \
  "${workload}" exit "${keep_mib}" 1024 1 \
  >"${work}/run.log" 2>&1 || { cat "${work}/run.log"; fail "run failed"; }
if ((${#server_args[@]})); then
  readback "${work}/run" inuse-run || ((++failures))
else
  echo "SKIPPED: run: the readback from a real Pyroscope (none on this machine: tools/pyroscope/build)"
fi
/usr/bin/python3 "${check}" "${work}/run/memory.pb.gz" "${keep_bytes}" run ||
  ((++failures))
[[ -s ${work}/run/inuse.html ]] || fail "run: no inuse.html"
grep -q "KeepBlocks" "${work}/run/inuse.html" || fail "inuse.html lacks KeepBlocks"
grep -A5 "Still allocated at the end" "${work}/run/top.txt" |
  grep -q KeepBlocks || { cat "${work}/run/top.txt"; fail "top.txt: no leak table"; }
grep -q "live at exit" "${work}/run.log" || fail "run did not print inuse.html"

# --- diff: growth ---------------------------------------------------------
"${ringprof}" diff --sample-index=inuse_space "${work}/run/memory.pb.gz" \
  "${window}" -o "${work}/diff.html" >/dev/null 2>&1 || fail "diff failed"
grep -q KeepBlocks "${work}/diff.html" || fail "diff.html lacks KeepBlocks"
"${ringprof}" diff --sample-index=no_such "${window}" "${window}" \
  -o "${work}/x.html" 2>"${work}/bad.txt" && fail "diff took a bad type"
grep -q inuse_space "${work}/bad.txt" || fail "diff error lacks the types"

((failures == 0)) || fail "${failures} check(s) failed"
echo PASS
