#!/usr/bin/python3
"""The real `ringprof collect` against broken and hostile workloads.

One collector serves every workload of a pod, so each case runs a
well-behaved workload (`hostile_writer steady`, which prints exactly what it
committed) next to the attack and asserts that the collector stays up, exits
within --shutdown-deadline after SIGTERM, delivers the good workload's
profile complete (every allocated byte), and counts what it refused. Every
process is on this machine and the network is loopback only. README.md maps
each case to the threat it covers.
"""

import glob
import gzip
import json
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

RINGPROF = os.path.abspath("collector/ringprof")
WRITER = os.path.abspath("tests/adversarial/hostile_writer")
HOTLOOP = os.path.abspath("examples/hotloop/hotloop")
EMITTER = os.path.abspath("emitter/libringprof.so")
RECEIVER = os.path.abspath("tests/pyroscope_receiver/receiver.py")
DEADLINE_S = 5  # --shutdown-deadline of every collector here

_pb2 = None
LIVE_COLLECTORS = []  # killed after each case, whatever it asserted


def profile_pb2():
    """perftools.profiles, generated from proto/profile.proto once."""
    global _pb2
    if _pb2 is None:
        out = tempfile.mkdtemp(prefix="pb2-")
        subprocess.run(["protoc", "--proto_path=.", "--python_out=" + out,
                        "proto/profile.proto"], check=True)
        sys.path.insert(0, out)
        from proto import profile_pb2 as module  # pylint: disable=import-outside-toplevel
        _pb2 = module
    return _pb2


def read_profile(path):
    profile = profile_pb2().Profile()
    with open(path, "rb") as f:
        profile.ParseFromString(gzip.decompress(f.read()))
    return profile


def functions_of(profile):
    names = set()
    for fn in profile.function:
        names.add(profile.string_table[fn.name])
    return names


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(predicate, timeout, step=0.05):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return True
        time.sleep(step)
    return predicate()


def clean_env():
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYROSCOPE_", "RINGPROF_", "LD_PRELOAD"))}
    return env


