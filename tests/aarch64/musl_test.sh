#!/usr/bin/env bash
# The aarch64 emitter in a musl program (Debian's musl:arm64, the libc
# Alpine uses) under qemu-aarch64 -cpu max: the workload of tests/musl,
# built with aarch64-linux-musl-gcc (return addresses signed:
# -mbranch-protection=standard; frame pointers kept, as in tests/musl), its
# loader musl's (/lib/ld-musl-aarch64.so.1), which maps libringprof.so's
# libc.so.6 to itself: no glibc in the process.
#
#  1. With and without the emitter: same stdout, same (empty) stderr, same
#     exit status 5; its fork child exits 3. (Its exec'd children fail alike
#     in both runs: an exec'd aarch64 program needs binfmt_misc, not here.)
#  2. With the emitter: complete rings with samples, the `libc "musl"`
#     environment fact and ProcessEnd's exit status unknown (-1).
#  3. The host's `ringprof collect` follows the workload (8 s of CPU, the
#     timer at 1000 Hz as in tests/musl): alloc_space of AllocHeavy (every
#     allocation entry point) and MixedWork within 5% of the bytes
#     requested, CPU shares within L1 0.05 (tests/accuracy's compare.py).
#     musl's libc has no unwind tables on aarch64 either: samples inside it
#     are walked through its frame records and the link register.
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
# shellcheck source=tests/aarch64/qemu_lib.sh
source "${root}/tests/aarch64/qemu_lib.sh"
COLLECTOR="${root}/collector/ringprof"
lib="${root}/aarch64/libringprof.so"
source_c="${root}/tests/musl/musl_workload.c"
export HOME="${TEST_TMPDIR:?}" GOCACHE="${TEST_TMPDIR}/gocache" PPROF_TMPDIR="${TEST_TMPDIR}"
work=$(mktemp -d /tmp/ringprof-aarch64-musl.XXXXXX)
cleanup() {
  [[ -n ${collector_pid} ]] && kill -KILL "${collector_pid}" 2>/dev/null
  rm -rf "${work}"
}
trap cleanup EXIT
fail() { echo "FAIL: $*"; exit 1; }
pass() { echo "PASS: $*"; }

command -v aarch64-linux-musl-gcc >/dev/null ||
  fail "aarch64-linux-musl-gcc not found (tools/setup installs musl-dev:arm64)"
[[ -e /lib/ld-musl-aarch64.so.1 ]] ||
  fail "/lib/ld-musl-aarch64.so.1 not found (tools/setup installs musl:arm64)"
workload="${work}/musl_workload"
aarch64-linux-musl-gcc -O2 -g -fno-omit-frame-pointer \
  -mbranch-protection=standard -Wl,--eh-frame-hdr -Wl,--build-id \
  -o "${workload}" "${source_c}" || fail "cannot build the workload"
readelf -l "${workload}" | grep -q "ld-musl-aarch64.so.1" ||
  fail "the workload is not an aarch64 musl program"

# 1 and 2.
rc=0
AARCH64_TIMEOUT=120 on_aarch64 "${workload}" "${work}/truth0.json" 1 \
  >"${work}/base.out" 2>"${work}/base.err" || rc=$?
((rc == 5)) || fail "without the emitter: exit ${rc}: $(head -c 300 "${work}/base.err")"
grep -q "fork child exited 3" "${work}/base.out" || fail "workload: $(cat "${work}/base.out")"
mkdir -p "${work}/rings1"
rc=0
AARCH64_TIMEOUT=120 on_aarch64 RINGPROF_PRELOAD="${lib}" \
  RINGPROF_DIR="${work}/rings1" "${workload}" "${work}/truth1.json" 1 \
  >"${work}/with.out" 2>"${work}/with.err" || rc=$?
((rc == 5)) || fail "with the emitter: exit ${rc}: $(head -c 500 "${work}/with.err")"
cmp -s "${work}/base.out" "${work}/with.out" ||
  fail "stdout differs with the emitter: $(diff "${work}/base.out" "${work}/with.out" | head)"
cmp -s "${work}/base.err" "${work}/with.err" ||
  fail "stderr differs with the emitter: $(head -c 500 "${work}/with.err")"
pass "exit 5, stdout ($(wc -l <"${work}/with.out") lines) and stderr unchanged with the emitter"
rings=("${work}/rings1"/musl_workload.*.ring)
((${#rings[@]} >= 2)) || fail "want rings of the workload and its fork child: ${rings[*]}"
for ring in "${rings[@]}"; do
  dump=$("${COLLECTOR}" dump "${ring}" 2>&1) || fail "ringprof dump ${ring}: ${dump}"
  grep -q "process ended" <<<"${dump}" || fail "$(basename "${ring}") incomplete"
  grep -q 'EnvironmentFact libc "musl"' <<<"${dump}" || fail "$(basename "${ring}"): no libc fact"
  grep -q 'ProcessEnd exit_status=-1' <<<"${dump}" ||
    fail "$(basename "${ring}"): exit status not unknown: $(grep ProcessEnd <<<"${dump}")"
  grep -q "AllocSample" <<<"${dump}" || fail "$(basename "${ring}"): no samples"
done
pass "${#rings[@]} complete rings with samples, the musl fact, exit status unknown"

# 3.
collector_start "${work}/out" "${work}/rings" "${work}/collect.log" || exit 1
rc=0
on_aarch64 RINGPROF_PRELOAD="${lib}" RINGPROF_DIR="${work}/rings" \
  RINGPROF_CPU_HZ=1000 "${workload}" "${work}/truth.json" 8 \
  >"${work}/run.out" 2>"${work}/run.err" || rc=$?
collector_stop || exit 1
((rc == 5)) || fail "the profiled run: exit ${rc}: $(head -c 300 "${work}/run.err")"
pid=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "${work}/truth.json")
mkdir -p "${work}/own"
for kind in process_cpu memory; do
  files=("${work}/out/musl_workload/${kind}/${pid}".*.pb.gz)
  [[ -s ${files[0]} ]] || fail "no ${kind} profile for pid ${pid}: $(ls -R "${work}/out" | head -20)"
  go tool pprof -proto "${files[@]}" >"${work}/own/${kind}.pb.gz" 2>"${work}/pprof.err" ||
    fail "go tool pprof cannot merge the ${kind} profiles: $(head -c 300 "${work}/pprof.err")"
done
/usr/bin/python3 "${root}/tests/accuracy/compare.py" --truth="${work}/truth.json" \
  --out="${work}/own" --json="${work}/result.json" --label=musl-aarch64 || exit 1
/usr/bin/python3 - "${work}/result.json" <<'PY' || exit 1
import json, sys
result = json.load(open(sys.argv[1]))
bad = []
if result["cpu_l1"] > 0.05:
    bad.append("CPU L1 %.3f > 0.05" % result["cpu_l1"])
for name in ("AllocHeavy", "MixedWork"):
    ratio = result["alloc"][name]["ratio"]
    if ratio is None or abs(ratio - 1) > 0.05:
        bad.append("%s alloc ratio %s" % (name, ratio))
if bad:
    print("FAIL: " + "; ".join(bad))
    sys.exit(1)
print("PASS: CPU L1 %.3f, alloc ratios %s" % (result["cpu_l1"], ", ".join(
    "%s %.3f" % (n, result["alloc"][n]["ratio"]) for n in ("AllocHeavy", "MixedWork"))))
PY
echo "PASS"
