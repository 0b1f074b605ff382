#!/usr/bin/env bash
# `ringprof run` shipping to Pyroscope: with --server-address pointing at
# the test receiver (tests/pyroscope_receiver, which enforces Pyroscope's
# validation rules), both profile types of the run arrive, with the
# expected series labels, and nothing is rejected; the local output is
# still written.
set -euo pipefail

runfiles="${TEST_SRCDIR}/ringprof"
ringprof="${runfiles}/collector/ringprof"
hotloop="${runfiles}/examples/hotloop/hotloop"
receiver="${runfiles}/tests/pyroscope_receiver/receiver.py"
tmp="${TEST_TMPDIR}"
fail() { echo "FAIL: $*" >&2; exit 1; }

/usr/bin/python3 "${receiver}" --ready-file "${tmp}/ready.json" \
  --exit-with-parent >"${tmp}/receiver.log" 2>&1 &
receiver_pid=$!
trap 'kill ${receiver_pid} 2>/dev/null || true' EXIT
for _ in $(seq 200); do [[ -s "${tmp}/ready.json" ]] && break; sleep 0.05; done
[[ -s "${tmp}/ready.json" ]] || { cat "${tmp}/receiver.log"; fail "receiver did not start"; }
read -r url control <<<"$(/usr/bin/python3 -c '
import json, sys; r = json.load(open(sys.argv[1]))
print(r["url"], "http://127.0.0.1:%d" % r["control_port"])' "${tmp}/ready.json")"

status=0
"${ringprof}" run --server-address="${url}" --output-dir="${tmp}/out" \
  --service=shipped -- "${hotloop}" 20 >"${tmp}/run.log" 2>&1 || status=$?
cat "${tmp}/run.log"
[[ ${status} -eq 0 ]] || fail "ringprof run exited ${status}"
[[ -s "${tmp}/out/memory.pb.gz" ]] || fail "no local output next to shipping"

curl -sf "${control}/accepted" >"${tmp}/accepted.json"
curl -sf "${control}/rejected" >"${tmp}/rejected.json"
/usr/bin/python3 - "${tmp}/accepted.json" "${tmp}/rejected.json" <<'PY'
import json, sys
accepted = json.load(open(sys.argv[1]))
rejected = json.load(open(sys.argv[2]))
assert not rejected, f"rejected: {rejected}"
names = {a["labels"].get("__name__") for a in accepted}
assert {"process_cpu", "memory"} <= names, f"series names: {names}"
for a in accepted:
    labels = a["labels"]
    assert labels.get("service_name") == "shipped", labels
    if labels["__name__"] == "process_cpu":
        assert labels.get("ringprof_cpu_source") in ("timer", "alloc_ticks"), labels
        assert a["sample_types"] == ["cpu:nanoseconds"], a["sample_types"]
    elif labels["__name__"] == "memory":
        assert a["sample_types"] == ["alloc_objects:count", "alloc_space:bytes",
                                     "inuse_objects:count", "inuse_space:bytes"], a
        # Snapshots must not be differenced by the server.
        assert labels.get("__delta__") == "false", labels
    elif labels["__name__"] == "wall":
        assert a["sample_types"] == ["wall:nanoseconds"], a["sample_types"]
        assert labels.get("__delta__") == "false", labels
    else:
        # The off-CPU profiles, when the workload waited.
        assert labels["__name__"] in ("mutex", "block"), labels
    assert a["num_samples"] > 0, a
print(f"accepted {len(accepted)} profiles: {sorted(names)}")
PY
echo PASS
