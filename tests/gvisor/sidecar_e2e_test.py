#!/usr/bin/python3
"""ringprof's end-to-end test inside gVisor: the sidecar arrangement of a pod.

One `runsc --rootless --network=host do` sandbox (one gVisor kernel, like one
pod) runs a generated pod script (pod.sh, kept in the test's outputs) that
starts, as separate processes sharing nothing but the ring directory
/dev/shm/ringprof (the sandbox's own tmpfs, i.e. an emptyDir of medium
Memory):

  * perf_probe, which must find perf_event_open failing with ENODEV;
  * the collector sidecar, `ringprof collect --ring-dir=/dev/shm/ringprof`;
  * two workloads with LD_PRELOAD=libringprof.so: examples/server (frame
    pointers) and examples/pipeline_nofp (no frame pointers anywhere).

When the workloads end the script sends SIGTERM to the collector, which
drains the rings and ships (or writes) what it has, then exits.

--mode=push: the collector ships to the Pyroscope test receiver on the host's
  loopback (tests/pyroscope_receiver, wrapped to summarize each profile by
  function). Asserts: perf_event_open -> ENODEV inside; no upload rejected;
  for each workload both profile types (process_cpu, memory) arrived, with
  its known hot functions symbolized (each above a floor share) and stacks
  complete down to clone/_start; no record lost in the rings (as the
  collector reports it); everything within the time bound.
--mode=local: no server; the collector writes local profiles to a host
  directory (the sandbox runs with -force-overlay=false for that; the ring
  directory stays in the sandbox's tmpfs). Same assertions on the .pb.gz
  files, so the test still proves the gVisor path if shipping is broken.

If runsc cannot start a sandbox here, the test fails and says why.
"""

import argparse
import glob
import gzip
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, HERE)
import profile_summary  # noqa: E402

# gVisor 20240729 (systrap) from tools/setup; RUNSC=runsc: Debian 12's
# 20221219 (ptrace).
RUNSC = os.environ.get("RUNSC", "/opt/runsc-20240729/runsc")
RING_DIR = "/dev/shm/ringprof"  # inside the sandbox: its private tmpfs
TIME_BOUND_S = 60.0
# Samples whose stack reaches the thread's entry point. Not 100%: a CPU-timer
# sample can interrupt code whose unwind info does not describe every
# instruction (PLT stubs, hand-written assembly in libc).
MIN_ROOTED_FRACTION = 0.9


class Workload:
    def __init__(self, service, binary, args, hot_functions):
        self.service = service
        self.binary = binary
        self.args = args
        # {function: (min share of CPU time, min share of allocated bytes)}
        self.hot_functions = hot_functions


# The known hot paths (examples/README.md) and the least inclusive share each
# must have. The floors are about a third of what the examples show (natively
# and in gVisor): shares follow from how the work is divided, not from the
# machine's speed, so they hold on a loaded machine too.
def workloads(seconds):
    return [
        Workload("e2e-server", "examples/server/server",
                 ["--seconds=%d" % seconds, "--workers=2", "--clients=1"],
                 {"ParseJsonRequest": (0.10, 0.25), "RenderResponse": (0.03, 0.005)}),
        Workload("e2e-pipeline", "examples/pipeline/pipeline_nofp",
                 ["--seconds=%d" % seconds, "--workers=1"],
                 {"CompressBlock": (0.10, 0.25), "TokenizeBlock": (0.03, 0.002)}),
    ]


def path_of(relative):
    path = os.path.join(ROOT, relative)
    if not os.path.exists(path):
        fail("missing %s (a data dependency of this test)" % relative)
    return path


def fail(message):
    print("FAIL: " + message, flush=True)
    sys.exit(1)


def log(message):
    print(message, flush=True)


# --- runsc -----------------------------------------------------------------

def runsc_command(state_dir, do_flags, argv):
    return ([RUNSC, "--rootless", "--network=host", "--root=" + state_dir,
             "do"] + do_flags + argv)


