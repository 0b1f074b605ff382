#!/usr/bin/env bash
# One `ringprof run` of examples/tagged (tags, trace spans) shipping
# through Push straight to the local receiver (tests/pyroscope_receiver)
# and through OTLP via an OpenTelemetry Collector (tools/otelcol: the OTLP
# receiver, the OTLP/HTTP exporter, feature gate service.profilesSupport)
# to the receiver's /v1development/profiles, found by the SDKs' generic
# OTEL_EXPORTER_OTLP_ENDPOINT. What the Collector forwards must read back
# as the Push path does: per sample type totals within 1%, the same
# functions, tag keys and span ids, the same service_name; and every body
# the Collector sent must decode with go.opentelemetry.io/proto/otlp
# v1.10.0 without an unknown field.
set -euo pipefail

RINGPROF=collector/ringprof
EMITTER=emitter/libringprof.so
TAGGED=examples/tagged/tagged_server
RECEIVER=tests/pyroscope_receiver/receiver.py
source tools/go_modules.sh
work=$(mktemp -d "${TEST_TMPDIR:-/tmp}/otelcol.XXXXXX")
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

otelcol=$(tools/otelcol/build --cached-only) || fail "no OpenTelemetry Collector"
ringprof_go_build tests/otlp/decode "${work}/otlp-decode" || fail "Go decoder"
mkdir -p "${work}/bodies"
/usr/bin/python3 "${RECEIVER}" --exit-with-parent --otlp-body-dir "${work}/bodies" \
  --ready-file "${work}/ready.json" >"${work}/receiver.log" 2>&1 &
pids+=($!)
wait_for 30 test -f "${work}/ready.json" || fail "receiver did not start"
url=$(json_field url <"${work}/ready.json")
control_port=$(json_field control_port <"${work}/ready.json")
port=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
cat >"${work}/otelcol.yaml" <<YAML
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:${port}
exporters:
  otlp_http:
    endpoint: ${url}
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
wait_for 60 listening "${port}" || fail "the Collector did not start"

(cd "${work}" && OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:${port}" \
  "${OLDPWD}/${RINGPROF}" run --server-address="${url}" --output-dir="${work}/out" \
  --emitter="${OLDPWD}/${EMITTER}" -- "${OLDPWD}/${TAGGED}" --seconds=3 \
  --spans=1 >"${work}/run.log" 2>&1) || fail "ringprof run failed"
accepted_apis() {
  curl -sf "http://127.0.0.1:${control_port}/accepted" | /usr/bin/python3 -c \
    "import json,sys; a=json.load(sys.stdin); print(sum(e['api']=='otlp' for e in a) >= 2)" |
    grep -q True
}
# The Collector batches and forwards on its own schedule.
wait_for 60 accepted_apis || fail "nothing arrived through the Collector"
sleep_until_settled() {
  local before after
  before=$(ls "${work}/bodies" | wc -l)
  sleep 1  # the Collector may still be forwarding the last window
  after=$(ls "${work}/bodies" | wc -l)
  [[ "$before" == "$after" ]]
}
wait_for 30 sleep_until_settled || fail "the Collector kept sending"
curl -sf "http://127.0.0.1:${control_port}/accepted" >"${work}/accepted.json"
curl -sf "http://127.0.0.1:${control_port}/rejected" >"${work}/rejected.json"
"${work}/otlp-decode" "${work}"/bodies/*.pb >"${work}/decoded.txt" ||
  fail "Go decoding: $(grep ERROR "${work}/decoded.txt")"

/usr/bin/python3 - "${work}" <<'PY' || fail "what the Collector forwarded differs from Push"
import collections, json, sys
work = sys.argv[1]
accepted = json.load(open(work + "/accepted.json"))
assert not json.load(open(work + "/rejected.json")), "rejections"
totals = {"push": collections.Counter(), "otlp": collections.Counter()}
functions = {"push": set(), "otlp": set()}
keys = {"push": set(), "otlp": set()}
services = {"push": set(), "otlp": set()}
for a in accepted:
    api = a["api"]
    for t, v in zip(a["sample_types"], a["totals"]):
        totals[api][t] += v
    functions[api] |= set(a["functions"])
    keys[api] |= set(a["sample_label_keys"])
    services[api].add(a["labels"]["service_name"])
ok = True
for t, v in totals["push"].items():
    o = totals["otlp"][t]
    if v == 0 and o == 0:
        continue
    close = abs(o - v) <= 0.01 * v
    print("%-22s push %12d via Collector %12d %s" % (t, v, o, "ok" if close else "DIFFERS"))
    ok &= close
for name, d in (("functions", functions), ("tag keys", keys), ("service", services)):
    if d["push"] != d["otlp"]:
        print("%s differ: push %s, via Collector %s" % (name, sorted(d["push"]), sorted(d["otlp"])))
        ok = False
if not {"endpoint", "span_id"} <= keys["otlp"]:
    print("tags or span ids lost: %s" % sorted(keys["otlp"])); ok = False
sys.exit(0 if ok else 1)
PY
echo "PASS: $(ls "${work}"/bodies | wc -l) requests through the OpenTelemetry Collector read back as Push"
