#!/usr/bin/env bash
# The accuracy suite's hard assertions (README.md): examples/accuracy under
# `ringprof run` with CPU-timer sampling on, natively or inside gVisor
# (`runsc --rootless --network=host do`, collector and comparison inside the
# sandbox too), on its randomised chunks or on strictly periodic phases.
# Asserts what is reliably met:
#   - CPU shares: L1 distance to the truth <= 0.05 (chunks), 0.06 (phases);
#   - alloc_space per allocating function within +-5% of the bytes requested;
#   - SpinCompute, which never allocates, has no allocation bytes.
# The full table, and allocation-only mode, are in tools/bench.d/accuracy;
# the 20-run check on periodic phases in tools/bench.d/accuracy_periodic.
#
# Chunks. Run length: each thread works CPU_SECONDS=6 of CPU (12 s in all), sized
# so that the sampling error is a third of the 0.05 bound. A periodic
# sampler (period P = 10 ms) errs by a fraction of a period at each chunk
# end: variance ~P^2/6 per chunk. A function with share p runs
# n = p T / 30 ms chunks of the T seconds of CPU, so its share errs by
# sd = P sqrt(n/6) / T = 0.01 sqrt(p / (0.18 T)); over the three functions
# (p = 0.5, 0.3, 0.2) and "other" (the sum of their errors), E[L1] =
# sqrt(2/pi) * sum(sd) = 0.025 at T = 4 s and 0.015 at T = 12 s, about
# 0.05/3. Measured in gVisor (systrap, load 3-8): at 2 x 2 s L1 median
# 0.035, max 0.076, 7 of 45 runs above 0.05; at 2 x 6 s median 0.020, max
# 0.037, none of 35 above 0.05 (natively 0.008-0.011, 5 runs). Two gVisor
# effects add to the sampling error. CPU the process spends before the
# emitter's constructor and after each thread's last expiry (60-110 ms
# there) is in the truth's "other" but in no sample: L1 up to 2 x 0.1/T,
# 0.05 at T = 4 s, 0.017 at 12 s. And on a loaded host an expiry is
# sometimes noticed only when the thread next enters the sentry, at the
# workload's clock_gettime between chunks: "other" gains about 0.01 of
# share at load 8, whatever T.
#
# Phases (--phases_ms=A,B: SpinCompute for A ms of CPU, MixedWork for B,
# cycle after cycle, in step with the 10 ms timer when A + B is a multiple
# of it), 2 x 8 s, L1 <= 0.06. Natively 12 + 8 ms: a fixed-phase sampler
# sees each cycle at the same two points and a whole run errs the same way
# (L1 0.003-0.089 over 9 runs; 0.070 on this test). The timer samples each
# period once at a random point, spread over blocks of 60 periods so that
# work repeating every 2 periods is seen at evenly spread points
# (emitter/CPU_TIMER.md, "Sample points"): simulated, L1 at most 0.024 in
# 2,000 runs of 2 threads that have their cores (0.002 on this test). On a
# loaded machine the kernel sees expiries only on the scheduler ticks at
# which the thread is running, so samples fall where those fall and the
# error grows towards that of independent samples: 0.019-0.042 at load
# average 18 on 2 cores; the bound leaves room for that. In gVisor the
# thread CPU clock advances in 10 ms steps, so phases are multiples of it
# (30 + 20 ms: a 12 ms phase would last 20 ms and the next none); its timer
# expiries are seen at those steps whatever the sample point, each step
# counted by the function whose clock read saw it in both the truth and the
# profile.
#
# Usage: accuracy_test.sh native|gvisor [chunks|phases]
set -uo pipefail
# gVisor 20240729 (systrap platform) from tools/setup; RUNSC=runsc runs
# Debian 12's 20221219 (ptrace platform) instead.
RUNSC="${RUNSC:-/opt/runsc-20240729/runsc}"

mode=${1:?native|gvisor}
workload=${2:-chunks}
max_l1=0.05
cpu_seconds=6
workload_args=()
checked_alloc=(AllocHeavy MixedWork)
if [[ ${workload} == phases ]]; then
  cpu_seconds=8
  checked_alloc=(MixedWork)
  max_l1=0.06
  if [[ ${mode} == native ]]; then
    workload_args=(--phases_ms=12,8)
  else
    workload_args=(--phases_ms=30,20)
  fi
fi
root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
work=$(mktemp -d /tmp/ringprof-accuracy.XXXXXX)
trap 'rm -rf "${work}"' EXIT

run_in_mode() {
  if [[ ${mode} == native ]]; then
    timeout --kill-after=5 200 "$@"
    return
  fi
  mkdir -p "${work}/runsc"
  timeout --kill-after=5 200 "${RUNSC}" --rootless --network=host \
    --root="${work}/runsc" do -force-overlay=false "$@"
}

if [[ ${mode} == gvisor ]] &&
  ! run_in_mode /bin/true >"${work}/probe.txt" 2>&1; then
  echo "FAIL: runsc cannot start a sandbox here:"
  cat "${work}/probe.txt"
  exit 1
fi

run_in_mode bash "${root}/tests/accuracy/run_accuracy.sh" "${root}" \
  "${work}/run" timer 2 "${cpu_seconds}" "${workload_args[@]}" \
  >"${work}/run.txt" 2>&1
status=$?
cat "${work}/run.txt"
if ((status != 0)); then
  echo "FAIL: the profiled run failed (exit ${status})"
  exit 1
fi

/usr/bin/python3 - "${work}/run/result.json" "${max_l1}" \
  "${checked_alloc[@]}" <<'PY'
import json
import sys

result = json.load(open(sys.argv[1]))
max_l1 = float(sys.argv[2])
failures = []
if not result["cpu_l1"] <= max_l1:
    failures.append("CPU shares: L1 %.3f > %.2f" % (result["cpu_l1"], max_l1))
for name in sys.argv[3:]:
    ratio = result["alloc"][name]["ratio"]
    if ratio is None or not 0.95 <= ratio <= 1.05:
        failures.append("%s alloc_space ratio %s outside [0.95, 1.05]"
                        % (name, ratio))
if result["alloc"]["SpinCompute"]["reported_bytes"] != 0:
    failures.append("SpinCompute has allocation bytes")
for failure in failures:
    print("FAIL: " + failure)
print("%d check(s) failed" % len(failures) if failures else "all checks passed")
sys.exit(1 if failures else 0)
PY
