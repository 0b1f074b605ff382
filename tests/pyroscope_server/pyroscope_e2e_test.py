#!/usr/bin/python3
"""`ringprof run` and `ringprof collect` shipping to a real Grafana
Pyroscope v2.2.1 (one server for every case), read back through its query
API and compared with the local profiles of the same run (readback.py):

  run:      examples/tagged (endpoint tags, a trace span per request) with
            --tags=k8s.cluster=prod: CPU, memory and wall totals and hot
            functions within 1%, service_name and the dotted tag as stored
            by v2, endpoint values as series, span_id on samples, in-use per
            window as a snapshot;
  collect:  examples/hotloop preloaded, `ringprof collect` as a sidecar;
  inuse:    keep_churn (64 MiB kept): in-use snapshots per window, KeepBlocks
            in the last one;
  faults:   `ringprof collect` through a fault-injecting proxy: an outage,
            then a storm of 10 429s: every window arrives once (totals equal
            the local ones: nothing lost, nothing stored twice);
  trimmed:  a tagged profile over --max-request-bytes arrives trimmed with
            its endpoint tags and span ids.

Every wait polls with a deadline. Runs the server from tools/pyroscope/build.
"""

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import fault_proxy  # noqa: E402
import pyroscope_server  # noqa: E402
from pyroscope_server import run  # noqa: E402
import query  # noqa: E402
import readback  # noqa: E402

RINGPROF = os.path.join(ROOT, "collector", "ringprof")
EMITTER = os.path.join(ROOT, "emitter", "libringprof.so")
TAGGED = os.path.join(ROOT, "examples", "tagged", "tagged_server")
HOTLOOP = os.path.join(ROOT, "examples", "hotloop", "hotloop")
KEEP_CHURN = os.path.join(ROOT, "tests", "inuse", "keep_churn")
# Pushes the fault proxy refuses with 429 in a row. Each refusal pauses
# uploads for that profile's own backoff (1 s doubling with its attempts).
STORM = 10


def read(path):
    with open(path, errors="replace") as f:
        return f.read()


def now_ms():
    return int(time.time() * 1000)


class Case:
    def __init__(self, server, work):
        self.server = server
        self.client = server.query
        self.work = work
        self.failures = []

    def expect(self, ok, message):
        print("%s: %s" % ("ok" if ok else "FAIL", message))
        if not ok:
            self.failures.append(message)

    def readback(self, out, service, **kwargs):
        self.failures += readback.compare_run(self.client, out, service,
                                              **kwargs)


def case_run(case):
    """ringprof run of the tagged server, tags and spans."""
    out = os.path.join(case.work, "run")
    log = os.path.join(case.work, "run.log")
    start = now_ms()
    run([RINGPROF, "run", "--server-address=" + case.server.url,
         "--output-dir=" + out, "--emitter=" + EMITTER, "--service=e2e-run",
         "--tags=k8s.cluster=prod", "--window=2s", "--",
         TAGGED, "--seconds=6", "--threads=2", "--spans=1"], log,
        env=dict(os.environ, RINGPROF_CPU_HZ="250"))
    case.expect("invalid" not in read(log), "no profile invalid")
    case.readback(out, "e2e-run", tags=("endpoint",), spans=True)
    end = now_ms() + 60000
    names = case.client.label_names(['{service_name="e2e-run"}'], start, end)
    case.expect("k8s.cluster" in names,
                "the tag's name is stored as sent (k8s.cluster): %s" % names)
    case.expect("endpoint" in names, "endpoint is a series label")
    case.expect("span_id" not in names, "span_id stays on samples")
    series = case.client.series(['{service_name="e2e-run"}'], start, end)
    case.expect(series and all(s.get("k8s.cluster") == "prod" and
                               "__session_id__" not in s for s in series),
                "%d series with k8s.cluster=prod" % len(series))
    # (The off-CPU profiles, on by default, may add mutex and block series.)
    names_stored = {s.get("__name__") for s in series}
    case.expect({"process_cpu", "memory", "wall"} <= names_stored,
                "CPU, memory and wall are series: %s" % sorted(names_stored))