def require_runsc(state_dir, scratch):
    """Fails the test, with runsc's own words, when no sandbox starts."""
    if shutil.which(RUNSC) is None:
        fail("%s not found (run tools/setup)" % RUNSC)
    debug_dir = os.path.join(scratch, "runsc-debug") + "/"
    cmd = ([RUNSC, "--rootless", "--network=host", "--root=" + state_dir,
            "--debug", "--debug-log=" + debug_dir, "do", "/bin/true"])
    try:
        result = subprocess.run(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=60)
    except subprocess.TimeoutExpired:
        fail("runsc did not start a sandbox within 60 s: " + " ".join(cmd))
    if result.returncode != 0:
        tail = ""
        for f in sorted(glob.glob(debug_dir + "*")):
            with open(f, errors="replace") as fh:
                tail += "".join(fh.readlines()[-15:])
        fail("runsc cannot start a sandbox on this machine (exit %d):\n%s\n"
             "--- runsc debug log tail ---\n%s"
             % (result.returncode, result.stdout.decode(errors="replace"), tail))
    shutil.rmtree(debug_dir, ignore_errors=True)
    version = subprocess.run([RUNSC, "--version"], stdout=subprocess.PIPE,
                             universal_newlines=True).stdout.splitlines()
    log("runsc: %s: sandbox starts" % (version[0] if version else "?"))


# --- the pod ---------------------------------------------------------------

def pod_script(out_dir, collector_argv, collector_env, loads, metrics_port=None):
    """The shell script run as the sandbox's init: one pod, three containers'
    worth of processes. Everything it prints starts with "pod: ".

    With metrics_port, once the collector has logged the end of every
    workload's process, the script saves the collector's /metrics (fetched
    with python3 from inside the sandbox) to $out/metrics.txt before the
    SIGTERM."""
    q = shlex.quote
    lines = [
        "#!/bin/bash",
        "# Generated by tests/gvisor/sidecar_e2e_test.py; runs inside runsc.",
        "set -u",
        "out=%s" % q(out_dir),
        "ring=%s" % q(RING_DIR),
        "mkdir -p \"$ring\"",
        "cd \"$out\"  # anything written relative lands with the test's outputs",
        "",
        "# Why ringprof exists.",
        "echo \"pod: $(%s)\"" % q(path_of("tests/gvisor/perf_probe")),
        "",
        "# The collector sidecar: sees only the ring directory.",
        "env %s %s >\"$out/collector.log\" 2>&1 &" % (
            " ".join(q("%s=%s" % kv) for kv in collector_env.items()),
            " ".join(q(a) for a in collector_argv)),
        "collector=$!",
        "",
        "# Start the workloads once the sidecar is up (as a readiness probe",
        "# would): a collector still starting on a loaded machine would let",
        "# the first seconds of a ring be overwritten (bounded wait).",
        "for _ in $(seq 300); do",
        "  grep -q 'collecting from' \"$out/collector.log\" 2>/dev/null && break",
        "  sleep 0.1",
        "done",
        "",
        "# The workloads: unmodified programs, the emitter preloaded.",
    ]
    emitter = path_of("emitter/libringprof.so")
    for i, w in enumerate(loads):
        lines += [
            "LD_PRELOAD=%s RINGPROF_DIR=\"$ring\" RINGPROF_SERVICE_NAME=%s \\"
            % (q(emitter), q(w.service)),
            "  %s >\"$out/%s.out\" 2>&1 &" % (
                " ".join(q(a) for a in [path_of(w.binary)] + w.args), w.service),
            "workload_%d=$!" % i,
        ]
    for i, w in enumerate(loads):
        lines += [
            "wait $workload_%d" % i,
            "echo \"pod: workload %s exit=$?\"" % w.service,
        ]
    if metrics_port:
        lines += [
            "",
            "# Let the collector notice the ends (bounded), then read its",
            "# counters as an operator would.",
            "for _ in $(seq 150); do",
            "  [[ $(grep -c ' done: ' \"$out/collector.log\") -ge %d ]] && break" % len(loads),
            "  sleep 0.1",
            "done",
            # Errors to their own file: inside the sandbox each fd writes at
            # its own offset, so a shared stdout/stderr file gets garbled.
            "python3 -c 'import sys, urllib.request; sys.stdout.write("
            "urllib.request.urlopen(sys.argv[1], timeout=10).read().decode())' "
            "http://127.0.0.1:%d/metrics >\"$out/metrics.txt\" "
            "2>\"$out/metrics.err\"" % metrics_port,
        ]
    lines += [
        "",
        "# Pod shutdown: the sidecar gets SIGTERM, drains and flushes.",
        "kill -TERM $collector",
        "wait $collector",
        "echo \"pod: collector exit=$?\"",
    ]
    return "\n".join(lines) + "\n"


