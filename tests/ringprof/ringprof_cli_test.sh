#!/usr/bin/env bash
# The ringprof command line around the pipeline: startup errors, flags from
# the environment, exit statuses and signal forwarding of `run`, the
# sidecar mode `collect` ended by SIGTERM, `dump` and `diff`.
set -euo pipefail

runfiles="${TEST_SRCDIR}/ringprof"
ringprof="${runfiles}/collector/ringprof"
hotloop="${runfiles}/examples/hotloop/hotloop"
emitter="${runfiles}/emitter/libringprof.so"
tmp="${TEST_TMPDIR}"
cd "${tmp}"

fail() { echo "FAIL: $*" >&2; exit 1; }
# Runs a command, recording its exit status in $status and output in $log.
run() { status=0; "$@" >"${tmp}/log" 2>&1 || status=$?; log=$(cat "${tmp}/log"); }

echo "--- an unwritable output directory is a startup error"
touch "${tmp}/a-file"
run "${ringprof}" run --output-dir="${tmp}/a-file/out" -- true
[[ ${status} -eq 2 ]] || fail "status ${status}, want 2: ${log}"
[[ "${log}" == *"a-file/out"* ]] || fail "error does not name the directory: ${log}"

echo "--- flags come from RINGPROF_* variables; bad values are named"
run env RINGPROF_TICK=soon "${ringprof}" run -- true
[[ ${status} -eq 2 && "${log}" == *RINGPROF_TICK* ]] || fail "${status}: ${log}"
run env RINGPROF_WINDOW=15ms "${ringprof}" run -- true
[[ ${status} -eq 2 && "${log}" == *"--window"* ]] || fail "${status}: ${log}"

echo "--- --help documents the flags"
run "${ringprof}" --help
for flag in ring_dir output_dir tick max_distance idle_frame keep_rings symbols_dir; do
  [[ "${log}" == *"--${flag}"* ]] || fail "--help does not list --${flag}"
done

echo "--- run passes the command's exit status through"
run "${ringprof}" run --output-dir="${tmp}/o1" -- sh -c 'exit 5'
[[ ${status} -eq 5 ]] || fail "status ${status}, want 5: ${log}"
run "${ringprof}" run --output-dir="${tmp}/o2" -- sh -c 'kill -TERM $$'
[[ ${status} -eq 143 ]] || fail "status ${status}, want 143: ${log}"
run "${ringprof}" run --output-dir="${tmp}/o3" -- /nonexistent/command
[[ ${status} -eq 127 ]] || fail "status ${status}, want 127: ${log}"

echo "--- run forwards SIGTERM to the command"
"${ringprof}" run --output-dir="${tmp}/o4" -- sleep 30 >"${tmp}/log" 2>&1 &
pid=$!
sleep 0.5
start=${SECONDS}
kill -TERM "${pid}"
status=0
wait "${pid}" || status=$?
[[ ${status} -eq 143 ]] || fail "status ${status}, want 143 (sleep killed by SIGTERM)"
(( SECONDS - start < 10 )) || fail "ringprof took $((SECONDS - start)) s to stop"

echo "--- collect: a sidecar following a directory until SIGTERM"
mkdir -p "${tmp}/rings"
"${ringprof}" collect --ring-dir="${tmp}/rings" --output-dir="${tmp}/side" \
  >"${tmp}/collect.log" 2>&1 &
collector=$!
LD_PRELOAD="${emitter}" RINGPROF_DIR="${tmp}/rings" RINGPROF_SERVICE_NAME=side-svc \
  "${hotloop}" 20 0
LD_PRELOAD="${emitter}" RINGPROF_DIR="${tmp}/rings" RINGPROF_SERVICE_NAME=side-svc \
  "${hotloop}" 20 0
sleep 1
kill -TERM "${collector}"
status=0
wait "${collector}" || status=$?
cat "${tmp}/collect.log"
[[ ${status} -eq 0 ]] || fail "collect exited ${status}"
n=$(ls "${tmp}"/side/side-svc/memory/ | cut -d. -f1 | sort -u | wc -l)
[[ ${n} -ge 2 ]] || fail "want window profiles of two processes, found ${n}"
[[ -z "$(ls "${tmp}/rings")" ]] || fail "ring files of ended processes were not deleted"

echo "--- dump: what a kept ring file holds"
run "${ringprof}" run --keep-rings --ring-dir="${tmp}/kept" --output-dir="${tmp}/o5" \
  -- "${hotloop}" 10
[[ ${status} -eq 0 ]] || fail "run --keep-rings: ${log}"
ring=$(ls "${tmp}"/kept/*.ring | head -1)
[[ -n "${ring}" ]] || fail "--keep-rings left no ring file"
run "${ringprof}" dump --quiet "${ring}"
[[ ${status} -eq 0 && "${log}" == *AllocSample* && "${log}" == *"process ended"* ]] ||
  fail "dump: ${status}: ${log}"
echo "${log}"

echo "--- diff: two runs, one HTML diff flame graph"
"${ringprof}" run --output-dir="${tmp}/base" -- "${hotloop}" 10 >/dev/null 2>&1
run "${ringprof}" diff "${tmp}/base/memory.pb.gz" "${tmp}/o5/memory.pb.gz" \
  -o "${tmp}/diff.html"
[[ ${status} -eq 0 ]] || fail "diff: ${log}"
grep -q HotLoop "${tmp}/diff.html" || fail "diff.html does not name HotLoop"
run "${ringprof}" diff "${tmp}/base/memory.pb.gz" "${tmp}/a-file" -o "${tmp}/x.html"
[[ ${status} -ne 0 && "${log}" == *a-file* ]] || fail "diff of a non-profile: ${log}"

echo PASS
