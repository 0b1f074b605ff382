#!/usr/bin/env bash
# Runs the signal workload's scenarios under LD_PRELOAD=libringprof.so and
# checks the ring files with ringdump (see preload_test.sh).
#
# Usage: preload_checks.sh native|gvisor|qemu RUNFILES_ROOT WORK_DIR
#
# In gVisor /proc/self/timers and SigCgt do not exist: the workload reports
# -1 for them and only the checks that do not need them apply. Under qemu
# (qemu: the workload and the library are aarch64 builds, run under
# `qemu-aarch64 -cpu max`; the rings are read by the host's ringdump) both
# show qemu-user's own handlers and timers, so those checks are skipped, and
# so are the fork/exec ones (no binfmt_misc here to run an exec'd aarch64
# image) and the inherited SIG_IGN (qemu-user renumbers real-time signals).
set -uo pipefail

mode=$1
root=$2
work=$3
lib="${root}/emitter/libringprof.so"
workload="${root}/tests/cpu_timer/signal_workload"
ringdump="${root}/ringfile/ringdump"
signal=60
failures=0
mkdir -p "${work}"
preload=(LD_PRELOAD="${lib}")
runner=()
if [[ ${mode} == qemu ]]; then
  preload=(QEMU_SET_ENV="LD_PRELOAD=${lib}")
  runner=(qemu-aarch64 -cpu max)
fi

fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# run NAME SCENARIO [ENV...]: runs the workload with the library preloaded
# and its ring files in ${work}/NAME; stdout in NAME.out, stderr in NAME.err.
run() {
  local name=$1 scenario=$2
  shift 2
  mkdir -p "${work}/${name}"
  timeout --kill-after=5 90 env "${preload[@]}" \
    RINGPROF_DIR="${work}/${name}" RINGPROF_CPU_SIGNAL="${signal}" "$@" \
    ${runner[@]+"${runner[@]}"} "${workload}" "${scenario}" \
    >"${work}/${name}.out" 2>"${work}/${name}.err"
  local status=$?
  echo "--- ${name}: exit ${status}: $(grep '^stat' "${work}/${name}.out" |
    cut -d' ' -f2- | tr '\n' ',')"
  sed 's/^/    stderr: /' "${work}/${name}.err"
  ((status == 0)) || fail "${name}: the workload failed (exit ${status})"
}

stat_of() { awk -v k="$2" '$1 == "stat" && $2 == k { print $3 }' "${work}/$1.out"; }

