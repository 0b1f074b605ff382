#!/usr/bin/env bash
# `ringprof run` reports how the command ended, and when ringprof itself is
# killed with SIGKILL nothing it started survives: the command, its
# children and the ring directory are gone within seconds.
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need python3

echo "--- a command killed by a signal is reported as such"
"${ringprof}" run --output-dir="${tmp}/segv" -- sh -c 'kill -SEGV $$' \
  >"${tmp}/segv.log" 2>&1
status=$?
cat "${tmp}/segv.log"
[[ ${status} -eq 139 ]] || fail "exit status ${status}, want 139"
grep -q "sh was killed by signal 11 (SIGSEGV" "${tmp}/segv.log" ||
  fail "the signal is not reported"

echo "--- kill -KILL of ringprof run"
# A command with a child of its own, both allocating (so both have rings).
alloc='import time
x = []
while True:
    x.append(bytearray(65536)); x = x[-64:]; time.sleep(0.001)'
"${ringprof}" run --log-level=debug --output-dir="${tmp}/out" -- \
  bash -c "python3 -c '${alloc}' & exec python3 -c '${alloc}'" \
  >"${tmp}/run.log" 2>&1 &
run_pid=$!
wait_for 30 bash -c "(( \$(grep -c 'following ' ${tmp}/run.log) >= 2 ))" ||
  fail "the command's rings were not followed: $(cat "${tmp}/run.log")"
dir=$(followed_ring_dir "${tmp}/run.log")
# ringprof's descendants: the supervisor, the command, its child.
descendants() {
  local pid=$1 child
  for child in $(pgrep -P "${pid}"); do
    echo "${child}"
    descendants "${child}"
  done
}
pids=$(descendants "${run_pid}" | tr '\n' ' ')
echo "ringprof ${run_pid}, descendants ${pids}, rings in ${dir}"
(($(echo "${pids}" | wc -w) >= 3)) || fail "expected 3 descendants: ${pids}"
kill -KILL "${run_pid}"
all_gone() {
  local pid
  for pid in ${pids}; do kill -0 "${pid}" 2>/dev/null && return 1; done
  [[ ! -e "${dir}" ]]
}
wait_for 10 all_gone || {
  ps -o pid,ppid,stat,cmd -p "${pids// /,}" || true
  ls -la "${dir}" || true
  fail "left behind after ringprof was killed"
}
echo PASS
