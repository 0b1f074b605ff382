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

if [[ ${mode} == native ]]; then
  timeout --kill-after=5 200 "${cmd[@]}" >"${work}/truth.json" \
    2>"${work}/run.txt"
  status=$?
else
  cd "${root}" || exit 1
  # shellcheck source=tests/gvisor/runsc_lib.sh
  source tests/gvisor/runsc_lib.sh
  gvisor_require_runsc
  GVISOR_TIMEOUT_SECONDS=200
  # The output directory must outlive the sandbox: no overlay.
  gvisor_do "${work}/run.txt" -force-overlay=false -- /bin/sh -c \
    '"$@" >"$0"' "${work}/truth.json" "${cmd[@]}"
  status=$?
fi
cat "${work}/run.txt"
if ((status != 0)); then
  echo "FAIL: the profiled run failed (exit ${status})"
  exit 1
fi
cat "${work}/truth.json"
/usr/bin/python3 "${root}/tests/wall/check_wall.py" "${work}/truth.json" \
  "${work}/out" 0.10 || exit 1
echo PASS
