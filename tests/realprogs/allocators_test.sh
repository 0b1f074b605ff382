#!/usr/bin/env bash
# The emitter on top of other allocators: a program linked against
# tcmalloc, jemalloc preloaded after the emitter, jemalloc preloaded before
# it (the emitter takes its entry points over). Each program must run unchanged; the memory profile's total must
# match what the program allocated (so operator new, which tcmalloc serves
# without malloc, is counted exactly once).
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need go
workloads="${runfiles}/examples/workloads"
jemalloc=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null) ||
  fail "libjemalloc2 is not installed (run tools/setup)"

# in_range VALUE WANT: VALUE within 25% of WANT. The storms below allocate
# 256 MiB, ~512 allocation samples: a sampling error of ~4.5% (1 sigma).
in_range() { (($1 * 4 >= $2 * 3 && $1 * 4 <= $2 * 5)); }

echo "--- a program linked against tcmalloc"
tcmalloc="${workloads}/tcmalloc_alloc"
[[ "$(ldd "${tcmalloc}")" == *libtcmalloc* ]] || fail "tcmalloc_alloc does not link tcmalloc"
timeout --kill-after=5 120 "${ringprof}" run --output-dir="${tmp}/tc" \
  -- "${tcmalloc}" 256 >"${tmp}/tc.log" 2>&1
status=$?
grep -v '^ ' "${tmp}/tc.log" | head
[[ ${status} -eq 0 ]] || fail "tcmalloc_alloc exited ${status}"
bytes=$(profile_total "${tmp}/tc/memory.pb.gz" 2)
echo "tcmalloc_alloc: ${bytes} bytes in the profile, 268435456 allocated"
in_range "${bytes}" 268435456 || fail "profile total ${bytes} is not 256 MiB"
top=$(go tool pprof -top -cum -nodecount=40 "${tmp}/tc/memory.pb.gz" 2>&1)
[[ "${top}" == *TcmallocLandmark* ]] ||
  fail "TcmallocLandmark not in the memory profile: ${top}"

echo "--- jemalloc preloaded after the emitter (ringprof run puts it first)"
storm="${workloads}/alloc_storm"
LD_PRELOAD="${jemalloc}" MALLOC_CONF=stats_print:true \
  timeout --kill-after=5 120 "${ringprof}" run --output-dir="${tmp}/je" \
  -- "${storm}" 4 1 64 0 >"${tmp}/je.log" 2>&1
status=$?
[[ ${status} -eq 0 ]] || { tail -20 "${tmp}/je.log"; fail "alloc_storm on jemalloc exited ${status}"; }
# jemalloc prints its statistics at exit in every process using it:
# ringprof itself (it inherited LD_PRELOAD too) and alloc_storm.
(($(grep -c "Begin jemalloc statistics" "${tmp}/je.log") >= 2)) ||
  fail "jemalloc was not alloc_storm's allocator"
requested=$(awk '$1 == "requested_bytes" { print $2 }' "${tmp}/je.log")
bytes=$(profile_total "${tmp}/je/memory.pb.gz" 2)
echo "alloc_storm on jemalloc: ${bytes} bytes in the profile, ${requested} requested"
in_range "${bytes}" "${requested}" || fail "profile total ${bytes} vs ${requested} requested"

echo "--- jemalloc preloaded before the emitter (sidecar): taken over, profiled"
mkdir -p "${tmp}/before"
"${ringprof}" collect --ring-dir="${tmp}/before" --output-dir="${tmp}/before-out" \
  >"${tmp}/collect.log" 2>&1 &
collect_pid=$!
LD_PRELOAD="${jemalloc}:${emitter}" RINGPROF_DIR="${tmp}/before" \
  MALLOC_CONF=stats_print:true timeout --kill-after=5 120 "${storm}" 4 1 64 0 \
  >"${tmp}/before.log" 2>&1 || fail "alloc_storm with jemalloc first exited $?"
grep -q "Begin jemalloc statistics" "${tmp}/before.log" ||
  fail "jemalloc was not alloc_storm's allocator"
! grep -q "allocations are not sampled" "${tmp}/before.log" ||
  fail "the emitter did not take over: $(grep ringprof "${tmp}/before.log")"
wait_for 30 bash -c "! ls ${tmp}/before/*.ring" ||
  fail "the collector did not finish the ring: $(cat "${tmp}/collect.log")"
kill -TERM "${collect_pid}"
wait "${collect_pid}" || fail "collect exited $?: $(cat "${tmp}/collect.log")"
requested=$(awk '$1 == "requested_bytes" { print $2 }' "${tmp}/before.log")
bytes=0
for window in "${tmp}"/before-out/alloc_storm/memory/*.pb.gz; do
  bytes=$((bytes + $(profile_total "${window}" 2)))
done
echo "alloc_storm, jemalloc first: ${bytes} bytes in the profiles, ${requested} requested"
in_range "${bytes}" "${requested}" || fail "profile total ${bytes} vs ${requested} requested"

echo "--- RINGPROF_DISABLE=1 on tcmalloc: unchanged, nothing written"
mkdir -p "${tmp}/off"
LD_PRELOAD="${emitter}" RINGPROF_DISABLE=1 RINGPROF_DIR="${tmp}/off" \
  timeout --kill-after=5 60 "${tcmalloc}" 64 || fail "disabled: exited $?"
[[ -z "$(ls -A "${tmp}/off")" ]] || fail "disabled emitter wrote files"
echo PASS
