#!/usr/bin/python3
"""The compose stack (docker-compose.yaml) run by Docker Compose against
Debian's Docker engine, with the kit's images as built.

The stack's two arrangements, each as the file writes them:
  - pipeline + pipeline-collector: the sidecar pair under runc (one host
    kernel): a tmpfs volume shared by the two containers, the collector in
    the workload's PID namespace;
  - server-gvisor: workload and collector in one container under runsc
    (`ringprof run`), the runtime registered with the engine as
    `runsc install` does.

What the test changes, and why: no pyroscope service, no Pyroscope
address and no network (network_mode: none; Grafana's image cannot be
pulled here, and a bridge network would give the containers addresses
outside the loopback), so the collectors write their profiles locally
(--output-dir on a bind-mounted directory) and the ports are dropped;
server-gvisor's server runs a few seconds instead of a day. Everything
else is the file's: images, commands, environment, volumes (the tmpfs
volume's options included), `pid: service:pipeline`, `runtime: runsc`.

Asserts: server-gvisor's `ringprof run` exits 0 with the server's
profiles; the sidecar pair runs until the collector has written a
window, then `docker-compose stop pipeline-collector` (SIGTERM) stops the
sidecar as `docker-compose stop` would first (it depends on the
pipeline), the collector drains and exits 0 while the pipeline still
runs, and its profiles hold the pipeline's. Every profile set holds
both profile types with the workload's hot functions symbolized.
Needs root; fails, saying why, if the engine cannot start.
"""

import glob
import gzip
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "images"))
from dockerd import Dockerd, run  # noqa: E402

ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
VERSION = open(os.path.join(ROOT, "VERSION")).read().strip()
ARCHIVES = [os.path.join(HERE, "images", name + ".tar")
            for name in ("collector", "examples")]
RUNSC = "/opt/runsc-20240729/runsc"
SECONDS = 4
# Known hot functions (examples/README.md), one per profile type is enough
# to show that symbols arrived.
HOT = {"pipeline": [b"CompressBlock", b"TokenizeBlock"],
       "server": [b"ParseJsonRequest", b"RenderResponse"]}


def with_seconds(command):
    return [("--seconds=%d" % SECONDS) if a.startswith("--seconds=") else a
            for a in command]


def derived_stack(scratch):
    """The compose file as the test runs it (the module's docstring)."""
    with open(os.path.join(HERE, "docker-compose.yaml")) as f:
        stack = yaml.safe_load(f)
    services = stack["services"]
    del services["pyroscope"]
    outputs = {}
    for name, service in services.items():
        service["network_mode"] = "none"
        service.pop("ports", None)
        service["depends_on"] = [d for d in service.get("depends_on", [])
                                 if d in services]
        if not service["depends_on"]:
            del service["depends_on"]
        service.get("environment", {}).pop("PYROSCOPE_SERVER_ADDRESS", None)
    services["server-gvisor"]["command"] = with_seconds(
        services["server-gvisor"]["command"])
    for name in ("pipeline-collector", "server-gvisor"):
        out = os.path.join(scratch, name)
        os.makedirs(out)
        os.chmod(out, 0o777)
        outputs[name] = out
        service = services[name]
        service.setdefault("volumes", []).append(out + ":/out")
        command = service["command"]
        at = command.index("--") if "--" in command else len(command)
        service["command"] = command[:at] + ["--output-dir=/out"] + command[at:]
    path = os.path.join(scratch, "docker-compose.yaml")
    with open(path, "w") as f:
        yaml.safe_dump(stack, f)
    return path, outputs


def profiles(out_dir, kind):
    """The bytes of every window's profile of `kind` under out_dir."""
    found = []
    for path in glob.glob(os.path.join(out_dir, "*", kind, "*.pb.gz")):
        with gzip.open(path) as f:
            found.append(f.read())
    return found


class ComposeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if shutil.which("docker-compose") is None:
            raise AssertionError("docker-compose not found (run tools/setup)")
        cls.scratch = tempfile.mkdtemp(prefix="compose_test.")
        # runsc's own --network=none: with Docker's network_mode none it
        # would otherwise refuse the namespace Docker gives it ("cannot run
        # with network enabled in root network namespace").
        cls.dockerd = Dockerd(runtimes={"runsc": [RUNSC, "--network=none"]})
        cls.dockerd.start()
        for archive in ARCHIVES:
            cls.dockerd.docker("load", "--input", archive)
        cls.compose_file, cls.outputs = derived_stack(cls.scratch)
        cls.env = dict(os.environ, DOCKER_HOST=cls.dockerd.host)
        cls.compose = ["docker-compose", "--project-name", "ringproftest",
                       "--file", cls.compose_file]
        try:
            cls.run_stack()
        except BaseException:
            cls.tearDownClass()
            raise

    @classmethod
    def run_stack(cls):
        run(cls.compose + ["up", "--detach"], env=cls.env, timeout=180)
        cls.exit_codes = {}
        cls.exit_codes["server-gvisor"] = cls.wait_exit(
            "server-gvisor", time.monotonic() + SECONDS + 90)
        # The sidecar pair runs until the collector has closed a window
        # (--window, 10 s) of the pipeline's profiles, then the user stops
        # the stack: the collector first, as it depends on the pipeline.
        deadline = time.monotonic() + 90
        while not profiles(cls.outputs["pipeline-collector"], "process_cpu"):
            if time.monotonic() > deadline:
                raise AssertionError("no window written by pipeline-collector "
                                     "in 90 s:\n" + cls.compose_logs())
            time.sleep(0.5)
        run(cls.compose + ["stop", "--timeout", "30", "pipeline-collector"],
            env=cls.env, timeout=120)
        cls.exit_codes["pipeline-collector"] = cls.wait_exit(
            "pipeline-collector", time.monotonic() + 5)
        cls.pipeline_state = cls.state("pipeline")[0]
        cls.logs = cls.compose_logs()

    @classmethod
    def compose_logs(cls):
        return run(cls.compose + ["logs", "--no-color"], env=cls.env,
                   check=False)[-4000:]

    @classmethod
    def state(cls, service):
        """(status, exit code) of the service's container."""
        container = run(cls.compose + ["ps", "--quiet", service],
                        env=cls.env).strip()
        status, code = cls.dockerd.docker(
            "inspect", "--format", "{{.State.Status}} {{.State.ExitCode}}",
            container).split()
        return status, int(code)

    @classmethod
    def wait_exit(cls, service, deadline):
        while time.monotonic() < deadline:
            status, code = cls.state(service)
            if status == "exited":
                return code
            time.sleep(0.5)
        raise AssertionError("%s still running after its deadline:\n%s" % (
            service, cls.compose_logs()))

    @classmethod
    def tearDownClass(cls):
        if hasattr(cls, "env"):
            subprocess.run(cls.compose + ["down", "--volumes", "--timeout", "1"],
                           env=cls.env, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL, timeout=120)
        cls.dockerd.stop()
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def check_profiles(self, out_dir, hot):
        for kind in ("process_cpu", "memory"):
            found = profiles(out_dir, kind)
            self.assertTrue(found, "no %s profile in %s\n%s" % (
                kind, out_dir, self.logs))
            for function in hot:
                self.assertTrue(any(function in p for p in found),
                                "%s not symbolized in %s" % (function, kind))

    def test_runc_sidecar_pair(self):
        self.assertEqual(self.exit_codes["pipeline-collector"], 0, self.logs)
        # The workload outlived the collector's whole run under the preload.
        self.assertEqual(self.pipeline_state, "running", self.logs)
        self.check_profiles(self.outputs["pipeline-collector"], HOT["pipeline"])

    def test_gvisor_service_runs_ringprof_run(self):
        self.assertEqual(self.exit_codes["server-gvisor"], 0, self.logs)
        self.check_profiles(self.outputs["server-gvisor"], HOT["server"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
