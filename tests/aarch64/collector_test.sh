#!/usr/bin/env bash
# The aarch64 collector (//:aarch64/ringprof) under qemu-aarch64: rings are
# portable and ELF files of either architecture are symbolized on either.
#
#  1. The aarch64 `ringprof collect` follows a directory, as a sidecar
#     would.
#  2. examples/accuracy's workload writes a ring there natively (x86-64,
#     the host's emitter: service x86_64), then its hardened aarch64 build
#     under qemu with the aarch64 emitter (service aarch64).
#  3. The collector keeps up (no record lost) and writes both services'
#     profiles.
#  4. Each service's CPU and allocation profiles hold the workload's three
#     functions, symbolized from its own binary (x86-64 or aarch64 ELF, read
#     by the aarch64 collector); SpinCompute's CPU share is near the truth.
#  5. Both rings are read alike by both `ringprof dump`s (aarch64, x86-64).
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
# shellcheck source=tests/aarch64/qemu_lib.sh
source "${root}/tests/aarch64/qemu_lib.sh"
host_ringprof="${root}/collector/ringprof"
COLLECTOR="${root}/aarch64/ringprof"
work=$(mktemp -d /tmp/ringprof-aarch64-collector.XXXXXX)
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
rings="${work}/rings"
mkdir -p "${rings}"
workload_args=(--threads=1 --cpu_seconds=1.5)

# 1. The aarch64 collector, as a sidecar.
collector_start "${work}/out" "${rings}" "${work}/collect.log" \
  qemu-aarch64 -cpu max || exit 1

# 2. An x86-64 process (the host's emitter; fewer allocation samples, so
#    that the emulated collector keeps up with a native writer) and an
#    aarch64 one, one after the other.
timeout --kill-after=5 120 env LD_PRELOAD="${root}/emitter/libringprof.so" \
  RINGPROF_DIR="${rings}" RINGPROF_SERVICE_NAME=x86_64 \
  RINGPROF_SAMPLE_BYTES=4194304 \
  "${root}/examples/accuracy/accuracy_workload" "${workload_args[@]}" \
  --truth="${work}/x86_64.json" || fail "the x86-64 workload failed"
on_aarch64 RINGPROF_PRELOAD="${root}/aarch64/libringprof.so" \
  RINGPROF_DIR="${rings}" RINGPROF_SERVICE_NAME=aarch64 \
  "${root}/examples/accuracy/accuracy_workload_hardened" \
  "${workload_args[@]}" --truth="${work}/aarch64.json" ||
  fail "the aarch64 workload failed"
# Both processes' rings drained before the collector stops: their last
# windows are written once a ring has ended.
wait_for 120 bash -c '[[ $(grep -c "memory .* ->" "$0") -ge 2 ]]' \
  "${work}/collect.log" ||
  fail "the collector did not write both services' profiles"
collector_stop || failures=$((failures + 1))
cat "${work}/collect.log"
if grep -q "records lost" "${work}/collect.log"; then
  fail "the collector lost records"
fi

# 4. The profiles of each service.
/usr/bin/python3 - "${root}" "${work}" <<'PY' || failures=$((failures + 1))
import glob
import json
import os
import sys

root, work = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(root, "tests", "accuracy"))
import compare  # pylint: disable=wrong-import-position

pb2 = compare.load_profile_module()
failures = []
for service in ("x86_64", "aarch64"):
    truth = json.load(open(os.path.join(work, service + ".json")))
    totals = {}
    for name, value in (("process_cpu", "cpu"), ("memory", "alloc_space")):
        total, per_function = 0, dict.fromkeys(compare.FUNCTIONS, 0)
        for path in glob.glob(os.path.join(work, "out", service, name,
                                           "*.pb.gz")):
            t, f = compare.inclusive(compare.read_profile(pb2, path), value)
            total += t
            for k in f:
                per_function[k] += f[k]
        totals[name] = (total, per_function)
        print("%s %s: total %d, %s" % (service, name, total, per_function))
    cpu_total, cpu = totals["process_cpu"]
    for function in compare.FUNCTIONS:
        if cpu[function] <= 0:
            failures.append("%s: no CPU in %s" % (service, function))
    if cpu_total:
        true_share = (truth["functions"]["SpinCompute"]["cpu_ns"] /
                      truth["process_cpu_ns"])
        share = cpu["SpinCompute"] / cpu_total
        print("%s: SpinCompute CPU share %.3f, truth %.3f" %
              (service, share, true_share))
        if abs(share - true_share) > 0.15:
            failures.append("%s: SpinCompute share %.3f, truth %.3f"
                            % (service, share, true_share))
    for function in ("AllocHeavy", "MixedWork"):
        if totals["memory"][1][function] <= 0:
            failures.append("%s: no allocations in %s" % (service, function))
for failure in failures:
    print("FAIL: " + failure)
sys.exit(1 if failures else 0)
PY

# 5. Both rings (kept), by both dumps: alike, with samples.
count_samples() {  # count_samples DUMP_OUTPUT RECORD_TYPE
  grep -c " $2 " "$1" || true
}
for service in x86_64 aarch64; do
  ring=$(ls "${rings}/${service}".*.ring 2>/dev/null | head -1)
  if [[ -z ${ring} ]]; then
    fail "no ${service} ring kept"
    continue
  fi
  AARCH64_TIMEOUT=120 on_aarch64 "${COLLECTOR}" dump "${ring}" \
    >"${work}/${service}.dump" 2>&1 ||
    fail "the aarch64 ringprof dump of the ${service} ring failed"
  timeout 60 "${host_ringprof}" dump "${ring}" >"${work}/${service}.host.dump" 2>&1 ||
    fail "the host's ringprof dump of the ${service} ring failed"
  cmp -s "${work}/${service}.dump" "${work}/${service}.host.dump" ||
    fail "the two dumps of the ${service} ring differ: $(diff "${work}/${service}.dump" "${work}/${service}.host.dump" | head -5)"
  cpu=$(count_samples "${work}/${service}.dump" CpuSample)
  alloc=$(count_samples "${work}/${service}.dump" AllocSample)
  echo "${service} ring: ${cpu} CPU, ${alloc} allocation samples (both dumps alike)"
  ((cpu > 0 && alloc > 0)) || fail "the ${service} ring shows no samples"
done

if ((failures > 0)); then
  echo "${failures} check(s) failed"
  exit 1
fi
echo "all checks passed"
