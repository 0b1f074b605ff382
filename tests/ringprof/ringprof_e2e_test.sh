#!/usr/bin/env bash
# End to end: `ringprof run -- hotloop` with the real emitter, symbolizer and
# flame graph. Checks that the command's exit status comes back, that
# go tool pprof reads the profiles, that the known hot function (HotLoop)
# has the largest share under main in both CPU and allocated bytes, and
# that the HTML flame graph names it.
set -euo pipefail

runfiles="${TEST_SRCDIR}/ringprof"
ringprof="${runfiles}/collector/ringprof"
hotloop="${runfiles}/examples/hotloop/hotloop"
out="${TEST_TMPDIR}/out"
export HOME="${TEST_TMPDIR}" GOCACHE="${TEST_TMPDIR}/gocache" PPROF_TMPDIR="${TEST_TMPDIR}"

fail() { echo "FAIL: $*" >&2; exit 1; }

status=0
"${ringprof}" run --output-dir="${out}" --top=5 -- "${hotloop}" 60 7 \
  >"${TEST_TMPDIR}/run.log" 2>&1 || status=$?
cat "${TEST_TMPDIR}/run.log"
[[ ${status} -eq 7 ]] || fail "ringprof run exited ${status}, want the command's 7"
grep -q "flame graph" "${TEST_TMPDIR}/run.log" || fail "no flame graph path printed"

for f in process_cpu.pb.gz memory.pb.gz flamegraph.html memory.html top.txt; do
  [[ -s "${out}/${f}" ]] || fail "missing ${out}/${f}"
done
ls "${out}"/*/memory/*.pb.gz >/dev/null || fail "no per-window memory profiles"

# HotLoop must have the largest cumulative share of every function below
# main: at least that of any frame other than main, its callers (the C
# runtime's start-up frames, resolved or not) and hotloop's driver
# RunWorkload, which calls HotLoop and ColdLoop.
check_hot() {
  local profile=$1 index=$2
  if ! command -v go >/dev/null; then
    echo "go not installed: skipping the pprof check of ${profile}"
    return
  fi
  local top
  top=$(go tool pprof -symbolize=none -top -cum -sample_index="${index}" \
        -nodecount=200 "${out}/${profile}" 2>&1) || fail "go tool pprof: ${top}"
  echo "${top}" | head -12 | cut -c1-160
  local verdict
  verdict=$(echo "${top}" | awk '
      /^ *[0-9.]+[a-zA-Z]* +[0-9.]+% +[0-9.]+% +[0-9.]+[a-zA-Z]* +[0-9.]+%/ {
        name = $6; for (i = 7; i <= NF; i++) name = name " " $i
        cum = $5; sub("%", "", cum); cum += 0
        if (name == "main" || name ~ /RunWorkload/ || name == "_start" ||
            name ~ /^__libc_start/ ||
            name ~ /^libc\.so/) next
        if (name ~ /HotLoop/) { if (cum > hot) hot = cum; next }
        if (cum > other) { other = cum; other_name = name }
      }
      END {
        if (hot > 0 && hot >= other) print "ok"
        else printf "HotLoop %.2f%% < %s %.2f%%\n", hot, other_name, other
      }')
  [[ "${verdict}" == "ok" ]] || fail "${profile}: ${verdict}"
}
check_hot process_cpu.pb.gz cpu
check_hot memory.pb.gz alloc_space

grep -q "HotLoop" "${out}/flamegraph.html" || fail "flamegraph.html does not name HotLoop"
grep -q "HotLoop" "${out}/memory.html" || fail "memory.html does not name HotLoop"
echo "PASS"
