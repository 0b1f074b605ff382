#!/usr/bin/env bash
# Debian's redis-server (linked against jemalloc) under `ringprof run`:
# serves PING/SET/GET and a benchmark's load with the emitter preloaded,
# leaves a non-empty memory profile under its own name (redis-server, not
# the redis-check-rdb its symlink points to), and exits 0. With
# RINGPROF_DISABLE=1 it runs unchanged and writes nothing.
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need redis-server
need redis-cli
need redis-benchmark
need go
[[ "$(ldd "$(command -v redis-server)")" == *libjemalloc* ]] ||
  fail "this redis-server does not link jemalloc: the test would not cover another allocator"

port=$(free_port)
out="${tmp}/out"
timeout --kill-after=5 120 "${ringprof}" run --output-dir="${out}" \
  --log-level=debug -- redis-server --port "${port}" --bind 127.0.0.1 \
  --save "" --appendonly no >"${tmp}/run.log" 2>&1 &
run_pid=$!
wait_for 30 redis-cli -p "${port}" PING || {
  cat "${tmp}/run.log"
  fail "redis-server under the emitter does not answer PING"
}
[[ $(redis-cli -p "${port}" PING) == PONG ]] || fail "PING"
[[ $(redis-cli -p "${port}" SET greeting hello) == OK ]] || fail "SET"
[[ $(redis-cli -p "${port}" GET greeting) == hello ]] || fail "GET"
timeout 60 redis-benchmark -p "${port}" -n 20000 -d 4096 -t set,get,lpush -q \
  >"${tmp}/bench.log" 2>&1 || fail "redis-benchmark: $(tail -3 "${tmp}/bench.log")"
redis-cli -p "${port}" SHUTDOWN NOSAVE >/dev/null 2>&1
wait "${run_pid}"
status=$?
cat "${tmp}/run.log" | grep -v '^ ' | head -20
[[ ${status} -eq 0 ]] || fail "ringprof run exited ${status}"
grep -q "redis-server exited with status 0" "${tmp}/run.log" ||
  fail "run did not report redis-server's exit"
[[ -d "${out}/redis-server" ]] || fail "profiles not under the name redis-server: $(ls "${out}")"
[[ -s "${out}/memory.pb.gz" ]] || fail "no memory profile"
bytes=$(profile_total "${out}/memory.pb.gz" 2)
echo "memory profile: ${bytes} bytes allocated"
# 20000 SETs of 4 KiB values alone allocate 80 MB.
((bytes > 40000000)) || fail "memory profile holds only ${bytes} bytes"

echo "--- RINGPROF_DISABLE=1: unchanged, nothing written"
rings="${tmp}/disabled"
mkdir -p "${rings}"
port=$(free_port)
LD_PRELOAD="${emitter}" RINGPROF_DISABLE=1 RINGPROF_DIR="${rings}" \
  timeout --kill-after=5 60 redis-server --port "${port}" --bind 127.0.0.1 \
  --save "" --appendonly no >"${tmp}/disabled.log" 2>&1 &
redis_pid=$!
wait_for 30 redis-cli -p "${port}" PING || fail "disabled: no PING"
[[ $(redis-cli -p "${port}" SET k v) == OK ]] || fail "disabled: SET"
redis-cli -p "${port}" SHUTDOWN NOSAVE >/dev/null 2>&1
wait "${redis_pid}" || fail "disabled: redis-server exited $?"
[[ -z "$(ls -A "${rings}")" ]] || fail "disabled emitter wrote $(ls "${rings}")"
echo PASS
