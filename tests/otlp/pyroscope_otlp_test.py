#!/usr/bin/python3
"""ringprof's OTLP export into a real Grafana Pyroscope v2.2.1
(tests/pyroscope_server), read back through its query API and compared
with the Push path of the same run:

  direct:     `ringprof run` of examples/tagged (endpoint tags, a trace span
              per request) shipping through Push and OTLP at once: per
              sample type the OTLP series' totals and the five hottest
              functions' self values within 1% of Push's, the endpoint tag
              and the five busiest spans queryable with the same values,
              the resource attributes stored as series labels;
  collector:  the same with an OpenTelemetry Collector (tools/otelcol) in
              between, found by OTEL_EXPORTER_OTLP_ENDPOINT: the same
              values, tags, spans and service_name;
  outage:     the OTLP endpoint unreachable during the run: everything
              waits in --otlp-spool-dir, and a `ringprof collect` started
              later delivers it: the server then holds the run's totals.

The CPU profile goes in OpenTelemetry's CPU convention, which Pyroscope
stores under Push's profile type id; memory arrives under Push's name with
another period type (collector/otlp/README.md).
The block profile is compared too (named block through both), and the wall
profile (the same id through both).
Every wait polls with a deadline.
"""

import collections
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tests", "pyroscope_server"))
import pyroscope_server  # noqa: E402
from pyroscope_server import run  # noqa: E402
import query  # noqa: E402
import readback  # noqa: E402

RINGPROF = os.path.join(ROOT, "collector", "ringprof")
EMITTER = os.path.join(ROOT, "emitter", "libringprof.so")
TAGGED = os.path.join(ROOT, "examples", "tagged", "tagged_server")
OTELCOL_BUILD = os.path.join(ROOT, "tools", "otelcol", "build")
# Push profile type -> what Pyroscope makes of the same data sent as OTLP.
PAIRS = {
    "process_cpu:cpu:nanoseconds:cpu:nanoseconds":
        "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
    "memory:alloc_space:bytes:space:bytes":
        "memory:alloc_space:bytes:memory:bytes",
    "memory:alloc_objects:count:space:bytes":
        "memory:alloc_objects:count:memory:bytes",
    "block:delay:nanoseconds:contentions:count":
        "block:delay:nanoseconds:block:count",
    "wall:wall:nanoseconds:wall:nanoseconds":
        "wall:wall:nanoseconds:wall:nanoseconds",
}
CPU_PUSH, CPU_OTLP = list(PAIRS.items())[0]
TOLERANCE = 0.01


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def profile_tagged(work, name, args, env=None):
    out = os.path.join(work, name)
    run([RINGPROF, "run", "--application-name=" + name, "--tags=env=test",
         "--output-dir=" + out, "--emitter=" + EMITTER] + args +
        ["--", TAGGED, "--seconds=3", "--spans=1"],
        os.path.join(work, name + ".log"), env=env)
    return out


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, ok, message):
        print("%s: %s" % ("ok" if ok else "FAIL", message), flush=True)
        if not ok:
            self.failures.append(message)


def within(a, b):
    return abs(a - b) <= TOLERANCE * max(abs(b), 1)


def time_range(out):
    windows = readback.local_windows(out)
    return (min(w.from_ms for w in windows) - 60000,
            max(w.until_ms for w in windows) + 60000)


def settled_total(client, profile_type, selector, start, end, want,
                  span_ids=None):
    """The flame graph once its total stops short of `want` no more
    (profiles become queryable a moment after they are sent)."""
    last = [None]

    def ready():
        last[0] = client.select_merge_stacktraces(profile_type, selector,
                                                  start, end, span_ids)
        return within(last[0]["total"], want)
    try:
        client.wait_for(ready, "%s %s" % (profile_type, selector), 60)
    except AssertionError:
        pass
    return last[0]


def selectors(service, extra=""):
    """(Push, OTLP) selectors of `service`: the CPU profile has one profile
    type id through both, and only OTLP series carry __otel__="true"."""
    return ('{service_name="%s",__otel__!="true"%s}' % (service, extra),
            '{service_name="%s",__otel__="true"%s}' % (service, extra))


