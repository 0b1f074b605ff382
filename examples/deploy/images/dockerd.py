"""Debian's Docker engine, privately, for the tests of the deploy kit.

`Dockerd()` is a dockerd of Debian's docker.io with everything of its own
in a temporary directory: its data root, its containerd, its socket and
pid file, an empty configuration (nothing from /etc/docker); no bridge, no
iptables rules, so it touches neither the host's network nor another
engine running beside it. `start()` waits (60 s at most) until it answers,
and fails with the tail of its log if it does not; `stop()` sends SIGTERM
(SIGKILL after 30 s), unmounts what it left and removes the directory.

`runtimes` registers OCI runtimes by name ({"runsc": ["/path/to/runsc",
"--flag", ...]}: the binary and its runtime arguments), as `runsc install`
does in /etc/docker/daemon.json.
"""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

DOCKER = "/usr/bin/docker"  # Debian's docker.io client
DOCKERD = "/usr/sbin/dockerd"


def run(cmd, timeout=120, check=True, env=None):
    """Runs cmd; its output (stdout and stderr) as text; an AssertionError
    with that output when it fails and `check`."""
    result = subprocess.run(cmd, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=timeout, env=env)
    if check and result.returncode != 0:
        raise AssertionError("%s exited %d:\n%s" % (
            " ".join(cmd), result.returncode,
            result.stdout.decode(errors="replace")[-3000:]))
    return result.stdout.decode(errors="replace")


class Dockerd:
    """One private dockerd (the module's docstring)."""

    def __init__(self, runtimes=None):
        self.runtimes = runtimes or {}
        self.dir = tempfile.mkdtemp(prefix="ringprof-dockerd.", dir="/tmp")
        self.socket = os.path.join(self.dir, "docker.sock")
        self.log_path = os.path.join(self.dir, "dockerd.log")
        self.process = None

    def start(self):
        if os.geteuid() != 0:
            raise AssertionError("needs root: it starts a Docker engine")
        for tool in (DOCKER, DOCKERD):
            if shutil.which(tool) is None:
                raise AssertionError("%s not found (run tools/setup)" % tool)
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self):
        with open(self.log_path, "wb") as log:
            self.process = subprocess.Popen(
                [DOCKERD, "--data-root", os.path.join(self.dir, "data"),
                 "--exec-root", os.path.join(self.dir, "exec"),
                 "--pidfile", os.path.join(self.dir, "dockerd.pid"),
                 "--host", "unix://" + self.socket, "--bridge=none",
                 "--iptables=false", "--ip6tables=false",
                 "--config-file", self.config_file()],
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            if os.path.exists(self.socket) and subprocess.run(
                    self.docker_cmd("version"), stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL).returncode == 0:
                return
            time.sleep(0.2)
        raise AssertionError("Debian's dockerd did not start (exit %s):\n%s" % (
            self.process.poll(), self.log()))

    def config_file(self):
        """Its own configuration: nothing from /etc/docker."""
        path = os.path.join(self.dir, "daemon.json")
        config = {"runtimes": {
            name: {"path": argv[0], "runtimeArgs": argv[1:]}
            for name, argv in self.runtimes.items()}}
        with open(path, "w") as f:
            json.dump(config, f)
        return path

    @property
    def host(self):
        """DOCKER_HOST for clients (docker-compose)."""
        return "unix://" + self.socket

    def log(self):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-20:])

    def docker_cmd(self, *args):
        return [DOCKER, "--host", self.host] + list(args)

    def docker(self, *args, **kwargs):
        return run(self.docker_cmd(*args), **kwargs)

    def ctr(self, *args):
        return run(["ctr", "--address",
                    os.path.join(self.dir, "exec", "containerd",
                                 "containerd.sock"),
                    "--namespace", "ringprof-test"] + list(args))

    def stop(self):
        if self.process and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)
        subprocess.run(["umount", "-R", os.path.join(self.dir, "data")],
                       stderr=subprocess.DEVNULL)
        shutil.rmtree(self.dir, ignore_errors=True)
