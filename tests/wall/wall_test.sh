#!/usr/bin/env bash
# The wall profile against the wall-clock time each thread of wall_workload
# measured itself (check_wall.py: each within 10%), under `ringprof run`
# natively or with `ringprof run` and the workload inside gVisor (`runsc
# do`, the output directory on the host), at the default sampling rates.
#
# Usage: wall_test.sh native|gvisor
set -uo pipefail

mode=${1:?native|gvisor}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
work=$(mktemp -d /tmp/ringprof-wall.XXXXXX)
trap 'rm -rf "${work}"' EXIT
cmd=("${root}/collector/ringprof" run --output-dir="${work}/out"
  --emitter="${root}/emitter/libringprof.so" --
  "${root}/tests/wall/wall_workload" 4)

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
/usr/bin/python3 "${root}/tests/wall/check_wall.py" "${work}/truth.json" \
  "${work}/out" 0.10 "${mode}" || exit 1
echo PASS