def compare_with_push(client, checks, out, service, expect_resource):
    """The OTLP series of `service` against its Push series, type by type."""
    start, end = time_range(out)
    push_selector, selector = selectors(service)
    for push_type, otlp_type in PAIRS.items():
        push = client.wait_for(
            lambda: (lambda g: g if g["total"] > 0 else None)(
                client.select_merge_stacktraces(push_type, push_selector,
                                                start, end)),
            "%s of %s through Push" % (push_type, service), 90)
        otlp = settled_total(client, otlp_type, selector, start, end,
                             push["total"])
        checks.expect(within(otlp["total"], push["total"]),
                      "%s %s: OTLP %d, Push %d" % (
                          service, otlp_type, otlp["total"], push["total"]))
        push_self = query.self_by_function(push)
        otlp_self = query.self_by_function(otlp)
        for function, value in collections.Counter(push_self).most_common(5):
            checks.expect(within(otlp_self.get(function, 0), value),
                          "%s %s hot function %s: OTLP %d, Push %d" % (
                              service, otlp_type, function[:60],
                              otlp_self.get(function, 0), value))
    for endpoint in ("/heavy", "/light"):
        push_tagged, tagged = selectors(service, ',endpoint="%s"' % endpoint)
        push = client.select_merge_stacktraces(CPU_PUSH, push_tagged, start,
                                               end)
        otlp = settled_total(client, CPU_OTLP, tagged, start, end,
                             push["total"])
        checks.expect(push["total"] > 0 and within(otlp["total"], push["total"]),
                      "%s endpoint=%s CPU: OTLP %d, Push %d" % (
                          service, endpoint, otlp["total"], push["total"]))
    cpu_windows = [w for w in readback.local_windows(out)
                   if w.name == "process_cpu"]
    spans = [s for s, _ in readback.Local(cpu_windows).spans.most_common(5)]
    want = readback.Local(cpu_windows, span_ids=set(spans)).total["cpu"]
    otlp = settled_total(client, CPU_OTLP, selector, start, end, want,
                         span_ids=spans)
    checks.expect(want > 0 and within(otlp["total"], want),
                  "%s CPU of the 5 busiest spans through OTLP: server %d, "
                  "local %d" % (service, otlp["total"], want))
    series = client.series([selector], start, end)
    otlp_series = [s for s in series if s.get("__otel__") == "true"]
    checks.expect(bool(otlp_series), "%s has OTLP series" % service)
    if expect_resource:
        checks.expect(all(s.get("host.name") and s.get("env") == "test" and
                          s.get("process.executable.name") == "tagged_server"
                          for s in otlp_series),
                      "%s OTLP series carry the resource (host.name, "
                      "process.executable.name, the env tag)" % service)


def case_direct(server, work, checks):
    out = profile_tagged(work, "direct", [
        "--server-address=" + server.url,
        "--otlp-endpoint=%s/v1development/profiles" % server.url])
    compare_with_push(server.query, checks, out, "direct", True)


def case_collector(server, work, checks):
    otelcol = subprocess.run([OTELCOL_BUILD, "--cached-only"],
                             capture_output=True, text=True)
    checks.expect(otelcol.returncode == 0,
                  "an OpenTelemetry Collector is built (%s)" %
                  otelcol.stderr.strip())
    if otelcol.returncode != 0:
        return
    port = free_port()
    config = os.path.join(work, "otelcol.yaml")
    with open(config, "w") as f:
        f.write("""receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  otlp_http:
    endpoint: %s
service:
  telemetry:
    metrics:
      level: none
  pipelines:
    profiles:
      receivers: [otlp]
      exporters: [otlp_http]
""" % (port, server.url))
    log = open(os.path.join(work, "otelcol.log"), "wb")
    collector = subprocess.Popen([otelcol.stdout.strip(), "--config=" + config,
                                  "--feature-gates=service.profilesSupport"],
                                 stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 1).close()
                break
            except OSError:
                if time.monotonic() > deadline or collector.poll() is not None:
                    raise AssertionError("the Collector did not start")
                time.sleep(0.2)
        env = dict(os.environ,
                   OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:%d" % port)
        out = profile_tagged(work, "viacol",
                             ["--server-address=" + server.url], env=env)
        compare_with_push(server.query, checks, out, "viacol", False)
    finally:
        collector.terminate()
        collector.wait(timeout=30)


def case_outage(server, work, checks):
    spool = os.path.join(work, "otlp-spool")
    closed = "http://127.0.0.1:%d/v1development/profiles" % free_port()
    out = profile_tagged(work, "outage", [
        "--otlp-endpoint=" + closed, "--otlp-spool-dir=" + spool])
    spooled = [f for f in os.listdir(spool) if f.endswith(".rpspool")]
    checks.expect(len(spooled) >= 2, "%d OTLP requests spooled while the "
                  "endpoint was unreachable" % len(spooled))
    rings = os.path.join(work, "rings")
    os.makedirs(rings)
    log = open(os.path.join(work, "collect.log"), "wb")
    collect = subprocess.Popen([
        RINGPROF, "collect", "--ring-dir=" + rings,
        "--otlp-endpoint=%s/v1development/profiles" % server.url,
        "--otlp-spool-dir=" + spool], stdout=log, stderr=subprocess.STDOUT)
    try:
        start, end = time_range(out)
        local = readback.Local([w for w in readback.local_windows(out)
                                if w.name == "process_cpu"])
        got = settled_total(server.query, CPU_OTLP, '{service_name="outage"}',
                            start, end, local.total["cpu"])
        checks.expect(within(got["total"], local.total["cpu"]),
                      "after the outage the server holds the run's CPU: %d, "
                      "local %d" % (got["total"], local.total["cpu"]))
        def spool_empty():
            return not [f for f in os.listdir(spool) if f.endswith(".rpspool")]
        try:
            server.query.wait_for(spool_empty, "the spool to empty", 30)
        except AssertionError:
            pass
        checks.expect(spool_empty(), "the spool is empty")
    finally:
        collect.send_signal(signal.SIGTERM)
        collect.wait(timeout=30)


def main():
    pyroscope_server.skip_unless_available()
    work = tempfile.mkdtemp(prefix="pyroscope-otlp-",
                            dir=os.environ.get("TEST_TMPDIR"))
    checks = Checks()
    with pyroscope_server.PyroscopeServer(
            workdir=os.path.join(work, "server")) as server:
        for case in (case_direct, case_collector, case_outage):
            print("== %s" % case.__name__[5:], flush=True)
            try:
                case(server, work, checks)
            except AssertionError as e:
                checks.expect(False, "%s: %s" % (case.__name__, e))
    if checks.failures:
        print("%d checks failed" % len(checks.failures))
        return 1
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
