#!/usr/bin/python3
"""The kit's images as a user gets them (//examples/deploy/images).

- What each holds: the emitter image exactly the library and its copier;
  the collector image ringprof, the Debian libraries it needs and nothing
  it does not (every shared library in it is needed, every library needed
  is in it), no shell, uid 10001; every Debian file listed in status.d.
- Reproducible: the collector image built twice by independent buildah
  runs (:collector_reproduced) is the same archive, byte for byte.
- Docker: a private Debian dockerd (started here, stopped at the end)
  loads every archive (image ID = the config's digest), runs the collector
  image (`--help` as uid 10001, read-only root), the emitter image (copies
  the library into a volume) and the examples image (`ringprof run`
  profiles the server).
- containerd: `ctr images import` of every archive into that daemon's
  containerd names each image and keeps its manifest digest.
- skopeo: `skopeo copy oci-archive:...` to a directory keeps the manifest
  digest.
- A registry: skopeo pushes the archives to Debian's docker-registry on a
  loopback port, and the Docker engine pulls them back; the manifest
  digest and the image ID survive.

Needs root (dockerd); fails, saying why, if dockerd cannot start.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import debian_files  # noqa: E402
from dockerd import Dockerd, run  # noqa: E402
import oci_archive  # noqa: E402

VERSION = open(os.path.join(HERE, "..", "..", "..", "VERSION")).read().strip()
ARCHIVES = {name: os.path.join(HERE, name + ".tar")
            for name in ("emitter", "collector", "examples",
                         "collector_reproduced")}


def image_of(name):
    images = oci_archive.read_archive(ARCHIVES[name])
    assert len(images) == 1, images
    return images[0]


class ContentsTest(unittest.TestCase):
    def test_emitter_image_holds_the_library_and_its_copier_only(self):
        image = image_of("emitter")
        files = image.files()
        regular = sorted(p for p, info in files.items() if info.isfile())
        self.assertEqual(regular, ["opt/ringprof/bin/copy",
                                   "opt/ringprof/lib/libringprof.so"])
        self.assertEqual(sorted(p for p, i in files.items() if not i.isdir()),
                         regular)
        config = image.config["config"]
        self.assertEqual(config["User"], "10001:10001")
        self.assertEqual(config["Entrypoint"], ["/opt/ringprof/bin/copy"])
        self.assertEqual(config["Cmd"], ["/opt/ringprof/lib/libringprof.so",
                                         "/ringprof-lib/libringprof.so"])

    def test_collector_image_holds_what_ringprof_needs_and_no_more(self):
        image = image_of("collector")
        config = image.config["config"]
        self.assertEqual(config["User"], "10001:10001")
        self.assertEqual(config["Entrypoint"],
                         ["/usr/local/bin/ringprof", "collect"])
        self.assertEqual(config["Labels"]["org.opencontainers.image.version"],
                         VERSION)
        root = tempfile.mkdtemp(prefix="images_test.")
        try:
            self.check_libraries(image, root)
        finally:
            shutil.rmtree(root)

    def check_libraries(self, image, root):
        files = image.files()
        for shell in ("bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox"):
            self.assertNotIn(shell, files)
        for data in image.layers():
            path = os.path.join(root, "layer.tar")
            with open(path, "wb") as f:
                f.write(data)
            run(["tar", "-xf", path, "-C", root])
            os.unlink(path)
        with open(os.path.join(root, "etc/passwd")) as f:
            self.assertIn(":10001:10001:", f.read())
        self.assertGreater(os.path.getsize(
            os.path.join(root, "etc/ssl/certs/ca-certificates.crt")), 100000)
        arch = image.config["architecture"]
        libdir = os.path.join(root, "usr/lib", debian_files.TRIPLETS[arch])
        libraries = {name for name in os.listdir(libdir)
                     if ".so" in name and not os.path.islink(
                         os.path.join(libdir, name))}
        # Every library the collector or libdebuginfod (dlopen'd) needs,
        # found inside the image as its loader would.
        reached = set()
        pending = [os.path.join(root, "usr/local/bin/ringprof"),
                   os.path.join(libdir, "libdebuginfod.so.1")]
        while pending:
            path = pending.pop()
            for soname in debian_files.needed(path):
                target = os.path.join(libdir, soname)
                self.assertTrue(os.path.exists(target),
                                "%s needs %s, missing from the image" % (
                                    os.path.relpath(path, root), soname))
                real = os.path.basename(os.path.realpath(target))
                if real not in reached:
                    reached.add(real)
                    pending.append(target)
        interpreter = debian_files.interpreter(
            os.path.join(root, "usr/local/bin/ringprof"))
        reached.add(os.path.basename(os.path.realpath(root + interpreter)))
        reached.add(os.path.basename(os.path.realpath(
            os.path.join(libdir, "libdebuginfod.so.1"))))
        self.assertEqual(sorted(libraries - reached), [],
                         "libraries nothing needs")
        # Every Debian file is recorded with its package.
        recorded = set(os.listdir(os.path.join(root, "var/lib/dpkg/status.d")))
        packages = debian_files.Packages()
        for name in libraries:
            owner = packages.owner_of(os.path.join(
                "/usr/lib", debian_files.TRIPLETS[arch], name)).name
            self.assertIn(owner, recorded, name)
            self.assertTrue(os.path.exists(os.path.join(
                root, "usr/share/doc", owner, "copyright")), owner)

    def test_examples_image_is_the_collector_image_plus_one_layer(self):
        collector, examples = image_of("collector"), image_of("examples")
        self.assertEqual(examples.manifest["layers"][:-1],
                         collector.manifest["layers"])
        self.assertEqual(len(examples.manifest["layers"]),
                         len(collector.manifest["layers"]) + 1)


class ReproducibleTest(unittest.TestCase):
    def test_two_builds_give_the_same_archive(self):
        with open(ARCHIVES["collector"], "rb") as a, \
                open(ARCHIVES["collector_reproduced"], "rb") as b:
            self.assertTrue(a.read() == b.read(),
                            "two buildah runs gave different archives")
        image = image_of("collector")
        self.assertEqual(image.config["created"], "1970-01-01T00:00:00Z")
        for entry in image.config["history"]:
            self.assertEqual(entry["created"], "1970-01-01T00:00:00Z")
        for info in image.files().values():
            self.assertEqual(info.mtime, 0, info.name)


class Registry:
    """Debian's docker-registry (the Distribution registry) on a loopback
    port, storing in a temporary directory; stop() ends it."""

    def __init__(self, scratch):
        self.dir = os.path.join(scratch, "registry")
        os.makedirs(self.dir)
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.address = "127.0.0.1:%d" % s.getsockname()[1]
        config = os.path.join(self.dir, "config.yml")
        with open(config, "w") as f:
            f.write("version: 0.1\n"
                    "storage:\n  filesystem:\n    rootdirectory: %s\n"
                    "http:\n  addr: %s\n" % (
                        os.path.join(self.dir, "data"), self.address))
        self.log = open(os.path.join(self.dir, "registry.log"), "wb")
        self.process = subprocess.Popen(
            ["docker-registry", "serve", config], stdout=self.log,
            stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                        "http://%s/v2/" % self.address, timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                if self.process.poll() is not None:
                    break
                time.sleep(0.2)
        self.stop()
        raise AssertionError("docker-registry did not start")

    def stop(self):
        if self.process.poll() is None:
            self.process.terminate()
            self.process.wait(30)
        self.log.close()


class EnginesTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        for tool in ("ctr", "skopeo"):
            if shutil.which(tool) is None:
                raise AssertionError("%s not found (run tools/setup)" % tool)
        cls.dockerd = Dockerd()
        cls.dockerd.start()
        cls.scratch = tempfile.mkdtemp(prefix="images_test.")

    @classmethod
    def tearDownClass(cls):
        cls.dockerd.stop()
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def load(self, name):
        out = self.dockerd.docker("load", "--input", ARCHIVES[name])
        tag = "ringprof-%s:%s" % (name, VERSION)
        self.assertIn("Loaded image: " + tag, out)
        image_id = self.dockerd.docker("image", "inspect", "--format",
                                       "{{.Id}}", tag).strip()
        self.assertEqual(image_id, image_of(name).manifest["config"]["digest"])
        return tag

    def test_docker_runs_the_collector_image_as_uid_10001(self):
        tag = self.load("collector")
        # --help exits 1 (abseil's flags), after the usage.
        out = self.dockerd.docker("run", "--rm", "--network=none",
                                  "--read-only", tag, "--help", check=False)
        self.assertIn("ringprof collect --ring-dir=DIR", out)
        user = self.dockerd.docker("image", "inspect", "--format",
                                   "{{.Config.User}}", tag).strip()
        self.assertEqual(user, "10001:10001")

    def test_docker_runs_the_emitter_image_as_an_init_container(self):
        tag = self.load("emitter")
        volume = os.path.join(self.scratch, "ringprof-lib")
        os.makedirs(volume)
        os.chmod(volume, 0o777)  # an emptyDir
        out = self.dockerd.docker("run", "--rm", "--network=none",
                                  "--read-only", "--volume",
                                  volume + ":/ringprof-lib", tag)
        self.assertIn("-> /ringprof-lib/libringprof.so", out)
        copied = os.path.join(volume, "libringprof.so")
        self.assertEqual(os.stat(copied).st_uid, 10001)
        files = image_of("emitter").files()
        self.assertEqual(os.path.getsize(copied),
                         files["opt/ringprof/lib/libringprof.so"].size)

    def test_docker_runs_ringprof_run_in_the_examples_image(self):
        tag = self.load("examples")
        out_dir = os.path.join(self.scratch, "run-out")
        os.makedirs(out_dir)
        os.chmod(out_dir, 0o777)
        out = self.dockerd.docker(
            "run", "--rm", "--network=none", "--volume", out_dir + ":/out", tag,
            "ringprof", "run", "--output-dir=/out", "--", "/usr/local/bin/server",
            "--seconds=2", "--workers=1", "--clients=1", timeout=120)
        self.assertIn("server exited with status 0", out)
        for name in ("process_cpu.pb.gz", "memory.pb.gz", "flamegraph.html"):
            self.assertTrue(os.path.exists(os.path.join(out_dir, name)), name)

    def test_ctr_imports_every_archive(self):
        for name in ("emitter", "collector", "examples"):
            out = self.dockerd.ctr("images", "import", ARCHIVES[name])
            reference = "docker.io/library/ringprof-%s:%s" % (name, VERSION)
            self.assertIn("unpacking " + reference, out)
            listed = self.dockerd.ctr("images", "list", "name==" + reference)
            self.assertIn(image_of(name).descriptor["digest"], listed)

    def test_pushed_to_a_registry_and_pulled_by_docker(self):
        """What a user does with an archive: skopeo pushes it to their
        registry (here Debian's docker-registry on loopback), their engine
        pulls it; the manifest and image digests survive."""
        for tool in ("docker-registry",):
            if shutil.which(tool) is None:
                raise AssertionError("%s not found (run tools/setup)" % tool)
        registry = Registry(self.scratch)
        try:
            for name in ("emitter", "collector"):
                image = image_of(name)
                reference = "%s/ringprof-%s:%s" % (registry.address, name,
                                                   VERSION)
                run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                     "oci-archive:" + ARCHIVES[name], "docker://" + reference])
                inspected = json.loads(run(["skopeo", "inspect",
                                            "--tls-verify=false",
                                            "docker://" + reference]))
                self.assertEqual(inspected["Digest"],
                                 image.descriptor["digest"])
                # Docker treats a loopback registry as insecure (plain HTTP).
                self.dockerd.docker("pull", reference)
                image_id = self.dockerd.docker("image", "inspect", "--format",
                                               "{{.Id}}", reference).strip()
                self.assertEqual(image_id, image.manifest["config"]["digest"])
        finally:
            registry.stop()

    def test_skopeo_copies_every_archive(self):
        for name in ("emitter", "collector", "examples"):
            dest = os.path.join(self.scratch, "skopeo-" + name)
            run(["skopeo", "copy", "--quiet", "oci-archive:" + ARCHIVES[name],
                 "dir:" + dest])
            inspected = json.loads(run(["skopeo", "inspect", "dir:" + dest]))
            self.assertEqual(inspected["Digest"],
                             image_of(name).descriptor["digest"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
