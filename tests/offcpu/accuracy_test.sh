#!/usr/bin/env bash
# The mutex and block profiles against the waits wait_workload measured
# itself (check_waits.py: each within 15%), under `ringprof run` natively
# or with `ringprof run` and the workload inside gVisor (`runsc do`, the
# output directory on the host), at the default sampling rates.
#
# Usage: accuracy_test.sh native|gvisor
set -uo pipefail

mode=${1:?native|gvisor}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
work=$(mktemp -d /tmp/ringprof-offcpu.XXXXXX)
trap 'rm -rf "${work}"' EXIT
cmd=("${root}/collector/ringprof" run --output-dir="${work}/out"
  --emitter="${root}/emitter/libringprof.so" --
  "${root}/examples/workloads/wait_workload" 4 1000 200 60 20)

# shellcheck source=tests/gvisor/runsc_lib.sh
source "${root}/tests/gvisor/runsc_lib.sh"
gvisor_or_native "${mode}" "${work}/truth.json" "${work}/run.txt" "${cmd[@]}"
status=$?
cat "${work}/run.txt"
if ((status != 0)); then
  echo "FAIL: the profiled run failed (exit ${status})"
  exit 1
fi
cat "${work}/truth.json"
/usr/bin/python3 "${root}/tests/offcpu/check_waits.py" "${work}/truth.json" \
  "${work}/out" 0.15 || exit 1
echo PASS
