#!/usr/bin/env bash
# The real `ringprof run` shipping one run of examples/tagged (tags and
# trace spans) through both sinks at once, Pyroscope's Push API and OTLP,
# to the local receiver (tests/pyroscope_receiver), which converts OTLP as
# Pyroscope v2 does and applies Pyroscope's ingestion rules to both.
#   ringprof_otlp_test.sh direct     the OTLP sink posts to the receiver
#   ringprof_otlp_test.sh collector  through an OpenTelemetry Collector
#                                    (tools/otelcol: OTLP receiver, OTLP/HTTP
#                                    exporter, service.profilesSupport),
#                                    found by OTEL_EXPORTER_OTLP_ENDPOINT
# Checks:
#  - per sample type, the OTLP totals equal the Push totals of the same run
#    (within 1%), with the same functions (HandleHeavy among them), tag keys
#    (endpoint), span ids and service (and, sent directly, host);
#  - every OTLP request body the receiver got decodes with
#    go.opentelemetry.io/proto/otlp v1.10.0 (decode/) without an unknown
#    field, and its totals are those the receiver accepted.
set -euo pipefail

RINGPROF=collector/ringprof
EMITTER=emitter/libringprof.so
TAGGED=examples/tagged/tagged_server
RECEIVER=tests/pyroscope_receiver/receiver.py
source tools/go_modules.sh
mode=${1:?direct or collector}
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/otlp.XXXXXX")
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT
fail() {
  echo "FAIL: $*" >&2
  for f in "${work}"/*.log; do echo "--- ${f}" >&2; tail -20 "${f}" >&2; done
  exit 1
}
wait_for() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep 0.1
  done
}
json_field() { /usr/bin/python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
listening() { curl -s -o /dev/null "http://127.0.0.1:$1/"; }
accepted() { curl -sf "http://127.0.0.1:${control_port}/accepted"; }
otlp_accepted() {
  accepted | /usr/bin/python3 -c \
    "import json,sys; sys.exit(0 if sum(e['api'] == 'otlp' for e in json.load(sys.stdin)) >= 2 else 1)"
}
bodies_settled() {  # the Collector forwards on its own schedule
  local before
  before=$(ls "${work}/bodies" | wc -l)
  sleep 1
  [[ "${before}" == $(ls "${work}/bodies" | wc -l) ]]
}

# start_collector RECEIVER_URL: an OpenTelemetry Collector forwarding to it;
# sets collector_port.
start_collector() {
  local otelcol
  otelcol=$(tools/otelcol/build --cached-only) || fail "no OpenTelemetry Collector"
  collector_port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
  cat >"${work}/otelcol.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${collector_port}
exporters:
  otlp_http:
    endpoint: $1
    compression: gzip
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_http]
YAML
  "${otelcol}" --config="${work}/otelcol.yaml" \
    --feature-gates=service.profilesSupport >"${work}/otelcol.log" 2>&1 &
  pids+=($!)
  wait_for 60 listening "${collector_port}" || fail "the Collector did not start"
}

ringprof_go_build tests/otlp/decode "${work}/otlp-decode" || fail "Go decoder"
mkdir -p "${work}/bodies"
/usr/bin/python3 "${RECEIVER}" --exit-with-parent --otlp-body-dir "${work}/bodies" \
  --ready-file "${work}/ready.json" >"${work}/receiver.log" 2>&1 &
pids+=($!)
wait_for 30 test -f "${work}/ready.json" || fail "receiver did not start"
url=$(json_field url <"${work}/ready.json")
control_port=$(json_field control_port <"${work}/ready.json")

if [[ "${mode}" == collector ]]; then
  start_collector "${url}"
  export OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:${collector_port}"
else
  export OTEL_EXPORTER_OTLP_PROFILES_ENDPOINT="${url}/v1development/profiles"
fi
(cd "${work}" && "${OLDPWD}/${RINGPROF}" run --server-address="${url}" \
  --output-dir="${work}/out" --emitter="${OLDPWD}/${EMITTER}" \
  -- "${OLDPWD}/${TAGGED}" --seconds=3 --spans=1 >"${work}/run.log" 2>&1) ||
  fail "ringprof run failed"
wait_for 60 otlp_accepted || fail "no OTLP profile arrived"
wait_for 30 bodies_settled || fail "OTLP requests kept arriving"
accepted >"${work}/accepted.json"
curl -sf "http://127.0.0.1:${control_port}/rejected" >"${work}/rejected.json"
"${work}/otlp-decode" "${work}"/bodies/*.pb >"${work}/decoded.txt" ||
  fail "Go decoding: $(grep ERROR "${work}/decoded.txt")"

/usr/bin/python3 - "${work}" "${mode}" <<'PY' || fail "OTLP and Push differ"
import collections, json, sys
work, mode = sys.argv[1], sys.argv[2]
accepted = json.load(open(work + "/accepted.json"))
rejected = json.load(open(work + "/rejected.json"))
assert not rejected, "rejected: %s" % rejected
totals = {"push": collections.Counter(), "otlp": collections.Counter()}
functions = {"push": set(), "otlp": set()}
keys = {"push": set(), "otlp": set()}
services = {"push": set(), "otlp": set()}
hosts = {"push": set(), "otlp": set()}
for a in accepted:
    api = a["api"]
    for t, v in zip(a["sample_types"], a["totals"]):
        totals[api][t] += v
    functions[api] |= set(a["functions"])
    keys[api] |= set(a["sample_label_keys"])
    services[api].add(a["labels"]["service_name"])
    hosts[api].add(a["labels"].get("hostname" if api == "push" else "host.name"))
ok = True
for t, v in totals["push"].items():
    o = totals["otlp"][t]
    if v == 0 and o == 0:
        continue  # in-use types with nothing live: OTLP leaves out zeros
    close = abs(o - v) <= 0.01 * v
    print("%-22s push %12d otlp %12d %s" % (t, v, o, "ok" if close else "DIFFERS"))
    ok &= close
if totals["push"]["cpu:nanoseconds"] <= 0:
    print("no CPU profile"); ok = False
compared = [("functions", functions), ("tag keys", keys), ("service", services)]
if mode == "direct":
    # Behind a Collector the resource's attributes are lost on the way to
    # Pyroscope v2.2.1 (collector/otlp/README.md); service.name survives on
    # the samples.
    compared.append(("host", hosts))
for name, d in compared:
    if d["push"] != d["otlp"]:
        print("%s differ: push %s otlp %s" % (name, sorted(d["push"] - d["otlp"]),
                                             sorted(d["otlp"] - d["push"])))
        ok = False
if not {"endpoint", "span_id"} <= keys["otlp"]:
    print("tags or span ids missing from OTLP: %s" % sorted(keys["otlp"])); ok = False
hot = [f for f in functions["otlp"] if "HandleHeavy" in f]
if not hot:
    print("the hot function HandleHeavy is missing"); ok = False
# What Go decoded is what the receiver accepted.
decoded = collections.Counter()
for line in open(work + "/decoded.txt"):
    for field in line.split()[1:]:
        if "=" in field and "/" in field.split("=")[0]:
            k, v = field.split("=")
            decoded[k.replace("/", ":")] += int(v)
if decoded != +totals["otlp"]:
    print("Go decoded %s, receiver accepted %s" % (dict(decoded), dict(totals["otlp"])))
    ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS (${mode}): $(ls "${work}"/bodies | wc -l) OTLP requests decoded by the Go module; totals, functions, tags and span ids equal to Push"
