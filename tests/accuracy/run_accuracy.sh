#!/usr/bin/env bash
# One profiled run of the accuracy workload and its comparison, shared by
# accuracy_test.sh and tools/bench.d/accuracy (runs inside gVisor as is).
#
# Usage: run_accuracy.sh RUNFILES_ROOT WORK_DIR timer|alloc THREADS CPU_SECONDS
#          [WORKLOAD_ARG...]
#   timer: RINGPROF_CPU_HZ=100 (CPU profile from timer samples);
#   alloc: RINGPROF_CPU_HZ=0 (CPU profile from tick-picked allocation samples);
#   WORKLOAD_ARGs go to the workload (e.g. --phases_ms=12,8).
# Writes WORK_DIR/{truth.json,out/,result.json} and prints the table.
set -euo pipefail

root=$1 work=$2 cpu_mode=$3 threads=$4 cpu_seconds=$5
shift 5
case ${cpu_mode} in
  timer) hz=100 ;;
  alloc) hz=0 ;;
  *) echo "cpu mode must be timer or alloc" >&2; exit 2 ;;
esac
mkdir -p "${work}"
RINGPROF_CPU_HZ=${hz} "${root}/collector/ringprof" run \
  --output-dir="${work}/out" \
  --emitter="${root}/emitter/libringprof.so" \
  -- "${root}/examples/accuracy/accuracy_workload" \
  --threads="${threads}" --cpu_seconds="${cpu_seconds}" \
  --truth="${work}/truth.json" "$@" >"${work}/ringprof.txt" 2>&1 ||
  { cat "${work}/ringprof.txt"; exit 1; }
/usr/bin/python3 "${root}/tests/accuracy/compare.py" \
  --truth="${work}/truth.json" --out="${work}/out" \
  --json="${work}/result.json" --label="${cpu_mode}"
