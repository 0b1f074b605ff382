#!/usr/bin/env bash
# The emitter on top of other allocators: a program linked against
# tcmalloc, jemalloc preloaded after the emitter, jemalloc preloaded before
# it. Each program must run unchanged; the memory profile's total must
# match what the program allocated (so operator new, which tcmalloc serves
# without malloc, is counted exactly once).
set -uo pipefail
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need go
workloads="${runfiles}/examples/workloads"
jemalloc=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null) ||
  fail "libjemalloc2 is not installed (run tools/setup)"

# in_range VALUE WANT: VALUE within 25% of WANT.
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
  -- "${storm}" 4 1 16 0 >"${tmp}/je.log" 2>&1
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

echo "--- jemalloc preloaded before the emitter: runs, says why nothing is sampled"
mkdir -p "${tmp}/before"
LD_PRELOAD="${jemalloc}:${emitter}" RINGPROF_DIR="${tmp}/before" \
  timeout --kill-after=5 120 "${storm}" 2 1 4 0 >"${tmp}/before.log" 2>&1 ||
  fail "alloc_storm with jemalloc first exited $?"
grep -q "malloc comes from ${jemalloc}, loaded before libringprof.so" \
  "${tmp}/before.log" || fail "no line saying jemalloc shadows the emitter"

echo "--- RINGPROF_DISABLE=1 on tcmalloc: unchanged, nothing written"
mkdir -p "${tmp}/off"
LD_PRELOAD="${emitter}" RINGPROF_DISABLE=1 RINGPROF_DIR="${tmp}/off" \
  timeout --kill-after=5 60 "${tcmalloc}" 64 || fail "disabled: exited $?"
[[ -z "$(ls -A "${tmp}/off")" ]] || fail "disabled emitter wrote files"
echo PASS