class Collector:
    """`ringprof collect` on a ring directory, local output, /metrics."""

    def __init__(self, work, ring_dir, out_dir, extra=(), preexec=None,
                 prefix=()):
        self.metrics_port = free_port()
        self.stderr_path = os.path.join(work, "collector-%d.log" %
                                        time.monotonic_ns())
        self.stderr = open(self.stderr_path, "wb")
        args = list(prefix) + [
            RINGPROF, "collect", "--ring-dir=" + ring_dir,
            "--output-dir=" + out_dir, "--window=1s",
            "--shutdown-deadline=%ds" % DEADLINE_S,
            "--metrics-port=%d" % self.metrics_port, "--log-level=info",
        ] + list(extra)
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr, env=clean_env(),
                                     preexec_fn=preexec)
        LIVE_COLLECTORS.append(self.proc)
        # /metrics answers once the collector is up.
        wait_for(lambda: self.metrics() is not None or
                 self.proc.poll() is not None, 10)

    def metrics(self):
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" %
                                        self.metrics_port, timeout=2) as r:
                text = r.read().decode()
        except OSError:
            return None
        values = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                try:
                    values[name] = float(value)
                except ValueError:
                    pass
        return values

    def metric(self, name):
        values = self.metrics() or {}
        return values.get(name, 0.0)

    def alive(self):
        return self.proc.poll() is None

    def rss_kib(self):
        with open("/proc/%d/status" % self.proc.pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        return 0

    def cpu_seconds(self):
        with open("/proc/%d/stat" % self.proc.pid) as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        """SIGTERM; returns (exit status, seconds it took)."""
        start = time.monotonic()
        self.proc.send_signal(signal.SIGTERM)
        try:
            status = self.proc.wait(timeout=DEADLINE_S + 20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            status = self.proc.wait()
        self.stderr.close()
        return status, time.monotonic() - start

    def kill(self):
        self.proc.kill()
        self.proc.wait()
        self.stderr.close()

    def log(self):
        with open(self.stderr_path, errors="replace") as f:
            return f.read()


def memory_totals(out_dir, service):
    """alloc_space summed over every window of `service`."""
    total = 0
    for path in glob.glob(os.path.join(out_dir, service, "*", "memory",
                                       "*.pb.gz")):
        profile = read_profile(path)
        for sample in profile.sample:
            total += sample.value[1]
    return total


def memory_functions(out_dir, service):
    names = set()
    for path in glob.glob(os.path.join(out_dir, service, "*", "memory",
                                       "*.pb.gz")):
        names |= functions_of(read_profile(path))
    return names


class AdversarialTest(unittest.TestCase):

    def setUp(self):
        self.work = tempfile.mkdtemp(prefix="adv-",
                                     dir=os.environ.get("TEST_TMPDIR"))
        self.ring_dir = os.path.join(self.work, "rings")
        self.out_dir = os.path.join(self.work, "out")
        os.makedirs(self.ring_dir)
        self.processes = []

    def tearDown(self):
        for p in self.processes + LIVE_COLLECTORS:
            if p.poll() is None:
                p.kill()
                p.wait()
        del LIVE_COLLECTORS[:]
        shutil.rmtree(self.work, ignore_errors=True)

    def writer(self, *args, **kwargs):
        p = subprocess.Popen([WRITER] + [str(a) for a in args],
                             stdout=subprocess.PIPE, text=True,
                             env=clean_env(), **kwargs)
        self.processes.append(p)
        return p

    def good_workload(self, seconds=3, rate=500, service="good", extra=()):
        return self.writer("steady", self.ring_dir, service, seconds, rate,
                           *extra)

    def committed(self, good):
        out, _ = good.communicate(timeout=120)
        self.assertEqual(good.returncode, 0)
        match = re.search(r"committed (\d+) weight (\d+)", out)
        self.assertIsNotNone(match, out)
        return int(match.group(2))

    def assert_good_profile_complete(self, collector, good, service="good",
                                     out_dir=None):
        """The good workload's ring is ended and every byte is delivered."""
        weight = self.committed(good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir,
                                               service + ".*.ring")), 30),
            "the good workload's ring was never ended: " + collector.log())
        # Its last window is written when the ring ends.
        out = out_dir or self.out_dir
        self.assertTrue(wait_for(
            lambda: memory_totals(out, service) == weight, 10),
            "delivered %d of %d bytes" % (memory_totals(out, service), weight))

    def assert_stops_in_time(self, collector, want_status=0):
        status, took = collector.stop()
        self.assertLess(took, DEADLINE_S + 1.5, collector.log())
        self.assertEqual(status, want_status, collector.log())

    # -- ring files -------------------------------------------------------

    def test_ring_truncated_and_rewritten_in_a_loop(self):
        collector = Collector(self.work, self.ring_dir, self.out_dir)
        hostile = self.writer("truncate", self.ring_dir, 4)
        good = self.good_workload()
        hostile.wait(timeout=30)
        self.assertTrue(collector.alive(), collector.log())
        self.assert_good_profile_complete(collector, good)
        # Reported once, then quarantined (never reopened).
        self.assertTrue(wait_for(
            lambda: collector.metric("ringprof_ring_files_corrupt_total") >= 1,
            10), collector.log())
        mentions = [l for l in collector.log().splitlines()
                    if "truncating." in l and ("error" in l or "warn" in l)]
        self.assertEqual(len(mentions), 1, collector.log())
        self.assert_stops_in_time(collector)

    def test_timestamps_far_in_the_future(self):
        # Samples 10 s apart from 10 s ahead: all beyond --max-future=5s.
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              ["--max-future=5s"])
        hostile = self.writer("future", self.ring_dir)
        good = self.good_workload()
        hostile.wait(timeout=30)
        self.assert_good_profile_complete(collector, good)
        self.assertTrue(wait_for(
            lambda: collector.metric("ringprof_records_out_of_range_total")
            >= 60000, 10), collector.log())
        status, _ = collector.stop()
        self.assertEqual(status, 0, collector.log())
        files = glob.glob(os.path.join(self.out_dir, "future", "*", "*",
                                       "*.pb.gz"))
        # The present sample's window: CPU and memory.
        self.assertLessEqual(len(files), 2, files[:10])
        self.assertGreaterEqual(len(files), 1)

    def test_random_deep_stacks_stay_within_the_memory_budget(self):
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              ["--max-memory-mib=64",
                               "--max-memory-per-process-mib=16"])
        deep = [self.writer("deep", self.ring_dir, 8, 1000) for _ in range(4)]
        good = self.good_workload(seconds=8)
        for p in deep:
            p.wait(timeout=60)
        self.assert_good_profile_complete(collector, good)
        self.assertGreater(collector.metric("ringprof_budget_folded_total"), 0)
        self.assertLessEqual(
            collector.metric("ringprof_profiler_memory_bytes"), 64 << 20)
        rss_mib = collector.rss_kib() / 1024
        self.assertLess(rss_mib, 400, "peak RSS %.0f MiB" % rss_mib)
        self.assert_stops_in_time(collector)

    def test_ten_thousand_rings_of_pids_that_never_existed(self):
        hostile = self.writer("junk", self.ring_dir, 10000)
        self.assertEqual(hostile.wait(timeout=300), 0)
        # A tight descriptor limit: the rings must not starve the good one.
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              prefix=["prlimit", "--nofile=1024"])
        good = self.good_workload(seconds=3)
        self.assert_good_profile_complete(collector, good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir, "junk.*")), 60),
            "%d junk rings left" %
            len(glob.glob(os.path.join(self.ring_dir, "junk.*"))))
        self.assertGreaterEqual(
            collector.metric("ringprof_ring_files_ended_unseen_total"), 10000)
        # Not a core busy forever: idle now.
        before = collector.cpu_seconds()
        time.sleep(3)
        self.assertLess(collector.cpu_seconds() - before, 1.0)
        self.assert_stops_in_time(collector)

    def test_dot_names_are_collected(self):
        dotted = os.path.join(self.work, ".dotted")
        shutil.copy(HOTLOOP, dotted)
        cases = [["--", dotted, "8"], ["--service=.svc", "--", HOTLOOP, "8"]]
        for i, args in enumerate(cases):
            run = subprocess.run(
                [RINGPROF, "run", "--emitter=" + EMITTER,
                 "--output-dir=" + os.path.join(self.work, "run-%d" % i)] +
                args, stderr=subprocess.PIPE, text=True, env=clean_env(),
                timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertNotIn("no samples were recorded", run.stderr)
            # The top table of a non-empty profile.
            self.assertIn("Allocated bytes (memory: alloc_space)", run.stderr)
            self.assertRegex(run.stderr, r"Showing nodes accounting for [1-9]")

    # -- restarts ---------------------------------------------------------

    def test_sigkill_and_restart_count_everything_exactly_once(self):
        state = os.path.join(self.work, "state")
        out_a = os.path.join(self.work, "out-a")
        out_b = os.path.join(self.work, "out-b")
        first = Collector(self.work, self.ring_dir, out_a,
                          ["--state-dir=" + state])
        # 512 slots per ring at 250 records/s per ring: each ring wraps about
        # four times during the run, never during the restart.
        good = self.good_workload(seconds=8, rate=1000, extra=["512"])
        time.sleep(4)
        first.kill()
        second = Collector(self.work, self.ring_dir, out_b,
                           ["--state-dir=" + state])
        weight = self.committed(good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir, "good.*")), 30),
            second.log())
        status, _ = second.stop()
        self.assertEqual(status, 0, second.log())
        a, b = memory_totals(out_a, "good"), memory_totals(out_b, "good")
        self.assertGreater(a, 0)
        self.assertGreater(b, 0)
        self.assertEqual(a + b, weight, "before kill %d + after %d" % (a, b))
        self.assertNotIn("records lost", second.log())
        self.assertEqual(second.metric("ringprof_ring_records_lost_total"), 0)
        self.assertEqual(os.listdir(state), [])  # ended: state removed

        # The same run without the kill delivers the same total.
        shutil.rmtree(self.ring_dir)
        os.makedirs(self.ring_dir)
        out_c = os.path.join(self.work, "out-c")
        third = Collector(self.work, self.ring_dir, out_c)
        good = self.good_workload(seconds=8, rate=1000, extra=["512"])
        self.assert_good_profile_complete(third, good, out_dir=out_c)
        third.stop()


if __name__ == "__main__":
    unittest.main(verbosity=2)
