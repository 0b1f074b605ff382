#!/usr/bin/env bash
# What the sidecar arrangement relies on, checked in a real gVisor sandbox
# (`runsc --rootless --network=host do`), independently of ringprof itself so
# that a failure of the end-to-end test can be told apart from a sandbox that
# lacks a capability:
#   1. runsc starts at all (otherwise: FAIL with runsc's own reason);
#   2. perf_event_open fails with ENODEV inside (why ringprof exists);
#   3. LD_PRELOAD is honoured inside;
#   4. two processes of one sandbox see each other's stores through a
#      MAP_SHARED file, both in the sandbox's tmpfs (/dev/shm) and in the
#      overlay-backed root (/tmp);
#   5. the host's 127.0.0.1 is reachable from inside with --network=host;
#   6. writes inside vanish at exit by default and reach the host with
#      -force-overlay=false.
set -euo pipefail

# An argument names the runsc to test (default: runsc_lib.sh's).
if (($#)); then RUNSC=$1; fi
source tests/gvisor/runsc_lib.sh
readonly PROBES="${PWD}/tests/gvisor"
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/sandbox_test.XXXXXX")
failures=0

check() {  # check NAME OUTFILE GREP-PATTERN
  if grep -Eq -- "$3" "$2"; then
    echo "ok:   $1"
  else
    echo "FAIL: $1 (expected /$3/ in the sandbox's output:)"
    sed 's/^/      | /' "$2"
    failures=$((failures + 1))
  fi
}

gvisor_require_runsc

# 2. perf_event_open.
gvisor_do "${work}/perf.out" "${PROBES}/perf_probe" || true
check "perf_event_open fails with ENODEV inside gVisor" "${work}/perf.out" \
  "unavailable errno=19 ENODEV"

# 3. LD_PRELOAD.
gvisor_do "${work}/preload.out" \
  /usr/bin/env LD_PRELOAD="${PROBES}/libpreload_probe.so" /bin/true || true
check "LD_PRELOAD is honoured inside" "${work}/preload.out" \
  "^preload_probe: loaded pid=[0-9]+"

# 4. Shared mapping between two processes of one sandbox.
for dir in /dev/shm /tmp; do
  gvisor_do "${work}/shm.out" /bin/sh -c "
    '${PROBES}/shared_map_probe' write ${dir}/ringprof-probe 300 &
    '${PROBES}/shared_map_probe' read ${dir}/ringprof-probe 10000
    status=\$?
    wait
    echo reader_status=\$status" || true
  check "MAP_SHARED file in ${dir} is coherent between two processes" \
    "${work}/shm.out" "reader_status=0"
done

# 5. Host loopback.
port_file="${work}/port"
python3 - "${port_file}" >"${work}/listener.out" 2>&1 <<'PY' &
import socket, sys
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen(1)
s.settimeout(30)
with open(sys.argv[1] + ".tmp", "w") as f:
    f.write(str(s.getsockname()[1]))
import os
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
conn, _ = s.accept()
print("listener received:", conn.recv(64).decode().strip())
PY
listener=$!
for _ in $(seq 100); do [[ -s "${port_file}" ]] && break; sleep 0.05; done
port=$(cat "${port_file}")
gvisor_do "${work}/net.out" /bin/bash -c \
  "exec 3<>/dev/tcp/127.0.0.1/${port} && echo hello-from-gvisor >&3" || true
wait "${listener}" || true
check "host 127.0.0.1:${port} is reachable from inside" "${work}/listener.out" \
  "listener received: hello-from-gvisor"

# 6. Where writes go.
marker="${work}/written-inside"
gvisor_do "${work}/overlay.out" /bin/sh -c "echo x > '${marker}'" || true
if [[ -e "${marker}" ]]; then
  echo "FAIL: a write inside the default overlay reached the host"
  failures=$((failures + 1))
else
  echo "ok:   writes inside vanish at exit with the default overlay"
fi
gvisor_do "${work}/overlay.out" -force-overlay=false -- \
  /bin/sh -c "echo x > '${marker}'" || true
if [[ -e "${marker}" ]]; then
  echo "ok:   writes reach the host with -force-overlay=false"
else
  echo "FAIL: a write inside with -force-overlay=false did not reach the host"
  sed 's/^/      | /' "${work}/overlay.out"
  failures=$((failures + 1))
fi

if ((failures)); then
  echo "${failures} sandbox check(s) failed"
  exit 1
fi
echo "all sandbox checks passed"
