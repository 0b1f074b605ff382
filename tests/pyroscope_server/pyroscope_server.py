#!/usr/bin/python3
"""A real Grafana Pyroscope server for end-to-end tests, started hermetically.

    with PyroscopeServer(workdir) as server:
        ... ship to server.url ...
        server.query.series(...)

Runs the single binary built by tools/pyroscope/build (see README.md) with
all its state (filesystem object storage, metastore raft, v1 head) under a
temporary directory, every port (HTTP, gRPC, memberlist, raft) picked free,
no self-profiling push and no usage statistics, and waits (bounded) for its
/ready. `stop()` (or leaving the `with`) terminates it and removes the state.

Where tools/pyroscope/build could not build the binary (the Go module proxy
refuses the module), a test calls `skip_unless_available()` first and is
reported skipped, with the reason, instead of failing.

Command line, for shell tests:

    pyroscope_server.py serve --ready-file PATH [--log PATH] [--exit-with-parent]
    pyroscope_server.py skip-unless-available   # 0, or 3 after reporting a skip

starts a server, writes {"url": ..., "pid": ...} atomically to PATH once
ready, and runs until SIGTERM/SIGINT (or its parent's exit).
"""

import argparse
import ctypes
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import query  # noqa: E402  pylint: disable=wrong-import-position

VERSION = "v2.2.1"
READY_TIMEOUT_S = 120.0


class ServerError(Exception):
    """The server could not be found, started or made ready."""


def run(argv, log, env=None, timeout=300):
    """Runs argv with its output in `log`; a failure raises with the log's tail."""
    with open(log, "wb") as f:
        status = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                env=env, timeout=timeout).returncode
    if status != 0:
        with open(log, errors="replace") as f:
            raise AssertionError("%s exited %d:\n%s" % (
                os.path.basename(argv[0]), status, f.read()[-3000:]))


def binary_path():
    """The server binary tools/pyroscope/build made (RINGPROF_PYROSCOPE_BIN
    overrides it); ServerError naming the fix when it is missing."""
    path = os.environ.get("RINGPROF_PYROSCOPE_BIN") or os.path.join(
        os.environ.get("RINGPROF_CACHE_DIR", "/var/cache/ringprof"),
        "pyroscope-" + VERSION, "pyroscope")
    if not os.access(path, os.X_OK):
        raise ServerError(
            "Grafana Pyroscope %s is not built (%s is missing): run "
            "tools/setup, or tools/pyroscope/build for the reason it cannot "
            "be built" % (VERSION, path))
    return path


def write_skipped(reason):
    """Reports the running Bazel test as not run (JUnit status="notrun",
    which tools/test counts as skipped and lists with `reason`)."""
    print("SKIPPED: %s" % reason)
    xml = os.environ.get("XML_OUTPUT_FILE")
    if not xml:
        return
    name = os.environ.get("TEST_TARGET", "test").rpartition(":")[2]
    escaped = (reason.replace("&", "&amp;").replace("<", "&lt;")
               .replace(">", "&gt;").replace('"', "&quot;"))
    with open(xml, "w") as f:
        f.write('<?xml version="1.0" encoding="UTF-8"?>\n'
                '<testsuites><testsuite name="%s" tests="1" skipped="1">'
                '<testcase classname="%s" name="real_pyroscope" '
                'status="notrun"><skipped message="%s"/></testcase>'
                '</testsuite></testsuites>\n' % (name, name, escaped))


def skip_unless_available():
    """Exits the test as skipped (status 0, write_skipped) when this machine
    has no server binary: tools/pyroscope/build could not build it (the Go
    module proxy refusing the module is the known cause). Any other problem
    (a binary that does not start or get ready) still fails the test."""
    try:
        binary_path()
    except ServerError as e:
        write_skipped(str(e))
        sys.exit(0)


