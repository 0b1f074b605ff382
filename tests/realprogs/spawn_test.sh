#!/usr/bin/env bash
# Processes that never sample leave nothing behind; the ring directory stays
# under RINGPROF_DIR_MAX_MIB with no collector running; `ringprof run` of a
# spawn loop leaves no directory. (The spawn loop's CPU cost is measured by
# tools/bench spawn, not here.)
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
workloads="${runfiles}/examples/workloads"

echo "--- 200 /bin/true under the emitter, no collector: a ring only for a process that sampled"
rings="${tmp}/loop"
mkdir -p "${rings}"
LD_PRELOAD="${emitter}" RINGPROF_DIR="${rings}" timeout 120 \
  bash -c 'for i in $(seq 200); do /bin/true; done' || fail "loop exited $?"
ls -la "${rings}"
# bash itself usually samples (CPU timer); a short process samples only
# when its first CPU-timer expiry (spread over one period) or its first
# allocation sample falls within its short life: now and then one of the
# 201 others. Every ring left must hold a sample: nothing is made for a
# process that took none.
n=$(find "${rings}" -name '*.ring' | wc -l)
((n <= 4)) || fail "${n} ring files left by 202 short processes"
for ring in "${rings}"/*.ring; do
  [[ -e "${ring}" ]] || continue
  counts=$("${ringprof}" dump --quiet "${ring}" 2>&1) || fail "ringprof dump ${ring}: ${counts}"
  grep -Eq '^ +(AllocSample|CpuSample) +[1-9]' <<<"${counts}" ||
    fail "${ring} holds no sample: ${counts}"
done

echo "--- the directory cap holds with no collector"
capped="${tmp}/capped"
mkdir -p "${capped}"
# Rings of 1 MiB + 8 KiB under a 3 MiB cap: at most two at any time, the
# ones of processes that are gone deleted to make room.
for i in $(seq 6); do
  LD_PRELOAD="${emitter}" RINGPROF_DIR="${capped}" RINGPROF_RING_KIB=1024 \
    RINGPROF_DIR_MAX_MIB=3 RINGPROF_SAMPLE_BYTES=4096 timeout 60 \
    "${workloads}/alloc_storm" 1 1 1 0 >/dev/null 2>"${tmp}/capped.err" ||
    fail "alloc_storm ${i} exited $?"
  ! grep -q ringprof "${tmp}/capped.err" || fail "$(cat "${tmp}/capped.err")"
done
ls -la "${capped}"
count=$(find "${capped}" -name '*.ring' | wc -l)
total=$(find "${capped}" -name '*.ring' -printf '%s\n' | awk '{ t += $1 } END { print t + 0 }')
((count >= 1 && total <= 3 * 1048576)) ||
  fail "${count} rings, ${total} bytes under a 3 MiB cap"

echo "--- ringprof run of a spawn loop leaves no directory"
timeout --kill-after=5 120 "${ringprof}" run --log-level=debug \
  --output-dir="${tmp}/out" -- bash -c 'for i in $(seq 100); do /bin/true; done; head -c 20000000 /dev/zero | tr x y | wc -c' \
  >"${tmp}/run.log" 2>&1 || fail "run exited $?: $(cat "${tmp}/run.log")"
dir=$(followed_ring_dir "${tmp}/run.log")
[[ -n "${dir}" ]] || fail "no ring followed: $(cat "${tmp}/run.log")"
[[ ! -e "${dir}" ]] || fail "${dir} left behind: $(ls -la "${dir}")"
# (One of the 100 may have sampled, see above; not most of them.)
trues=$(grep -c "following .*/true\." "${tmp}/run.log")
((trues <= 3)) || fail "${trues} of 100 /bin/true made a ring"
echo PASS
