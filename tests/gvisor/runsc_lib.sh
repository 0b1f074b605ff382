# Shared by the gVisor tests: start runsc the same way every time and turn
# "runsc cannot start here" into a failure that says why.
#
# Source it, then:
#   gvisor_require_runsc              fails the test (exit 1) with the reason
#                                     when no sandbox can be started.
#   gvisor_do OUT [OPTIONS --] CMD... runs CMD in a fresh sandbox with its
#                                     stdout+stderr in the file OUT; returns
#                                     CMD's exit status. OPTIONS are flags of
#                                     `runsc do` (e.g. -force-overlay=false).
#   gvisor_or_native MODE OUT LOG CMD...
#                                     runs CMD natively (MODE native) or in a
#                                     fresh sandbox whose writes reach the
#                                     host (MODE gvisor, after
#                                     gvisor_require_runsc), for at most 200 s:
#                                     its stdout in OUT, its stderr (and
#                                     runsc's) in LOG; returns CMD's status.
#
# The sandbox is `runsc --rootless --network=host do`: the host filesystem
# read-only with a memory-backed overlay on top (writes vanish at exit unless
# -force-overlay=false), the host's network stack (so 127.0.0.1 is the host's
# loopback), and gVisor's own kernel (perf_event_open -> ENODEV).
#
# Output goes to a file of its own, never to a file the test also writes:
# the sandbox writes through its own file offset, so sharing one stdout file
# with host processes interleaves and overwrites lines.

# gVisor 20240729 (default platform systrap), installed by tools/setup;
# RUNSC=runsc selects Debian 12's 20221219 (ptrace platform only).
: "${RUNSC:=/opt/runsc-20240729/runsc}"
: "${GVISOR_TIMEOUT_SECONDS:=120}"

_gvisor_state_dir=""

_gvisor_fail() {
  echo "FAIL: $*" >&2
  exit 1
}

_gvisor_cleanup() {
  if [[ -n "${_gvisor_state_dir}" && -d "${_gvisor_state_dir}" ]]; then
    rm -rf "${_gvisor_state_dir}"
  fi
}

# runsc's state root: a short path of our own (it holds unix sockets, which
# must fit in 108 bytes; Bazel's TEST_TMPDIR can be longer).
_gvisor_state() {
  if [[ -z "${_gvisor_state_dir}" ]]; then
    _gvisor_state_dir=$(mktemp -d /tmp/ringprof-runsc.XXXXXX)
    trap _gvisor_cleanup EXIT
  fi
  echo "${_gvisor_state_dir}"
}

gvisor_do() {
  local out=$1
  shift
  local do_flags=()
  if [[ " $* " == *" -- "* ]]; then
    while [[ $1 != "--" ]]; do
      do_flags+=("$1")
      shift
    done
    shift
  fi
  timeout --kill-after=5 "${GVISOR_TIMEOUT_SECONDS}" \
    "${RUNSC}" --rootless --network=host --root="$(_gvisor_state)" \
    do "${do_flags[@]}" "$@" >"${out}" 2>&1
}

gvisor_require_runsc() {
  if ! command -v "${RUNSC}" >/dev/null 2>&1; then
    _gvisor_fail "${RUNSC} not found (run tools/setup)"
  fi
  local out debug_dir
  out=$(mktemp)
  debug_dir=$(mktemp -d)
  if ! timeout --kill-after=5 60 "${RUNSC}" --rootless --network=host \
    --root="$(_gvisor_state)" --debug --debug-log="${debug_dir}/" \
    do /bin/true >"${out}" 2>&1; then
    echo "runsc --rootless --network=host do /bin/true failed:" >&2
    cat "${out}" >&2
    echo "--- last lines of runsc's debug logs (${debug_dir}) ---" >&2
    tail -n 20 "${debug_dir}"/* >&2 2>/dev/null || true
    _gvisor_fail "runsc cannot start a sandbox on this machine (see above)"
  fi
  rm -rf "${out}" "${debug_dir}"
  echo "runsc: $("${RUNSC}" --version 2>&1 | head -n 1): sandbox starts"
}

gvisor_or_native() {
  local mode=$1 out=$2 log=$3
  shift 3
  if [[ ${mode} == native ]]; then
    timeout --kill-after=5 200 "$@" >"${out}" 2>"${log}"
    return
  fi
  gvisor_require_runsc
  GVISOR_TIMEOUT_SECONDS=200 gvisor_do "${log}" -force-overlay=false -- \
    /bin/sh -c '"$@" >"$0"' "${out}" "$@"
}