def _die_with_parent():
    """In the child: SIGKILL when the process that started it dies, so a
    killed test leaves no server behind (prctl PR_SET_PDEATHSIG)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def _free_ports(count):
    """`count` distinct free TCP ports on 127.0.0.1 (held open together, so
    no two are equal; another process may still take one before the server
    binds it, which start() reports as a failed start)."""
    sockets, ports = [], []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in sockets:
            s.close()
    return ports


def _flags(data, http_port, grpc_port, memberlist_port, raft_port):
    node = "ringprof-test"
    return [
        "-target=all",
        "-self-profiling.disable-push=true",
        "-usage-stats.enabled=false",
        "-tracing.enabled=false",
        "-config.show_banner=false",
        "-log.level=warn",
        "-server.http-listen-address=127.0.0.1",
        "-server.http-listen-port=%d" % http_port,
        "-server.grpc-listen-address=127.0.0.1",
        "-server.grpc-listen-port=%d" % grpc_port,
        "-memberlist.bind-addr=127.0.0.1",
        "-memberlist.bind-port=%d" % memberlist_port,
        "-memberlist.advertise-addr=127.0.0.1",
        "-memberlist.advertise-port=%d" % memberlist_port,
        "-memberlist.nodename=" + node,
        "-memberlist.leave-timeout=1s",
        "-storage.backend=filesystem",
        "-storage.filesystem.dir=%s/objects" % data,
        # v2 storage: the write path of v2.2.1's default (v1-v2-dual) and
        # its query backend for every query. (The default routes a tenant's
        # queries to the v1 read path until the metastore has v2 data for
        # it, and caches "no data yet" for a minute.)
        "-architecture.storage=v2",
        "-metastore.address=127.0.0.1:%d/%s" % (grpc_port, node),
        "-metastore.data-dir=%s/metastore" % data,
        "-metastore.raft.dir=%s/raft" % data,
        "-metastore.raft.snapshots-dir=%s/raft" % data,
        "-metastore.raft.bind-address=127.0.0.1:%d" % raft_port,
        "-metastore.raft.advertise-address=127.0.0.1:%d" % raft_port,
        "-metastore.raft.server-id=" + node,
        "-metastore.raft.bootstrap-peers=127.0.0.1:%d/%s" % (raft_port, node),
        "-metastore.min-ready-duration=0",
        "-segment-writer.min-ready-duration=0",
        "-segment-writer.num-tokens=1",
        "-segment-writer.lifecycler.addr=127.0.0.1",
        "-segment-writer.lifecycler.ID=" + node,
        "-segment-writer.heartbeat-period=1s",
        "-distributor.ring.instance-addr=127.0.0.1",
        "-distributor.ring.instance-id=" + node,
        "-distributor.ring.heartbeat-period=1s",
        "-overrides-exporter.ring.instance-addr=127.0.0.1",
        "-overrides-exporter.ring.instance-id=" + node,
        "-query-frontend.instance-addr=127.0.0.1",
        "-query-backend.address=127.0.0.1:%d" % grpc_port,
    ]


class PyroscopeServer:
    """One hermetic Pyroscope server. `extra_flags` are appended (a later
    flag wins), e.g. ["-distributor.ingestion-rate-limit-mb=1"]."""

    def __init__(self, workdir=None, extra_flags=(), log_path=None,
                 ready_timeout_s=READY_TIMEOUT_S):
        self._own_workdir = workdir is None
        self.workdir = workdir or tempfile.mkdtemp(prefix="pyroscope-")
        self.extra_flags = list(extra_flags)
        self.log_path = log_path or os.path.join(self.workdir, "pyroscope.log")
        self.ready_timeout_s = ready_timeout_s
        self.process = None
        self.url = None
        self.query = None

    def start(self, attempts=3):
        """Starts the server and waits for /ready; a start that loses a port
        to another process is retried with new ports."""
        binary = binary_path()
        for attempt in range(attempts):
            data = os.path.join(self.workdir, "data%d" % attempt)
            os.makedirs(data)
            http_port, grpc_port, memberlist_port, raft_port = _free_ports(4)
            argv = [binary] + _flags(data, http_port, grpc_port,
                                     memberlist_port, raft_port)
            argv += self.extra_flags
            with open(self.log_path, "ab") as log:
                self.process = subprocess.Popen(
                    argv, cwd=data, stdin=subprocess.DEVNULL, stdout=log,
                    stderr=subprocess.STDOUT, start_new_session=True,
                    preexec_fn=_die_with_parent)
            self.url = "http://127.0.0.1:%d" % http_port
            if self._wait_ready():
                self.query = query.QueryClient(self.url)
                return self
            self._kill()
            if "address already in use" not in self._log_tail():
                break
        raise ServerError("Pyroscope %s did not become ready within %.0f s "
                          "(log %s):\n%s" % (VERSION, self.ready_timeout_s,
                                             self.log_path, self._log_tail()))

    def _wait_ready(self):
        deadline = time.monotonic() + self.ready_timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            try:
                with urllib.request.urlopen(self.url + "/ready",
                                            timeout=2) as response:
                    if response.status == 200:
                        return True
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        return False

    def _log_tail(self, lines=30):
        try:
            with open(self.log_path, errors="replace") as f:
                return "".join(f.readlines()[-lines:])
        except OSError:
            return ""

    def _kill(self):
        if self.process is None or self.process.poll() is not None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()

    def stop(self):
        self._kill()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def _serve(args):
    server = PyroscopeServer(workdir=tempfile.mkdtemp(prefix="pyroscope-"),
                             log_path=args.log, extra_flags=args.flag)
    stopping = []

    def on_signal(*_):
        stopping.append(True)

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    parent = os.getppid()
    try:
        server.start()
    except ServerError as e:
        print(e, file=sys.stderr)
        server.stop()
        return 1
    try:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"url": server.url, "pid": server.process.pid}, f)
        os.rename(tmp, args.ready_file)
        while not stopping and server.process.poll() is None:
            if args.exit_with_parent and os.getppid() != parent:
                break
            time.sleep(0.2)
    finally:
        server.stop()
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="run a server until SIGTERM")
    serve.add_argument("--ready-file", required=True)
    serve.add_argument("--log", default=None)
    serve.add_argument("--exit-with-parent", action="store_true")
    serve.add_argument("--flag", action="append", default=[],
                       help="an extra server flag (repeatable)")
    sub.add_parser("skip-unless-available",
                   help="exit 0 if the binary is built; else report the "
                   "test skipped (JUnit notrun) and exit 3")
    args = parser.parse_args()
    if args.command == "skip-unless-available":
        try:
            binary_path()
        except ServerError as e:
            write_skipped(str(e))
            return 3
        return 0
    return _serve(args)


if __name__ == "__main__":
    sys.exit(main())
