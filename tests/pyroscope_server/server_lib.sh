# Sourced by shell tests: a real Pyroscope server (pyroscope_server.py).
#
#   source "${root}/tests/pyroscope_server/server_lib.sh"
#   require_pyroscope     # no server binary on this machine: skipped, exit 0
#   pyroscope_available   # the same test as a condition (reports nothing)
#   start_pyroscope DIR [--flag=-server.flag=value]...   # sets pyroscope_url
#   readback OUT_DIR SERVICE [--tag NAME] [--spans]      # readback.py
#
# The server exits with the test (--exit-with-parent, and stop_pyroscope
# from an EXIT trap). Waits are bounded: the server's own start is (120 s).

_pyroscope_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pyroscope_pid=""
pyroscope_url=""

# The test ends here, reported skipped with the reason (JUnit notrun), when
# tools/pyroscope/build could not build the server on this machine.
require_pyroscope() {
  local status=0
  /usr/bin/python3 "${_pyroscope_dir}/pyroscope_server.py" \
    skip-unless-available || status=$?
  ((status == 3)) && exit 0
  return "${status}"
}

pyroscope_available() {
  XML_OUTPUT_FILE="" /usr/bin/python3 "${_pyroscope_dir}/pyroscope_server.py" \
    skip-unless-available >/dev/null
}

start_pyroscope() {
  local dir=$1
  shift
  mkdir -p "${dir}"
  /usr/bin/python3 "${_pyroscope_dir}/pyroscope_server.py" serve \
    --exit-with-parent --ready-file "${dir}/pyroscope.json" \
    --log "${dir}/pyroscope.log" "$@" >"${dir}/pyroscope.out" 2>&1 &
  pyroscope_pid=$!
  local i
  for ((i = 0; i < 1500; ++i)); do
    [[ -s "${dir}/pyroscope.json" ]] && break
    if ! kill -0 "${pyroscope_pid}" 2>/dev/null; then
      cat "${dir}/pyroscope.out" >&2
      return 1
    fi
    sleep 0.1
  done
  [[ -s "${dir}/pyroscope.json" ]] || { cat "${dir}/pyroscope.out" >&2; return 1; }
  pyroscope_url=$(/usr/bin/python3 -c \
    'import json, sys; print(json.load(open(sys.argv[1]))["url"])' \
    "${dir}/pyroscope.json")
}

stop_pyroscope() {
  [[ -n ${pyroscope_pid} ]] || return 0
  kill -TERM "${pyroscope_pid}" 2>/dev/null
  wait "${pyroscope_pid}" 2>/dev/null
  pyroscope_pid=""
}

readback() {
  /usr/bin/python3 "${_pyroscope_dir}/readback.py" "${pyroscope_url}" "$@"
}
