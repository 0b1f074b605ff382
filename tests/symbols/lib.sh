# Shared by the tests in tests/symbols: the realprogs helpers, plus reading
# function names out of profiles. Sourced after `set -uo pipefail`.
source "${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}/tests/realprogs/lib.sh"
need go

# function_names PROFILE [SAMPLE_INDEX]: every function name of PROFILE's
# samples, one per line, as the profile holds it (-symbolize=none: go tool
# pprof would otherwise re-read the binaries on this machine itself).
function_names() {
  go tool pprof -symbolize=none -top -nodecount=1000000 \
    ${2:+-sample_index="$2"} "$1" 2>/dev/null | awk '
      /^ *[0-9.]+[a-zA-Z]* +[0-9.]+% +[0-9.]+% +[0-9.]+[a-zA-Z]* +[0-9.]+%/ {
        name = $6; for (i = 7; i <= NF; i++) name = name " " $i
        sub(/ \(inline\)$/, "", name); print name
      }' | sort -u
}

# has_name NAMES_FILE NAME: NAME is one of the lines of NAMES_FILE.
has_name() { grep -qxF -- "$2" "$1"; }

# profile NAME CMD...: `ringprof run` of CMD into ${tmp}/NAME (extra
# ringprof flags in the RUN_FLAGS array); its CPU profile's function names
# into ${tmp}/NAME.names, its raw listing (go tool pprof -raw: locations
# with file:line) into ${tmp}/NAME.raw.
RUN_FLAGS=()
profile() {
  local name=$1
  shift
  local status=0
  timeout --kill-after=5 300 "${ringprof}" run --output-dir="${tmp}/${name}" \
    "${RUN_FLAGS[@]}" -- "$@" >"${tmp}/${name}.log" 2>&1 || status=$?
  if ((status != 0)); then
    tail -20 "${tmp}/${name}.log"
    fail "${name}: ringprof run exited ${status}"
  fi
  function_names "${tmp}/${name}/process_cpu.pb.gz" >"${tmp}/${name}.names"
  go tool pprof -symbolize=none -raw "${tmp}/${name}/process_cpu.pb.gz" \
    >"${tmp}/${name}.raw" 2>/dev/null
  echo "${name}: $(wc -l <"${tmp}/${name}.names") functions"
}
