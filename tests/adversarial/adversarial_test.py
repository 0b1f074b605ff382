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


def report(what, value):
    """A measurement, in the test log (README.md quotes them)."""
    print("measured: %s: %s" % (what, value), file=sys.stderr)


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
                 prefix=(), extra_env=None):
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
        env = clean_env()
        env.update(extra_env or {})
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL,
                                     stderr=self.stderr, env=env,
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
    for path in glob.glob(os.path.join(out_dir, service, "memory",
                                       "*.pb.gz")):
        profile = read_profile(path)
        for sample in profile.sample:
            total += sample.value[1]
    return total


def memory_functions(out_dir, service):
    names = set()
    for path in glob.glob(os.path.join(out_dir, service, "memory",
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
            if p.stdout is not None:
                p.stdout.close()
        del LIVE_COLLECTORS[:]
        shutil.rmtree(self.work, ignore_errors=True)

    def writer(self, *args, prefix=False, **kwargs):
        """hostile_writer ARGS (or, with prefix, ARGS as a command line)."""
        command = [str(a) for a in args]
        p = subprocess.Popen(command if prefix else [WRITER] + command,
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
                                     out_dir=None, timeout=60):
        """The good workload's ring is ended and every byte is delivered
        (within `timeout`: processing is shared with the attack, and the
        machine running the tests may be loaded)."""
        weight = self.committed(good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir,
                                               service + ".*.ring")), 30),
            "the good workload's ring was never ended: " + collector.log())
        # Its last window is written when the ring ends.
        out = out_dir or self.out_dir
        self.assertTrue(wait_for(
            lambda: memory_totals(out, service) == weight, timeout, step=0.5),
            "delivered %d of %d bytes" % (memory_totals(out, service), weight))

    def assert_stops_in_time(self, collector, want_status=0):
        status, took = collector.stop()
        report(self.id().rpartition(".")[2] + " SIGTERM to exit",
               "%.2f s" % took)
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
        files = glob.glob(os.path.join(self.out_dir, "future", "*",
                                       "*.pb.gz"))
        # The present sample's window, CPU and memory; its CPU tick may
        # fall into the next window.
        self.assertLessEqual(len(files), 4, files[:10])
        self.assertGreaterEqual(len(files), 1)

    def test_random_deep_stacks_stay_within_the_memory_budget(self):
        # 10 s windows, as in production: every window re-emits the in-use
        # stacks of the live (never freed) allocations, and the local
        # summary merges each window.
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              ["--max-memory-mib=64",
                               "--max-memory-per-process-mib=16",
                               "--window=10s"])
        deep = [self.writer("deep", self.ring_dir, 8, 1000) for _ in range(4)]
        good = self.good_workload(seconds=8)
        for p in deep:
            p.wait(timeout=60)
        self.assert_good_profile_complete(collector, good)
        self.assertGreater(collector.metric("ringprof_budget_folded_total"), 0)
        self.assertLessEqual(
            collector.metric("ringprof_profiler_memory_bytes"), 64 << 20)
        # Budgets bound the profiler's structures (64 MiB); the rest is the
        # batch queue (at most 64 MiB), window builders, the in-use live set
        # and the local summary (merged profiles, not budgeted: 365-455 MiB
        # measured in all). Unbounded, this grew by ~70 MB/s to 4.3 GB.
        rss_mib = collector.rss_kib() / 1024
        report("deep stacks: peak RSS", "%.0f MiB" % rss_mib)
        report("deep stacks: folded samples",
               collector.metric("ringprof_budget_folded_total"))
        self.assertLess(rss_mib, 640, "peak RSS %.0f MiB" % rss_mib)
        # In time whatever the backlog: finished (0), or cut short by the
        # deadline (1, say so; the local summary of 3,400 distinct deep
        # stacks may not be written on a loaded machine).
        status, took = collector.stop()
        report("deep stacks: SIGTERM to exit", "%.2f s, status %d" %
               (took, status))
        self.assertLess(took, DEADLINE_S + 1.5, collector.log())
        self.assertIn(status, (0, 1), collector.log())
        if status == 1:
            self.assertIn("shutdown deadline", collector.log())

    def test_ten_thousand_rings_of_pids_that_never_existed(self):
        hostile = self.writer("junk", self.ring_dir, 10000)
        self.assertEqual(hostile.wait(timeout=300), 0)
        # A tight descriptor limit: the rings must not starve the good one.
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              prefix=["prlimit", "--nofile=1024"])
        good = self.good_workload(seconds=3)
        self.assert_good_profile_complete(collector, good)
        start = time.monotonic()
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir, "junk.*")), 60),
            "%d junk rings left" %
            len(glob.glob(os.path.join(self.ring_dir, "junk.*"))))
        report("junk rings: left after the good one ended", "%.1f s" %
               (time.monotonic() - start))
        self.assertGreaterEqual(
            collector.metric("ringprof_ring_files_ended_unseen_total"), 10000)
        # Not a core busy forever: idle now.
        before = collector.cpu_seconds()
        time.sleep(3)
        report("junk rings: CPU in the 3 s after", "%.2f s" %
               (collector.cpu_seconds() - before))
        self.assertLess(collector.cpu_seconds() - before, 1.0)
        self.assert_stops_in_time(collector)

    def test_dot_names_are_collected(self):
        dotted = os.path.join(self.work, ".dotted")
        shutil.copy(HOTLOOP, dotted)
        cases = [["--", dotted, "8"], ["--service=.svc", "--", HOTLOOP, "8"]]
        for i, args in enumerate(cases):
            out = os.path.join(self.work, "run-%d" % i)
            run = subprocess.run(
                [RINGPROF, "run", "--emitter=" + EMITTER,
                 "--output-dir=" + out] +
                args, stderr=subprocess.PIPE, text=True, env=clean_env(),
                timeout=120)
            self.assertEqual(run.returncode, 0, run.stderr)
            self.assertNotIn("no samples were recorded", run.stderr)
            # A non-empty memory profile: its hottest entries in the
            # summary, its top table in top.txt.
            self.assertRegex(run.stderr,
                             r"memory flame graph: .*\n +[0-9.]+%  \S")
            with open(os.path.join(out, "top.txt")) as f:
                top = f.read()
            self.assertIn("Allocated bytes (memory: alloc_space)", top)
            self.assertRegex(top, r"Showing nodes accounting for [1-9]")

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
        report("restart: bytes before kill + after = committed",
               "%d + %d = %d" % (a, b, weight))
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

    # -- files a workload names ------------------------------------------

    def elf_text_address(self, path):
        """(vaddr of `main`, file offset of its page) in an ELF file."""
        nm = subprocess.run(["nm", path], stdout=subprocess.PIPE, text=True,
                            check=True).stdout
        vaddr = int(re.search(r"^([0-9a-f]+) T main$", nm, re.M).group(1), 16)
        with open(path, "rb") as f:
            elf = f.read(1 << 16)
        import struct  # pylint: disable=import-outside-toplevel
        phoff, = struct.unpack_from("<Q", elf, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
        for i in range(phnum):
            p_type, p_flags, p_offset, p_vaddr, _, _, p_memsz, _ = \
                struct.unpack_from("<IIQQQQQQ", elf, phoff + i * phentsize)
            if p_type == 1 and p_vaddr <= vaddr < p_vaddr + p_memsz:
                page = vaddr & ~0xfff
                return vaddr, p_offset + (page - p_vaddr)
        self.fail("main not in a loadable segment of " + path)

    def test_module_paths_that_are_not_the_workloads_regular_files(self):
        fifo = os.path.join(self.work, "fifo")
        os.mkfifo(fifo)
        sparse = os.path.join(self.work, "sparse")
        with open(sparse, "wb") as f:
            f.truncate(64 << 30)
        # An ELF file with symbols that only the collector can see: the
        # workload runs in a mount namespace where an empty tmpfs hides it.
        hidden = os.path.join(self.work, "hidden")
        os.makedirs(hidden)
        elf = os.path.join(hidden, "only_collector.elf")
        shutil.copy(RINGPROF, elf)
        vaddr, offset = self.elf_text_address(elf)
        specs = [fifo, "/etc/shadow", "/dev/zero", sparse,
                 "../../../../../../../../etc/passwd",
                 "%s@%x@%x" % (elf, vaddr, offset)]
        probe = subprocess.run(["unshare", "--mount", "true"])
        self.assertEqual(probe.returncode, 0,
                         "needs unshare --mount (root) for the hidden file")
        collector = Collector(self.work, self.ring_dir, self.out_dir)
        hostile = self.writer(
            "unshare", "--mount", "--propagation", "private", "sh", "-c",
            'mount -t tmpfs none "$0" && exec "$@"', hidden, WRITER,
            "modules", self.ring_dir, 4, *specs, prefix=True)
        good = self.good_workload(seconds=4)
        self.assertEqual(hostile.wait(timeout=60), 0)
        self.assertTrue(collector.alive(), collector.log())
        self.assert_good_profile_complete(collector, good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir, "modules.*")),
            30), collector.log())
        # Nothing was symbolized from any of those files.
        names = memory_functions(self.out_dir, "modules")
        self.assertTrue(names)
        resolved = [n for n in names if n and not re.match(
            r"^(\[.*\]|.*\+0x[0-9a-f]+|0x[0-9a-f]+)$", n)]
        self.assertEqual(resolved, [])
        self.assertGreater(
            collector.metric("ringprof_symbolizer_files_rejected_total"), 0)
        self.assert_stops_in_time(collector)

    def test_library_truncated_and_overwritten_after_symbolization(self):
        lib = os.path.join(self.work, "libcopy.so")
        shutil.copy(WRITER, lib)
        collector = Collector(self.work, self.ring_dir, self.out_dir)
        hostile = self.writer("libtrunc", self.ring_dir, 6, lib)
        good = self.good_workload(seconds=6)
        self.assertEqual(hostile.wait(timeout=60), 0)
        self.assertTrue(collector.alive(), collector.log())
        self.assert_good_profile_complete(collector, good)
        self.assertTrue(wait_for(
            lambda: not glob.glob(os.path.join(self.ring_dir, "libtrunc.*")),
            30), collector.log())
        windows = glob.glob(os.path.join(self.out_dir, "libtrunc",
                                         "memory", "*.pb.gz"))
        self.assertGreaterEqual(len(windows), 5)  # 1 s windows, both halves
        self.assert_stops_in_time(collector)

    # -- SIGTERM ----------------------------------------------------------

    def test_sigterm_with_a_fifo_module_and_a_backlog(self):
        fifo = os.path.join(self.work, "fifo")
        os.mkfifo(fifo)
        collector = Collector(self.work, self.ring_dir, self.out_dir)
        hostile = self.writer("modules", self.ring_dir, 30, fifo)
        deep = [self.writer("deep", self.ring_dir, 30, 2000) for _ in range(2)]
        time.sleep(4)
        self.assertTrue(collector.alive(), collector.log())
        status, took = collector.stop()
        self.assertLess(took, DEADLINE_S + 1.5, collector.log())
        self.assertIn(status, (0, 1), collector.log())
        for p in [hostile] + deep:
            p.kill()

    # -- shipping ---------------------------------------------------------

    def start_receiver(self):
        ready = os.path.join(self.work, "receiver.json")
        p = subprocess.Popen(["/usr/bin/python3", RECEIVER, "--ready-file",
                              ready, "--exit-with-parent"],
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        self.processes.append(p)
        self.assertTrue(wait_for(lambda: os.path.exists(ready), 30))
        with open(ready) as f:
            return json.load(f)

    def accepted(self, receiver):
        with urllib.request.urlopen("http://127.0.0.1:%d/accepted" %
                                    receiver["control_port"]) as r:
            return json.load(r)

    def test_workload_labels_cannot_replace_the_collectors(self):
        receiver = self.start_receiver()
        env = {"POD_NAME": "real-pod", "POD_NAMESPACE": "real-ns"}
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              ["--server-address=" + receiver["url"],
                               "--pid-label"], extra_env=env)
        labelled = self.writer("labels", self.ring_dir, 3)
        self.assertEqual(labelled.wait(timeout=60), 0)
        self.assertTrue(wait_for(
            lambda: any(e["labels"].get("service_name") == "labelled"
                        for e in self.accepted(receiver)), 30),
            collector.log())
        status, _ = collector.stop()
        self.assertEqual(status, 0, collector.log())
        entries = [e for e in self.accepted(receiver)
                   if e["labels"].get("service_name") == "labelled"]
        self.assertTrue(entries)
        for e in entries:
            labels = e["labels"]
            self.assertEqual(labels.get("pod"), "real-pod", labels)
            self.assertEqual(labels.get("namespace"), "real-ns", labels)
            self.assertEqual(labels.get("hostname"), socket.gethostname())
            self.assertEqual(labels.get("pid"), str(labelled.pid), labels)
            self.assertIn(labels.get("__name__"), ("memory", "process_cpu"))
            self.assertEqual(labels.get("team"), "blue", labels)
            self.assertNotIn("evil", labels.values(), labels)

    def test_retry_after_is_capped(self):
        receiver = self.start_receiver()
        fault = json.dumps({"status": 429, "retry_after": 999999999,
                            "count": 1}).encode()
        urllib.request.urlopen(urllib.request.Request(
            "http://127.0.0.1:%d/fault" % receiver["control_port"],
            data=fault, method="POST")).read()
        collector = Collector(self.work, self.ring_dir, self.out_dir,
                              ["--server-address=" + receiver["url"]])
        good = self.good_workload(seconds=2)
        self.committed(good)
        # The first upload is refused with a wait of 31 years; the retry
        # comes after the cap (60 s) instead.
        start = time.monotonic()
        self.assertTrue(wait_for(
            lambda: any(e["labels"].get("service_name") == "good"
                        for e in self.accepted(receiver)), 80, step=1),
            collector.log())
        report("Retry-After 999999999: accepted after", "%.0f s" %
               (time.monotonic() - start))
        self.assert_stops_in_time(collector)

    def test_bad_server_urls_and_secret_files_fail_at_startup(self):
        fifo = os.path.join(self.work, "fifo")
        os.mkfifo(fifo)
        cases = [
            ["--server-address=http://127.0.0.1:99999"],
            ["--server-address=ftp://127.0.0.1:4040"],
            ["--server-address=http://127.0.0.1:4040",
             "--basic-auth-user=u", "--basic-auth-password-file=/dev/zero"],
            ["--server-address=http://127.0.0.1:4040",
             "--basic-auth-user=u", "--basic-auth-password-file=" + fifo],
            ["--server-address=http://127.0.0.1:4040",
             "--auth-token-file=" + self.work],
        ]
        for extra in cases:
            start = time.monotonic()
            run = subprocess.run(
                [RINGPROF, "collect", "--ring-dir=" + self.ring_dir,
                 "--output-dir=" + self.out_dir] + extra,
                stderr=subprocess.PIPE, text=True, env=clean_env(),
                timeout=30)
            self.assertEqual(run.returncode, 2, (extra, run.stderr))
            self.assertLess(time.monotonic() - start, 5, extra)
            self.assertIn("error", run.stderr)

    def test_collector_is_not_dumpable(self):
        # Sharing a uid with the workload must not expose its environment
        # (secrets) through /proc: run it as an unprivileged uid.
        work = tempfile.mkdtemp(prefix="adv-uid-", dir="/tmp")
        self.addCleanup(shutil.rmtree, work, True)
        os.chmod(work, 0o777)
        ring_dir = os.path.join(work, "rings")
        os.makedirs(ring_dir)
        os.chmod(ring_dir, 0o777)
        nobody = ["setpriv", "--reuid=65534", "--regid=65534",
                  "--clear-groups"]
        collector = Collector(work, ring_dir, os.path.join(work, "out"),
                              prefix=nobody,
                              extra_env={"PYROSCOPE_BASIC_AUTH_PASSWORD":
                                         "s3cret"})
        self.assertTrue(collector.alive(), collector.log())
        environ = "/proc/%d/environ" % collector.proc.pid
        self.assertTrue(wait_for(
            lambda: os.stat("/proc/%d/status" % collector.proc.pid).st_uid
            == 0, 5))
        self.assertEqual(os.stat(environ).st_uid, 0)  # not dumpable
        peek = subprocess.run(nobody + ["cat", environ],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.assertNotEqual(peek.returncode, 0)
        self.assertNotIn(b"s3cret", peek.stdout)
        self.assert_stops_in_time(collector)


if __name__ == "__main__":
    unittest.main(verbosity=2)
