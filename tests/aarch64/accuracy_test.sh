#!/usr/bin/env bash
# The aarch64 emitter under qemu-aarch64 -cpu max against ground truth, on
# workloads built as hardened arm64 code is (-fomit-frame-pointer
# -mbranch-protection=standard: no frame pointers, return addresses signed
# with pointer authentication), followed by the host's `ringprof collect`
# as a sidecar would (the rings are portable: written on aarch64, read on
# x86-64; the aarch64 binaries symbolized here).
#
#   cpu_alloc  examples/accuracy's workload (2 threads x 6 s of CPU, the
#              CPU timer at its default 100 Hz) checked by
#              tests/accuracy/compare.py: CPU shares within L1 0.05 of the
#              truth, alloc_space of AllocHeavy and MixedWork within 5% of
#              the bytes they requested, none for SpinCompute. First the
#              workload's output and exit status with and without the
#              emitter: in its fixed-work mode (--chunks) it prints the calls,
#              allocations and bytes of each function, which must not
#              change (its timings do).
#   offcpu     examples/workloads' wait_workload checked by
#              tests/offcpu/check_waits.py: the mutex and block profiles
#              within 15% of the waits it measured.
#
# Timings under qemu say nothing about the emitter's cost on arm64
# hardware; these check what the profiles say. The workload's thread CPU
# clocks are qemu's threads' (emulated code costs ~10x), so the CPU run
# takes its 12 s of CPU about as long as natively.
#
# Usage: accuracy_test.sh cpu_alloc|offcpu
set -uo pipefail

mode=${1:?cpu_alloc|offcpu}
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
# shellcheck source=tests/aarch64/qemu_lib.sh
source "${root}/tests/aarch64/qemu_lib.sh"
COLLECTOR="${root}/collector/ringprof"
lib="${root}/aarch64/libringprof.so"
work=$(mktemp -d /tmp/ringprof-aarch64.XXXXXX)
cleanup() {
  [[ -n ${collector_pid} ]] && kill -KILL "${collector_pid}" 2>/dev/null
  rm -rf "${work}"
}
trap cleanup EXIT
failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# profile OUT -- PROGRAM ARGS: PROGRAM under qemu with the emitter, its
# stdout in OUT.stdout, followed by the host collector writing OUT/.
profile() {
  local out=$1
  shift
  collector_start "${out}" "${work}/rings" "${out}.collect.log" || return 1
  on_aarch64 RINGPROF_PRELOAD="${lib}" RINGPROF_DIR="${work}/rings" "$@" \
    >"${out}.stdout" 2>"${out}.stderr"
  local status=$?
  collector_stop || status=1
  cat "${out}.collect.log"
  if [[ -s ${out}.stderr ]]; then
    fail "the workload wrote on stderr: $(head -c 2000 "${out}.stderr")"
  fi
  if ((status != 0)); then
    fail "the profiled run failed (exit ${status})"
    return 1
  fi
}

if [[ ${mode} == cpu_alloc ]]; then
  workload="${root}/examples/accuracy/accuracy_workload_hardened"
  # 1. Output and exit status: a fixed amount of work, twice.
  fixed=(--threads=2 --chunks=6)
  AARCH64_TIMEOUT=120 on_aarch64 "${workload}" "${fixed[@]}" \
    >"${work}/plain.json" 2>"${work}/plain.err"
  plain_status=$?
  AARCH64_TIMEOUT=120 on_aarch64 RINGPROF_PRELOAD="${lib}" \
    RINGPROF_DIR="${work}/fixed-rings" "${workload}" "${fixed[@]}" \
    >"${work}/profiled.json" 2>"${work}/profiled.err"
  profiled_status=$?
  echo "fixed work: exit ${plain_status} alone, ${profiled_status} profiled"
  ((plain_status == 0 && profiled_status == 0)) ||
    fail "exit status ${profiled_status} profiled, ${plain_status} alone"
  cmp -s "${work}/plain.err" "${work}/profiled.err" ||
    fail "stderr differs: $(head -c 2000 "${work}/profiled.err")"
  /usr/bin/python3 - "${work}/plain.json" "${work}/profiled.json" <<'PY' ||
import json
import sys

def counts(path):
    functions = json.load(open(path))["functions"]
    return {name: {k: v[k] for k in ("calls", "allocations", "alloc_bytes")}
            for name, v in functions.items()}

plain, profiled = counts(sys.argv[1]), counts(sys.argv[2])
print("calls/allocations/bytes alone:    %s" % plain)
print("calls/allocations/bytes profiled: %s" % profiled)
sys.exit(0 if plain == profiled else 1)
PY
    fail "the workload's output changed under the emitter"
  ls "${work}/fixed-rings"/*.ring >/dev/null 2>&1 ||
    fail "the profiled fixed-work run wrote no ring file"

  # 2. Accuracy.
  profile "${work}/out" "${workload}" --threads=2 --cpu_seconds=6 \
    --truth="${work}/truth.json" || exit 1
  /usr/bin/python3 "${root}/tests/accuracy/compare.py" \
    --truth="${work}/truth.json" --out="${work}/out" \
    --json="${work}/result.json" --label=aarch64 || exit 1
  /usr/bin/python3 - "${work}/result.json" <<'PY' || failures=$((failures + 1))
import json
import sys

result = json.load(open(sys.argv[1]))
failures = []
if not result["cpu_l1"] <= 0.05:
    failures.append("CPU shares: L1 %.3f > 0.05" % result["cpu_l1"])
for name in ("AllocHeavy", "MixedWork"):
    ratio = result["alloc"][name]["ratio"]
    if ratio is None or not 0.95 <= ratio <= 1.05:
        failures.append("%s alloc_space ratio %s outside [0.95, 1.05]"
                        % (name, ratio))
if result["alloc"]["SpinCompute"]["reported_bytes"] != 0:
    failures.append("SpinCompute has allocation bytes")
for failure in failures:
    print("FAIL: " + failure)
sys.exit(1 if failures else 0)
PY
else
  profile "${work}/out" "${root}/examples/workloads/wait_workload_hardened" \
    4 1000 200 60 20 || exit 1
  cat "${work}/out.stdout"
  /usr/bin/python3 "${root}/tests/offcpu/check_waits.py" \
    "${work}/out.stdout" "${work}/out" 0.15 || failures=$((failures + 1))
fi

if ((failures > 0)); then
  echo "${failures} check(s) failed"
  exit 1
fi
echo "all checks passed"