def case_collect(case):
    """ringprof collect as a sidecar of a preloaded hotloop."""
    rings = os.path.join(case.work, "rings")
    out = os.path.join(case.work, "collect")
    os.makedirs(rings)
    log = open(os.path.join(case.work, "collect.log"), "wb")
    collector = subprocess.Popen(
        [RINGPROF, "collect", "--ring-dir=" + rings, "--output-dir=" + out,
         "--server-address=" + case.server.url, "--window=2s"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        run([HOTLOOP, "30"], os.path.join(case.work, "hotloop.log"),
            env=dict(os.environ, LD_PRELOAD=EMITTER, RINGPROF_DIR=rings,
                     RINGPROF_SERVICE_NAME="e2e-collect"))
    finally:
        collector.send_signal(signal.SIGTERM)
        status = collector.wait(timeout=60)
    case.expect(status == 0, "ringprof collect exited %d on SIGTERM" % status)
    case.readback(out, "e2e-collect")


def case_inuse(case):
    """In-use as snapshots, per window, of a workload keeping 64 MiB."""
    out = os.path.join(case.work, "inuse")
    run([RINGPROF, "run", "--server-address=" + case.server.url,
         "--output-dir=" + out, "--emitter=" + EMITTER, "--service=e2e-inuse",
         # A real server on a loaded machine can take longer than the
         # default 10 s to take the last windows of every forked child.
         "--window=2s", "--shutdown-deadline=60s", "--", KEEP_CHURN, "exit",
         "64", "256", "1"],
        os.path.join(case.work, "inuse.log"),
        env=dict(os.environ, RINGPROF_SAMPLE_BYTES="32768"))
    case.readback(out, "e2e-inuse")
    windows = [w for w in readback.local_windows(out) if w.name == "memory"]
    last = max(windows, key=lambda w: w.from_ms)
    graph = case.client.select_merge_stacktraces(
        query.INUSE_SPACE, '{service_name="e2e-inuse"}', last.from_ms,
        last.until_ms - 1)
    keep = sum(v for k, v in query.total_by_function(graph).items()
               if "KeepBlocks" in k)
    case.expect(0.9 * (64 << 20) <= keep <= 1.1 * (64 << 20),
                "KeepBlocks in use in the last window: %.1f MiB" % (keep / 2**20))


def case_faults(case):
    """An outage, then a 429 storm, through the fault proxy."""
    proxy = fault_proxy.FaultProxy(case.server.url).start()
    rings = os.path.join(case.work, "fault-rings")
    out = os.path.join(case.work, "faults")
    os.makedirs(rings)
    proxy.down()
    log_path = os.path.join(case.work, "faults.log")
    log = open(log_path, "wb")
    collector = subprocess.Popen(
        [RINGPROF, "collect", "--ring-dir=" + rings, "--output-dir=" + out,
         "--server-address=" + proxy.url, "--window=1s",
         # The backlog in memory: the flush at SIGTERM must deliver it all
         # (a disk spool would be left for the next collector).
         "--upload-attempts=100", "--shutdown-deadline=120s"],
        stdout=log, stderr=subprocess.STDOUT)
    workload = subprocess.Popen(
        [HOTLOOP, "60"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
        env=dict(os.environ, LD_PRELOAD=EMITTER, RINGPROF_DIR=rings,
                 RINGPROF_SERVICE_NAME="e2e-faults"))
    try:
        readback_deadline = time.monotonic() + 60
        while "upload of a" not in read(log_path):
            assert time.monotonic() < readback_deadline, "outage not logged"
            time.sleep(0.2)
        time.sleep(2)  # a few windows spooled during the outage
        proxy.fault(429, count=STORM)
        proxy.up()
        deadline = time.monotonic() + 120
        while proxy.pending_faults() > 0:
            assert time.monotonic() < deadline, "the 429 storm never ended"
            time.sleep(0.2)
        workload.wait(timeout=120)
    finally:
        collector.send_signal(signal.SIGTERM)
        status = collector.wait(timeout=150)
        proxy.stop()
    stats = proxy.stats()
    case.expect(status == 0, "ringprof collect exited %d" % status)
    case.expect(stats["pushes_faulted"] == STORM and stats["pushes_forwarded"] > 0,
                "429 answered %d times, then forwarded: %s" % (STORM, stats))
    case.readback(out, "e2e-faults")


def case_trimmed(case):
    """A tagged profile over --max-request-bytes keeps tags and spans."""
    out = os.path.join(case.work, "trimmed")
    log = os.path.join(case.work, "trimmed.log")
    run([RINGPROF, "run", "--server-address=" + case.server.url,
         "--output-dir=" + out, "--emitter=" + EMITTER,
         "--service=e2e-trimmed", "--max-request-bytes=4K", "--", TAGGED,
         "--seconds=6", "--threads=2", "--spans=1"], log,
        # 1000 Hz for 6 s: enough stacks and spans for profiles over 4K.
        env=dict(os.environ, RINGPROF_CPU_HZ="1000"))
    case.expect("to stay under the request budget" in read(log),
                "a profile was trimmed")
    start, end = now_ms() - 600000, now_ms() + 60000
    selector = '{service_name="e2e-trimmed"}'
    values = case.client.wait_for(
        lambda: case.client.label_values("endpoint", [selector], start, end),
        "endpoint values of the trimmed profiles")
    case.expect({"/light", "/heavy"} <= set(values),
                "trimmed profiles keep endpoint tags: %s" % values)
    windows = [w for w in readback.local_windows(out) if w.name == "process_cpu"]
    spans = readback.Local(windows).spans
    chosen = [s for s, _ in spans.most_common(20)]
    graph = case.client.wait_for(
        lambda: (lambda g: g if g["total"] > 0 else None)(
            case.client.select_merge_stacktraces(query.CPU, selector, start,
                                                 end, span_ids=chosen)),
        "samples of the trimmed profiles' spans")
    case.expect(graph["total"] > 0, "span ids survive trimming")


CASES = [case_run, case_collect, case_inuse, case_faults, case_trimmed]


def main():
    pyroscope_server.skip_unless_available()
    work = tempfile.mkdtemp(prefix="pyroscope-e2e-",
                            dir=os.environ.get("TEST_TMPDIR"))
    failed = []
    server = pyroscope_server.PyroscopeServer(
        log_path=os.path.join(work, "pyroscope.log"))
    try:
        server.start()
        print("Pyroscope %s at %s" % (pyroscope_server.VERSION, server.url))
        for function in CASES:
            print("--- %s: %s" % (function.__name__, function.__doc__))
            case = Case(server, os.path.join(work, function.__name__))
            os.makedirs(case.work)
            try:
                function(case)
            except Exception:  # pylint: disable=broad-except
                case.failures.append(traceback.format_exc())
                print(case.failures[-1])
            if case.failures:
                failed.append(function.__name__)
    except pyroscope_server.ServerError as e:
        print("FAIL: %s" % e)
        return 1
    finally:
        server.stop()
        if failed:
            outputs = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
            if outputs:
                shutil.copytree(work, os.path.join(outputs, "work"),
                                ignore=shutil.ignore_patterns("*.pb.gz", "data*"),
                                dirs_exist_ok=True)
        shutil.rmtree(work, ignore_errors=True)
    print("FAILED: %s" % ", ".join(failed) if failed else "PASS")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