# "TID PERIOD_NS" for every CpuSample in NAME's ring files.
cpu_samples() {
  local f
  for f in "${work}/$1"/*.ring; do
    [[ -e ${f} ]] || continue
    "${ringdump}" "${f}" | awk '$5 == "CpuSample" {
      sub("tid=", "", $6); sub("period=", "", $7); sub("ns", "", $7)
      print $6, $7 }'
  done
}

# check_thread NAME LABEL: the thread whose tid the workload printed as
# LABEL_tid was sampled, and its samples' weights add up to its CPU time.
check_thread() {
  local name=$1 label=$2 tid cpu
  tid=$(stat_of "${name}" "${label}_tid")
  cpu=$(stat_of "${name}" "${label}_cpu_ns")
  cpu_samples "${name}" | awk -v tid="${tid}" -v cpu="${cpu}" -v who="${label}" '
    $1 == tid { n++; sum += $2 }
    END {
      printf "    %s: %d samples, weights %.3f s of %.3f s CPU\n", who, n, sum / 1e9, cpu / 1e9
      # At 100 Hz: weights cover the CPU up to the last sample (for a
      # thread running in short bursts, the unsampled tail can be longer).
      if (n == 0 || sum > cpu + 2e7 || sum < cpu * 0.8 - 3e7) exit 1
    }' || fail "${name}: ${label} (tid ${tid}) not sampled, or weights off"
}

echo "mode ${mode}"

# 1. Signal-sensitive workload, sampler on: the workload checks itself; its
#    threads are sampled with the right weights.
run sensitive sensitive RINGPROF_CPU_HZ=100
check_thread sensitive spinner
check_thread sensitive pipe_reader

# 2. Sampler off: the same workload, no CPU samples, no handler, no timer.
run sensitive_off sensitive RINGPROF_CPU_HZ=0
n=$(cpu_samples sensitive_off | wc -l)
((n == 0)) || fail "RINGPROF_CPU_HZ=0 still wrote ${n} CPU samples"
run leftovers_off leftovers RINGPROF_CPU_HZ=0
[[ ${mode} == qemu || $(stat_of leftovers_off caught_running) != 1 ]] ||
  fail "RINGPROF_CPU_HZ=0 installed a handler"
[[ $(stat_of leftovers_off timers_running) -le 0 ]] ||
  fail "RINGPROF_CPU_HZ=0 created timers"
[[ $(stat_of leftovers_off default_disposition_running) == 1 ]] ||
  fail "RINGPROF_CPU_HZ=0 changed the signal's disposition"
# ...and the probes see the sampler when it is on (so they can fail).
run leftovers_on leftovers RINGPROF_CPU_HZ=100
[[ $(stat_of leftovers_on default_disposition_running) == 0 ]] ||
  fail "sampler on, but the signal's disposition is the default"
if [[ ${mode} == native ]]; then
  [[ $(stat_of leftovers_on caught_running) == 1 ]] ||
    fail "sampler on, but SigCgt does not show its handler"
  [[ $(stat_of leftovers_on timers_running) -ge 1 ]] ||
    fail "sampler on, but /proc/self/timers shows no timer"
fi

# 3. Thread churn: every thread with 100 ms of CPU is sampled; exited
#    threads leave no timer.
run threads threads RINGPROF_CPU_HZ=100
missing=0
for tid in $(stat_of threads long_thread_tid); do
  cpu_samples threads | awk -v t="${tid}" '$1 == t { found = 1 } END { exit !found }' ||
    missing=$((missing + 1))
done
echo "    long-lived threads without a sample: ${missing}"
((missing == 0)) || fail "threads: ${missing} busy threads were not sampled"
[[ $(stat_of threads timers_after_churn) -le 1 ]] ||
  fail "threads: exited threads left timers behind"

# 4. fork and exec: the forked child and the exec'd image write their own
#    CPU samples (parent + child + exec'd image = 3 files with samples).
if [[ ${mode} == qemu ]]; then
  echo "--- fork, exec_storm: skipped under qemu (an exec'd aarch64 image needs binfmt_misc)"
else
run fork fork RINGPROF_CPU_HZ=100
with_samples=0
for f in "${work}/fork"/*.ring; do
  [[ -e ${f} ]] || continue
  if "${ringdump}" "${f}" | awk '$5 == "CpuSample" { found = 1 } END { exit !found }'; then
    with_samples=$((with_samples + 1))
  fi
done
echo "    ring files with CPU samples: ${with_samples}"
((with_samples >= 3)) || fail "fork: parent, fork child and exec'd image not all sampled"

# 4b. fork + exec at 1000 Hz: no exec'd image is killed by a sample signal
#     left pending across exec (emitter/exec_interpose.cc).
run exec_storm exec_storm RINGPROF_CPU_HZ=1000
fi

# 5. The application takes the signal after start: the sampler backs off.
#    Silently: the fact is in the ring file (EnvironmentFact cpu_timer_off),
#    on stderr only with RINGPROF_LOG=stderr.
run backoff backoff RINGPROF_CPU_HZ=100
[[ ! -s "${work}/backoff.err" ]] || fail "backoff: stderr is not empty"
facts=$(for f in "${work}/backoff"/*.ring; do
  [[ -e ${f} ]] && "${ringdump}" "${f}" | grep EnvironmentFact; done)
grep -q "cpu_timer_off \"the application uses signal ${signal}" <<<"${facts}" ||
  fail "backoff: no cpu_timer_off fact in the ring: ${facts}"
run backoff_logged backoff RINGPROF_CPU_HZ=100 RINGPROF_LOG=stderr
grep -q "the application uses signal ${signal}" "${work}/backoff_logged.err" ||
  fail "backoff: no report on stderr with RINGPROF_LOG=stderr"

# 5b. The application uses the signal without a handler (its own timer and
#     sigwait): it gets all its signals, the sampler backs off.
run own_sigwait own_sigwait RINGPROF_CPU_HZ=100 RINGPROF_LOG=stderr
grep -q "the application uses signal ${signal}" "${work}/own_sigwait.err" ||
  fail "own_sigwait: no report on stderr"

# 5c. Samples landing inside libgcc's unwinder (C++ throws), also after a
#     JIT-style frame registration: no deadlock, every throw caught.
run exceptions exceptions RINGPROF_CPU_HZ=1000
run exceptions_jit exceptions_jit RINGPROF_CPU_HZ=1000
n=$(cpu_samples exceptions_jit | wc -l)
echo "    exceptions_jit: ${n} CPU samples"
((n > 0)) || fail "exceptions_jit: no CPU samples"

# 6. The signal is taken before start (an inherited SIG_IGN): no sampling.
#    (Not under qemu: qemu-user maps the program's real-time signals onto
#    other host signals, so the host's ignored signal 60 is not its 60.)
if [[ ${mode} == qemu ]]; then
  echo "--- preinstalled: skipped under qemu"
else
trap '' "${signal}"
run preinstalled preinstalled RINGPROF_CPU_HZ=100 RINGPROF_LOG=stderr
trap - "${signal}"
grep -q "signal ${signal} is already handled" "${work}/preinstalled.err" ||
  fail "preinstalled: no report on stderr"
n=$(cpu_samples preinstalled | wc -l)
((n == 0)) || fail "preinstalled: ${n} CPU samples on a taken signal"
fi

if ((failures > 0)); then
  echo "${failures} check(s) failed"
  exit 1
fi
echo "all checks passed"
