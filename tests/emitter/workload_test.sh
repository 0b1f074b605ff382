#!/usr/bin/env bash
# Runs every workload_check scenario with libringprof.so preloaded, either
# natively or inside gVisor (`runsc --rootless --network=host do`).
#
# Usage: workload_test.sh native|gvisor
#
# In gVisor the checker runs inside the sandbox too: the workload's ring
# files live on the sandbox's overlay and are read there, the way a sidecar
# in the same pod reads them. If runsc cannot start a sandbox, the test
# fails and says why: it never skips.
set -uo pipefail
# gVisor 20240729 (systrap platform) from tools/setup; RUNSC=runsc runs
# Debian 12's 20221219 (ptrace platform) instead.
RUNSC="${RUNSC:-/opt/runsc-20240729/runsc}"

mode=${1:?native|gvisor}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
lib="${root}/emitter/libringprof.so"
check="${root}/tests/emitter/workload_check"
workloads="${root}/examples/workloads"
out_dir="${TEST_UNDECLARED_OUTPUTS_DIR:-${TEST_TMPDIR:?}}"

state_dir=""
cleanup() { [[ -n "${state_dir}" ]] && rm -rf "${state_dir}"; }
trap cleanup EXIT

run_check() {
  local out=$1
  shift
  if [[ ${mode} == native ]]; then
    timeout --kill-after=5 170 "${check}" "$@" >"${out}" 2>&1
  else
    # runsc keeps unix sockets in its state dir: a short path of our own.
    timeout --kill-after=5 170 "${RUNSC}" --rootless --network=host \
      --root="${state_dir}" do "${check}" "$@" >"${out}" 2>&1
  fi
}

if [[ ${mode} == gvisor ]]; then
  state_dir=$(mktemp -d /tmp/ringprof-emitter-runsc.XXXXXX)
  probe="${out_dir}/runsc_probe.txt"
  if ! timeout 60 "${RUNSC}" --rootless --network=host --root="${state_dir}" \
    do /bin/true >"${probe}" 2>&1; then
    echo "FAIL: runsc cannot start a sandbox here:"
    cat "${probe}"
    exit 1
  fi
fi

failed=0
scenarios=(
  "storm ${workloads}/alloc_storm"
  "fork ${workloads}/fork_exec"
  "forkstorm ${workloads}/fork_storm"
  "dlopen ${workloads}/dlopen_alloc ${workloads}/libdlopen_payload.so"
  "dlopen_cpu ${workloads}/dlopen_alloc ${workloads}/libdlopen_payload.so spin"
  "nofp ${workloads}/nofp_map"
  "config ${workloads}/alloc_storm 2 1 4"
)
for scenario in "${scenarios[@]}"; do
  read -r -a args <<<"${scenario}"
  name=${args[0]}
  out="${out_dir}/${mode}_${name}.txt"
  run_check "${out}" "${name}" "${lib}" "${args[@]:1}"
  status=$?
  cat "${out}"
  if ((status != 0)); then
    echo "FAIL: scenario ${name} (${mode}) exited with ${status}"
    failed=1
  fi
done
exit "${failed}"
