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
