#!/usr/bin/env bash
# Application tags end to end (README.md "Tags"): examples/tagged under
# `ringprof run` with the CPU timer at 1000 Hz or, with `alloc`, with CPU
# from tick-picked allocation samples, checked by check_tags.py; and the
# same program without the emitter, which must run unchanged. Each thread
# works a fixed CPU time, however loaded the machine, sized so that the
# sampling error of the /heavy share (p = 0.75) stays near a third of the
# 0.05 bound: with the timer, 3 s each at the kernel's 4 ms tick is ~1500
# samples on the two workers (sqrt(p(1-p)/n) = 0.011; at 1.5 s one run of
# many missed by 0.061: the samples are less independent than that
# assumes); tick-picked
# allocation samples come at most one per thread per 10 ms, so `alloc`
# works 4 s each for ~800 (1.5 s gave ~300, an error of 0.025: a miss of
# the 0.05 bound about once in twenty runs). The run also ships to a real
# Grafana Pyroscope v2.2.1 (tests/pyroscope_server), which must hold what
# the local profiles hold: totals, hot functions, and per endpoint tag (a
# series label there) the same CPU and bytes.
#
# Usage: tags_test.sh timer|alloc
set -uo pipefail

mode=${1:?timer|alloc}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
work=$(mktemp -d /tmp/ringprof-tags.XXXXXX)
source "${root}/tests/pyroscope_server/server_lib.sh"
trap 'stop_pyroscope; rm -rf "${work}"' EXIT
require_pyroscope
if ! start_pyroscope "${work}/server"; then
  echo "FAIL: the Pyroscope server did not start"
  exit 1
fi
server="${root}/examples/tagged/tagged_server"

# Without the emitter: runs, exits 0, knows ringprof is absent.
if ! timeout --kill-after=5 60 "${server}" --seconds=1 --fork_ms=50 \
  --truth="${work}/plain.json" >"${work}/plain.txt" 2>&1; then
  cat "${work}/plain.txt"
  echo "FAIL: tagged_server without the emitter failed"
  exit 1
fi
if ! grep -q '"ringprof_available": false' "${work}/plain.json"; then
  echo "FAIL: without the emitter the program thinks it is loaded"
  exit 1
fi

hz=1000 check=shares cpu_ms=3000
[[ ${mode} == alloc ]] && hz=0 check=split cpu_ms=4000
# Allocation samples every 64 KiB (not 512): alloc_space per endpoint then
# has ~700 samples, a standard error of ~4% against the 15% bound.
RINGPROF_SAMPLE_BYTES=65536 RINGPROF_CPU_HZ=${hz} timeout --kill-after=5 200 "${root}/collector/ringprof" \
  run --output-dir="${work}/out" --emitter="${root}/emitter/libringprof.so" \
  --server-address="${pyroscope_url}" --service="tags-${mode}" \
  -- "${server}" --seconds=60 --cpu_ms=${cpu_ms} --threads=2 --fork_ms=300 \
  --truth="${work}/truth.json" >"${work}/run.txt" 2>&1
status=$?
cat "${work}/run.txt"
if ((status != 0)); then
  echo "FAIL: the profiled run failed (exit ${status})"
  exit 1
fi
/usr/bin/python3 "${root}/tests/tags/check_tags.py" "${work}/truth.json" \
  "${work}/out" 0.05 "${check}" || exit 1
if grep -qE "rejected|invalid" "${work}/run.txt"; then
  echo "FAIL: the server refused a profile"
  exit 1
fi
readback "${work}/out" "tags-${mode}" --tag endpoint || exit 1
echo PASS