def run_pod(state_dir, scratch, script, timeout_s):
    script_path = os.path.join(scratch, "pod.sh")
    with open(script_path, "w") as f:
        f.write(script)
    os.chmod(script_path, 0o755)
    output_path = os.path.join(scratch, "pod.out")
    # -force-overlay=false: the collector's log and local output reach the
    # host directory `scratch`. The ring directory is /dev/shm, which is the
    # sandbox's own tmpfs either way.
    cmd = runsc_command(state_dir, ["-force-overlay=false"],
                        ["/bin/bash", script_path])
    start = time.monotonic()
    # Output to a file of its own: the sandbox writes with its own offset.
    with open(output_path, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            status = None
    elapsed = time.monotonic() - start
    with open(output_path, errors="replace") as f:
        output = f.read()
    return status, elapsed, output


def free_port():
    """A port free on 127.0.0.1 right now (the collector binds it shortly
    after; nothing else in the test binds ports in between)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- receiver ----------------------------------------------------------------

class Receiver:
    def __init__(self, scratch):
        self.ready_file = os.path.join(scratch, "receiver.json")
        self.log_path = os.path.join(scratch, "receiver.log")
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(
            ["/usr/bin/python3", path_of("tests/gvisor/receiver_with_summary.py"),
             "--ready-file", self.ready_file],
            stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while not os.path.exists(self.ready_file):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.log.flush()
                with open(self.log_path) as f:
                    fail("the Pyroscope test receiver did not start:\n" + f.read())
            time.sleep(0.05)
        with open(self.ready_file) as f:
            info = json.load(f)
        self.url = info["url"]
        self.control = "http://127.0.0.1:%d" % info["control_port"]

    def get(self, what):
        with urllib.request.urlopen(self.control + "/" + what, timeout=10) as r:
            return json.load(r)

    def stop(self):
        self.proc.terminate()
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self.log.close()


# --- local output --------------------------------------------------------------

def load_profile_module(scratch):
    """profile_pb2 from proto/profile.proto, generated the receiver's way."""
    out = os.path.join(scratch, "pb2")
    os.makedirs(out, exist_ok=True)
    subprocess.run(["protoc", "--proto_path=" + ROOT, "--python_out=" + out,
                    os.path.join("proto", "profile.proto")], check=True)
    sys.path.insert(0, out)
    from proto import profile_pb2  # pylint: disable=import-outside-toplevel
    return profile_pb2


def local_profiles(output_dir, scratch):
    """{service: {kind: [summary]}} from the collector's per-window files,
    <out>/<service>/<kind>/<pid>.<from_ms>-<until_ms>.pb.gz
    (collector/sink/local_sink.h)."""
    profile_pb2 = load_profile_module(scratch)
    by_service = {}
    for path in sorted(glob.glob(os.path.join(output_dir, "*", "*", "*.pb.gz"))):
        service, kind = os.path.relpath(path, output_dir).split(os.sep)[:2]
        profile = profile_pb2.Profile()
        with gzip.open(path, "rb") as f:
            profile.ParseFromString(f.read())
        by_service.setdefault(service, {}).setdefault(kind, []).append(
            profile_summary.summarize(profile))
    return by_service


# --- checks --------------------------------------------------------------------

class Checks:
    def __init__(self):
        self.failures = 0

    def expect(self, ok, what, detail=""):
        log(("ok:   " if ok else "FAIL: ") + what +
            ("" if ok or not detail else "\n      " + detail.replace("\n", "\n      ")))
        if not ok:
            self.failures += 1
        return ok


def pod_line(output, pattern):
    m = re.search(r"^pod: " + pattern, output, re.M)
    return m


def metric_values(metrics_text, name):
    """Sum over label sets of one metric in Prometheus text, or None."""
    values = re.findall(r"^%s(?:\{[^}]*\})?\s+([0-9.e+]+)\s*$" % re.escape(name),
                        metrics_text, re.M)
    return sum(float(v) for v in values) if values else None


def lost_records(collector_log, metrics_text, expected_processes):
    """(records lost, how we know), as the collector reports them.

    The log warns "pid N: X records lost in the ring, Y dropped by the
    writer" when a process's ring ends with losses, so it is conclusive once
    it logged "pid N done" for every process. The /metrics counters, read
    before the SIGTERM, add what the rings lost. Samples the emitter itself
    reported lost are returned apart (see emitter_lost_share)."""
    lost = None
    how = []
    done = set(re.findall(r"\bpid (\d+) done\b", collector_log))
    if len(done) >= expected_processes:
        lost = 0
        for line in collector_log.splitlines():
            if "lost" not in line:
                continue
            m = re.search(r"\bpid \d+: (\d+) records lost in the ring.*?, "
                          r"(\d+) dropped by the writer", line)
            if not m:  # a loss report we cannot read counts as a failure
                return None, "unrecognised collector log line: " + line
            lost += int(m.group(1)) + int(m.group(2))
        how.append("log: %d processes ended" % len(done))
    if metrics_text:
        counters = {n: metric_values(metrics_text, n) for n in (
            "ringprof_ring_records_read_total",
            "ringprof_ring_records_lost_total",
            "ringprof_ring_records_dropped_total",
            "ringprof_emitter_lost_samples_total")}
        how.append("metrics: " + ", ".join(
            "%s=%s" % (n[len("ringprof_"):], "absent" if v is None else "%g" % v)
            for n, v in counters.items()))
        if counters["ringprof_ring_records_read_total"]:
            from_metrics = int(sum(v or 0 for n, v in counters.items()
                                   if n not in ("ringprof_ring_records_read_total",
                                                "ringprof_emitter_lost_samples_total")))
            lost = from_metrics if lost is None else max(lost, from_metrics)
    return lost, "; ".join(how) or "the collector reported neither"


def emitter_lost_share(metrics_text):
    """Samples the emitters reported lost, as a share of the records read.

    An emitter creates its ring file at its first sample; samples its other
    threads take while the file is being made are counted as lost, with
    their weight (emitter/README.md). In gVisor making the file
    takes long enough for a few of a busy process's first samples. Any other
    emitter loss (re-entrancy, failed unwinds) is counted here too."""
    read = metric_values(metrics_text, "ringprof_ring_records_read_total")
    lost = metric_values(metrics_text, "ringprof_emitter_lost_samples_total")
    if not read:
        return None
    return (lost or 0) / read


def check_profiles(checks, loads, by_service):
    """by_service: {service: {"process_cpu": [summary], "memory": [summary]}}"""
    for w in loads:
        kinds = by_service.get(w.service, {})
        for kind in ("process_cpu", "memory"):
            summaries = kinds.get(kind, [])
            if not checks.expect(summaries, "%s: %s profiles arrived (%d)"
                                 % (w.service, kind, len(summaries)),
                                 "got kinds: %s" % sorted(kinds)):
                continue
            frames = sum(s["frames"] for s in summaries)
            unsym = sum(s["unsymbolized_frames"] for s in summaries)
            samples = sum(s["samples"] for s in summaries)
            rooted = sum(s["rooted_samples"] for s in summaries)
            log("      %s %s: %d samples, %d frames, %.1f%% of frames unsymbolized"
                % (w.service, kind, samples, frames, 100.0 * unsym / max(frames, 1)))
            # Complete stacks: unwound through Debian's libstdc++ and libc
            # (no frame pointers there) down to the thread's or process's
            # entry point.
            checks.expect(rooted >= MIN_ROOTED_FRACTION * samples,
                          "%s: %s stacks complete down to clone/_start in %d of %d "
                          "samples (want >= %.0f%%)"
                          % (w.service, kind, rooted, samples,
                             100 * MIN_ROOTED_FRACTION))
            index = profile_summary.type_index(
                summaries, "cpu" if kind == "process_cpu" else "alloc_space")
            for fn, floors in sorted(w.hot_functions.items()):
                floor = floors[0] if kind == "process_cpu" else floors[1]
                share = profile_summary.share(summaries, fn, index)
                checks.expect(share >= floor,
                              "%s: %s symbolized in %s, inclusive %.1f%% of %s "
                              "(want >= %.1f%%)"
                              % (w.service, fn, kind, 100 * share,
                                 summaries[0]["sample_types"][index], 100 * floor),
                              top_functions(summaries, index))


def top_functions(summaries, index, n=12):
    merged = {}
    total = sum(s["totals"][index] for s in summaries) or 1
    for s in summaries:
        for name, values in s["functions"].items():
            merged[name] = merged.get(name, 0) + values[index]
    top = sorted(merged.items(), key=lambda kv: -kv[1])[:n]
    return "top functions (inclusive):\n" + "\n".join(
        "%5.1f%%  %s" % (100.0 * v / total, name) for name, v in top)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mode", choices=["push", "local"], default="push")
    ap.add_argument("--seconds", type=int, default=6,
                    help="how long each workload runs")
    args = ap.parse_args()

    started = time.monotonic()
    keep = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
    scratch = tempfile.mkdtemp(prefix="sidecar_e2e.", dir=os.environ.get("TEST_TMPDIR"))
    state_dir = tempfile.mkdtemp(prefix="ringprof-runsc.", dir="/tmp")
    receiver = None
    try:
        require_runsc(state_dir, scratch)
        loads = workloads(args.seconds)
        # --verbose: the collector logs each process it follows and ends,
        # which is how the test knows every ring was drained.
        collector_argv = [path_of("collector/ringprof"), "collect",
                          "--ring-dir=" + RING_DIR, "--verbose"]
        collector_env = {}
        output_dir = os.path.join(scratch, "profiles")
        metrics_port = None
        if args.mode == "push":
            receiver = Receiver(scratch)
            log("receiver: %s (control %s)" % (receiver.url, receiver.control))
            collector_env["PYROSCOPE_SERVER_ADDRESS"] = receiver.url
            # The collector's /metrics listens on the host's loopback too
            # (--network=host); the pod script reads it.
            metrics_port = free_port()
            collector_argv.append("--metrics-port=%d" % metrics_port)
        else:
            os.makedirs(output_dir)
            collector_argv += ["--output-dir=" + output_dir]

        script = pod_script(scratch, collector_argv, collector_env, loads,
                            metrics_port)
        status, elapsed, output = run_pod(state_dir, scratch, script,
                                          timeout_s=args.seconds + 90)
        collector_log = ""
        if os.path.exists(os.path.join(scratch, "collector.log")):
            with open(os.path.join(scratch, "collector.log"), errors="replace") as f:
                collector_log = f.read()
        log("--- sandbox output (runsc exit %s, %.1f s) ---\n%s--- collector log "
            "(last 30 lines) ---\n%s---" % (status, elapsed, output,
                                            "\n".join(collector_log.splitlines()[-30:]) + "\n"))

        checks = Checks()
        checks.expect(status == 0, "the sandbox ran to completion (runsc exit %s)" % status)
        checks.expect(pod_line(output, r"perf_event_open: unavailable errno=19 ENODEV"),
                      "perf_event_open fails with ENODEV inside the sandbox")
        for w in loads:
            checks.expect(pod_line(output, r"workload %s exit=0$" % re.escape(w.service)),
                          "workload %s ran with the emitter preloaded and exited 0"
                          % w.service)
        checks.expect(pod_line(output, r"collector exit=0$"),
                      "collector sidecar drained and exited 0 on SIGTERM")
        metrics_text = ""
        if os.path.exists(os.path.join(scratch, "metrics.txt")):
            with open(os.path.join(scratch, "metrics.txt"), errors="replace") as f:
                metrics_text = f.read()
        lost, how = lost_records(collector_log, metrics_text, len(loads))
        checks.expect(lost == 0, "nothing lost in the rings "
                      "(lost: %s; %s)" % (lost, how))
        share = emitter_lost_share(metrics_text)
        checks.expect((share is None and not metrics_text) or
                      (share is not None and share <= 0.01),
                      "the emitters lost at most 1%% of their samples "
                      "(while their ring files were made): %s" % share)

        by_service = {}
        if args.mode == "push":
            accepted = receiver.get("accepted")
            rejected = receiver.get("rejected")
            checks.expect(not rejected, "receiver rejected no upload (%d rejected, "
                          "%d accepted)" % (len(rejected), len(accepted)),
                          json.dumps(rejected[:5], indent=1))
            for entry in accepted:
                labels = entry.get("labels", {})
                by_service.setdefault(labels.get("service_name"), {}).setdefault(
                    labels.get("__name__"), []).append(entry["summary"])
            log("receiver accepted: " + ", ".join(
                "%s/%s x%d" % (svc, kind, len(v))
                for svc, kinds in sorted(by_service.items(), key=str)
                for kind, v in sorted(kinds.items())))
        else:
            by_service = local_profiles(output_dir, scratch)
            log("local profiles: " + ", ".join(
                "%s/%s x%d" % (svc, kind, len(v))
                for svc, kinds in sorted(by_service.items(), key=str)
                for kind, v in sorted(kinds.items())))
        check_profiles(checks, loads, by_service)

        total = time.monotonic() - started
        checks.expect(total < TIME_BOUND_S, "finished within %.0f s (%.1f s total, "
                      "%.1f s in the sandbox)" % (TIME_BOUND_S, total, elapsed))
        if checks.failures:
            log("%d check(s) failed; outputs in %s" % (checks.failures, keep or scratch))
            return 1
        log("PASS: gVisor sidecar end-to-end (%s mode)" % args.mode)
        return 0
    finally:
        if receiver:
            receiver.stop()
        if keep:
            for name in ("pod.sh", "pod.out", "collector.log", "receiver.log",
                         "metrics.txt") + tuple(
                    "%s.out" % w.service for w in workloads(0)):
                src = os.path.join(scratch, name)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(keep, name))
        shutil.rmtree(state_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
