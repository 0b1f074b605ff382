# Sourced by the aarch64 tests: running aarch64 programs under qemu-user and
# a collector following their ring files.
#
#   on_aarch64 [VAR=VALUE...] PROGRAM ARGS...
#       PROGRAM (aarch64) under `qemu-aarch64 -cpu max` (pointer
#       authentication on), killed after AARCH64_TIMEOUT seconds (default
#       300), with the given environment; with
#       RINGPROF_PRELOAD=LIB among the assignments, LIB is the program's
#       LD_PRELOAD. (LD_PRELOAD itself would be the x86-64 qemu's: its loader
#       would refuse the aarch64 library, and say so on stderr.) The C
#       library is Debian's libc6:arm64 multiarch one (/lib/aarch64-linux-gnu,
#       tools/setup), found at the paths a native arm64 system has, so the
#       ring's module map names files that exist here.
#   collector_start OUT_DIR RING_DIR LOG [PREFIX...]
#       `ringprof collect` (COLLECTOR) following RING_DIR (keeping the ring
#       files), writing OUT_DIR, started behind PREFIX (e.g. `qemu-aarch64
#       -cpu max` for the aarch64 collector); returns once it has said its
#       start line. Sets collector_pid.
#   collector_stop
#       SIGTERM, then waits for its final windows (killed after 60 s);
#       fails when it does not exit 0.
#   wait_for SECONDS COMMAND...
#       polls COMMAND every 0.1 s until it succeeds; 1 on timeout.

on_aarch64() {
  local assignments=() preload=""
  while [[ $# -gt 0 && $1 == *=* ]]; do
    if [[ $1 == RINGPROF_PRELOAD=* ]]; then
      preload=${1#RINGPROF_PRELOAD=}
    else
      assignments+=("$1")
    fi
    shift
  done
  if [[ -n ${preload} ]]; then
    assignments+=("QEMU_SET_ENV=LD_PRELOAD=${preload}")
  fi
  timeout --kill-after=5 "${AARCH64_TIMEOUT:-300}" \
    env ${assignments[@]+"${assignments[@]}"} qemu-aarch64 -cpu max "$@"
}

wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}

collector_pid=""

collector_start() {
  local out=$1 rings=$2 log=$3
  shift 3
  mkdir -p "${rings}"
  "$@" "${COLLECTOR:?}" collect --ring-dir="${rings}" --output-dir="${out}" \
    --keep-rings >"${log}" 2>&1 &
  collector_pid=$!
  if ! wait_for 60 grep -q "collecting from" "${log}"; then
    echo "FAIL: ringprof collect did not start:"
    cat "${log}"
    return 1
  fi
}

collector_stop() {
  local pid=${collector_pid} status
  collector_pid=""
  kill -TERM "${pid}" 2>/dev/null
  # Its final windows are bounded by its --shutdown-deadline; 60 s at most.
  (sleep 60 && kill -KILL "${pid}" 2>/dev/null) &
  local watchdog=$!
  wait "${pid}"
  status=$?
  kill "${watchdog}" 2>/dev/null
  wait "${watchdog}" 2>/dev/null
  if ((status != 0)); then
    echo "FAIL: ringprof collect exited with ${status} after SIGTERM"
    return 1
  fi
}
