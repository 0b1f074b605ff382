#!/usr/bin/env bash
# The CPU-timer safety checks with the real emitter: libringprof.so preloaded
# into the signal workload, natively or inside gVisor
# (`runsc --rootless --network=host do`). preload_checks.sh does the work; in
# gVisor it runs inside the sandbox, where the ring files are written and
# read. If runsc cannot start a sandbox, the test fails and says why.
#
# Usage: preload_test.sh native|gvisor|qemu
#   qemu: the aarch64 builds under qemu-aarch64 (preload_checks.sh).
set -uo pipefail
# gVisor 20240729 (systrap platform) from tools/setup; RUNSC=runsc runs
# Debian 12's 20221219 (ptrace platform) instead.
RUNSC="${RUNSC:-/opt/runsc-20240729/runsc}"

mode=${1:?native|gvisor}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
checks="${root}/tests/cpu_timer/preload_checks.sh"
work=$(mktemp -d /tmp/ringprof-cputimer.XXXXXX)
trap 'rm -rf "${work}"' EXIT

if [[ ${mode} == native || ${mode} == qemu ]]; then
  timeout --kill-after=5 240 bash "${checks}" "${mode}" "${root}" "${work}"
  exit $?
fi
state="${work}/runsc"
mkdir -p "${state}"
if ! timeout 60 "${RUNSC}" --rootless --network=host --root="${state}" \
  do /bin/true >"${work}/probe.txt" 2>&1; then
  echo "FAIL: runsc cannot start a sandbox here:"
  cat "${work}/probe.txt"
  exit 1
fi
timeout --kill-after=5 240 "${RUNSC}" --rootless --network=host --root="${state}" \
  do bash "${checks}" gvisor "${root}" "${work}/sandbox"
