#!/usr/bin/env bash
# Debian's real xz under `ringprof run`: its worker threads run with every
# signal blocked (xz blocks them before pthread_create), which used to keep
# them out of the CPU profile entirely. Asserts that the process_cpu profile
# accounts for at least 70% of the CPU xz used (user + sys, measured by the
# shell that runs it, inside the profiled process tree).
#
# Usage: xz_test.sh (Bazel sh_test; runfiles: ringprof, libringprof.so)
set -uo pipefail

root="${TEST_SRCDIR:?}/${TEST_WORKSPACE:-ringprof}"
work=$(mktemp -d /tmp/ringprof-xz.XXXXXX)
trap 'rm -rf "${work}"' EXIT
xz_bin=$(command -v xz) || { echo "FAIL: xz is not installed (tools/setup)"; exit 1; }

# ~6 MB of incompressible-ish text: a few seconds of xz -6 CPU.
/usr/bin/python3 - "${work}/input.txt" <<'PY'
import random, string, sys
rng = random.Random(1234)
letters = string.ascii_letters + string.digits
with open(sys.argv[1], "w") as f:
    for _ in range(60000):
        f.write("".join(rng.choice(letters) for _ in range(100)) + "\n")
PY

# bash's `time` reports the CPU of the xz it waited for.
timeout --kill-after=5 300 "${root}/collector/ringprof" run \
  --output-dir="${work}/out" --emitter="${root}/emitter/libringprof.so" -- \
  /bin/bash -c 'TIMEFORMAT="xz_cpu %U %S"; time "$0" -T2 -6 -k -f "$1"' \
  "${xz_bin}" "${work}/input.txt" >"${work}/run.txt" 2>&1
status=$?
if ((status != 0)); then
  cat "${work}/run.txt"
  echo "FAIL: ringprof run exited with ${status}"
  exit 1
fi

/usr/bin/python3 - "${work}/run.txt" "${work}/out/top.txt" <<'PY'
import re, sys
run = open(sys.argv[1]).read()
m = re.search(r"xz_cpu ([0-9.]+) ([0-9.]+)", run)
if not m:
    sys.exit("FAIL: no CPU time from the shell:\n" + run)
xz_cpu = float(m.group(1)) + float(m.group(2))
top = open(sys.argv[2]).read()
cpu_section = top.split("Allocated bytes")[0]
m = re.search(r"of ([0-9.]+)(ms|s) total", cpu_section)
if not m:
    sys.exit("FAIL: no process_cpu total in top.txt:\n" + top[:2000])
profile = float(m.group(1)) / (1000 if m.group(2) == "ms" else 1)
share = profile / xz_cpu if xz_cpu > 0 else 0
print("xz used %.2f s CPU; the CPU profile accounts %.2f s (%.0f%%)"
      % (xz_cpu, profile, 100 * share))
if share < 0.70:
    sys.exit("FAIL: the CPU profile accounts less than 70% of xz's CPU")
print("all checks passed")
PY
