# Shared by the tests in tests/realprogs: paths, failing, waiting.
# Sourced; every test sets `set -uo pipefail` itself.

runfiles="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
ringprof="${runfiles}/collector/ringprof"
emitter="${runfiles}/emitter/libringprof.so"
tmp="${TEST_TMPDIR:?}"
export HOME="${tmp}" GOCACHE="${tmp}/gocache" PPROF_TMPDIR="${tmp}"

fail() {
  echo "FAIL: $*" >&2
  exit 1
}

# A program the test needs; tools/setup installs every one of them.
need() {
  command -v "$1" >/dev/null || fail "$1 is not installed (run tools/setup)"
}

free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# wait_for SECONDS CMD...: runs CMD every 0.1 s until it succeeds; fails
# (returns 1) after SECONDS.
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@" >/dev/null 2>&1; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

# The total of column COLUMN (1-based: memory has alloc_objects then
# alloc_space, process_cpu one value) of a pprof profile's samples, from
# go tool pprof -raw ("  v1  v2: stack" lines after "Samples:").
profile_total() {
  local profile=$1 column=$2
  go tool pprof -raw "${profile}" 2>/dev/null | awk -v column="${column}" '
    /^Samples:/ { in_samples = 1; getline; next }
    /^Locations/ { in_samples = 0 }
    in_samples && /:/ {
      split($0, parts, ":")
      n = split(parts[1], values, " ")
      if (column <= n) total += values[column]
    }
    END { printf "%d\n", total }'
}

# The ring directory `ringprof run --log-level=debug` followed (from its
# "following DIR/NAME.ring" lines), or "" if it followed none.
followed_ring_dir() {
  local log=$1 path
  path=$(grep -o 'following [^ ]*\.ring' "${log}" | head -1 | cut -d' ' -f2)
  [[ -n "${path}" ]] && dirname "${path}"
}
