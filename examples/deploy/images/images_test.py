#!/usr/bin/python3
"""The kit's images as a user gets them (//examples/deploy/images).

- What each holds, for amd64 and arm64: the emitter image exactly the
  library and its copier; the collector image ringprof, the Debian
  libraries it needs and nothing it does not (every shared library in it
  is needed, every library needed is in it, all of the image's
  architecture), no shell, uid 10001; every Debian file listed in
  status.d with its copyright.
- Reproducible: the collector image built twice by independent buildah
  runs (:collector_reproduced) is the same archive, byte for byte.
- arm64 under qemu-aarch64 -cpu max (Debian's qemu-user), from the images'
  own root filesystems: the copier copies, the collector starts, the
  examples' server runs with the emitter preloaded and writes a ring that
  the arm64 collector reads back whole.
- Docker: a private Debian dockerd (started here, stopped at the end)
  loads every amd64 archive (image ID = the config's digest), runs the
  collector image (read-only root), the emitter image (copies the library
  into a volume as uid 10001) and the examples image (`ringprof run`
  profiles the server).
- containerd: `ctr images import` of every archive into that daemon's
  containerd names each image and keeps its manifest digest; the
  multi-platform archive imports with both platforms.
- skopeo: `skopeo copy oci-archive:...` to a directory keeps the manifest
  digest.
- A registry: skopeo pushes the archives (the multi-platform ones with
  --all) to Debian's docker-registry on a loopback port; the registry
  serves the index with both platforms, and the Docker engine pulls the
  host's image back, digests unchanged.

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
IMAGES = ("emitter", "collector", "examples")
ARCHES = ("amd64", "arm64")


def archive(name, arch=None):
    """ringprof-NAME-ARCH.tar (one platform), ringprof-NAME.tar (arch None:
    every platform under one index), or NAME.tar (e.g. collector_reproduced)."""
    if name not in IMAGES:
        return os.path.join(HERE, name + ".tar")
    suffix = "-" + arch if arch else ""
    return os.path.join(HERE, "ringprof-%s%s.tar" % (name, suffix))


def image_of(name, arch="amd64"):
    images = oci_archive.read_archive(archive(name, arch))
    assert len(images) == 1, images
    return images[0]


def unpack(image, root):
    """The image's layers extracted into root (owners kept: root runs this)."""
    for data in image.layers():
        path = os.path.join(root, ".layer.tar")
        with open(path, "wb") as f:
            f.write(data)
        run(["tar", "-xf", path, "-C", root])
        os.unlink(path)


class ContentsTest(unittest.TestCase):
    def test_emitter_image_holds_the_library_and_its_copier_only(self):
        for arch in ARCHES:
            image = image_of("emitter", arch)
            self.assertEqual(image.config["architecture"], arch)
            files = image.files()
            regular = sorted(p for p, info in files.items() if info.isfile())
            self.assertEqual(regular, ["opt/ringprof/bin/copy",
                                       "opt/ringprof/lib/libringprof.so"])
            self.assertEqual(sorted(p for p, i in files.items()
                                    if not i.isdir()), regular)
            config = image.config["config"]
            self.assertEqual(config["User"], "10001:10001")
            self.assertEqual(config["Entrypoint"], ["/opt/ringprof/bin/copy"])
            self.assertEqual(config["Cmd"], ["/opt/ringprof/lib/libringprof.so",
                                             "/ringprof-lib/libringprof.so"])

    def test_collector_image_holds_what_ringprof_needs_and_no_more(self):
        for arch in ARCHES:
            image = image_of("collector", arch)
            self.assertEqual(image.config["architecture"], arch)
            config = image.config["config"]
            self.assertEqual(config["User"], "10001:10001")
            self.assertEqual(config["Entrypoint"],
                             ["/usr/local/bin/ringprof", "collect"])
            self.assertEqual(
                config["Labels"]["org.opencontainers.image.version"], VERSION)
            root = tempfile.mkdtemp(prefix="images_test.")
            try:
                unpack(image, root)
                self.check_libraries(image, root, arch)
            finally:
                shutil.rmtree(root)

    def check_libraries(self, image, root, arch):
        files = image.files()
        for shell in ("bin/sh", "usr/bin/sh", "bin/bash", "bin/busybox"):
            self.assertNotIn(shell, files)
        with open(os.path.join(root, "etc/passwd")) as f:
            self.assertIn(":10001:10001:", f.read())
        self.assertGreater(os.path.getsize(
            os.path.join(root, "etc/ssl/certs/ca-certificates.crt")), 100000)
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
            self.assertEqual(debian_files.elf_arch(path), arch, path)
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
        self.assertTrue(os.path.exists(root + interpreter), interpreter)
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
                "/usr/lib", debian_files.TRIPLETS[arch], name))
            self.assertEqual(owner.arch, arch, name)
            self.assertIn(owner.name, recorded, name)
            self.assertTrue(os.path.exists(os.path.join(
                root, "usr/share/doc", owner.name, "copyright")), owner.name)

    def test_examples_image_is_the_collector_image_plus_one_layer(self):
        for arch in ARCHES:
            collector = image_of("collector", arch)
            examples = image_of("examples", arch)
            self.assertEqual(examples.manifest["layers"][:-1],
                             collector.manifest["layers"])
            self.assertEqual(len(examples.manifest["layers"]),
                             len(collector.manifest["layers"]) + 1)

    def test_multi_platform_archives_index_both_images(self):
        for name in IMAGES:
            images = oci_archive.read_archive(archive(name))
            self.assertEqual(sorted(i.platform for i in images),
                             ["linux/amd64", "linux/arm64"])
            for image in images:
                single = image_of(name, image.config["architecture"])
                self.assertEqual(image.descriptor["digest"],
                                 single.descriptor["digest"])


class Arm64Test(unittest.TestCase):
    """The arm64 images' programs, run by qemu-aarch64 from the images'
    own root filesystems (-L: the loader and libraries are the image's)."""

    @classmethod
    def setUpClass(cls):
        if shutil.which("qemu-aarch64") is None:
            raise AssertionError("qemu-aarch64 not found (run tools/setup)")
        cls.scratch = tempfile.mkdtemp(prefix="images_test.arm64.")
        cls.roots = {}
        for name in ("emitter", "examples"):
            root = os.path.join(cls.scratch, name)
            os.makedirs(root)
            unpack(image_of(name, "arm64"), root)
            cls.roots[name] = root

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.scratch, ignore_errors=True)

    def qemu(self, root, *argv, env=(), check=True):
        command = ["qemu-aarch64", "-cpu", "max", "-L", root]
        for variable in env:
            command += ["-E", variable]  # the guest's, not qemu's own
        return run(command + [root + argv[0]] + list(argv[1:]), check=check)

    def test_copier_copies(self):
        root = self.roots["emitter"]
        dest = os.path.join(self.scratch, "libringprof.so")
        out = self.qemu(root, "/opt/ringprof/bin/copy",
                        root + "/opt/ringprof/lib/libringprof.so", dest)
        self.assertIn("-> " + dest, out)
        with open(dest, "rb") as a, open(
                root + "/opt/ringprof/lib/libringprof.so", "rb") as b:
            self.assertTrue(a.read() == b.read())

    def test_server_with_the_emitter_writes_a_ring_the_collector_reads(self):
        root = self.roots["examples"]
        # --help exits 1 (abseil's flags), after the usage.
        self.assertIn("ringprof collect --ring-dir=DIR", self.qemu(
            root, "/usr/local/bin/ringprof", "--help", check=False))
        rings = os.path.join(self.scratch, "rings")
        os.makedirs(rings)
        out = self.qemu(root, "/usr/local/bin/server", "--seconds=2",
                        "--workers=1", "--clients=1",
                        env=["LD_PRELOAD=/usr/local/lib/ringprof/libringprof.so",
                             "RINGPROF_DIR=" + rings])
        self.assertIn("0 parse errors", out)
        files = os.listdir(rings)
        self.assertEqual(len(files), 1, files)
        dump = self.qemu(root, "/usr/local/bin/ringprof", "dump", "--quiet",
                         os.path.join(rings, files[0]))
        self.assertRegex(dump, r"records \d+ delivered, 0 lost .*process ended")
        self.assertRegex(dump, r"CpuSample +[1-9]")
        self.assertRegex(dump, r"AllocSample +[1-9]")


class ReproducibleTest(unittest.TestCase):
    def test_two_builds_give_the_same_archive(self):
        with open(archive("collector", "amd64"), "rb") as a, \
                open(archive("collector_reproduced"), "rb") as b:
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
        out = self.dockerd.docker("load", "--input", archive(name, "amd64"))
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
        # The binary is the version the image is tagged with.
        out = self.dockerd.docker("run", "--rm", "--network=none",
                                  "--read-only", tag, "--version")
        self.assertEqual(out.strip(), "ringprof " + VERSION)
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
        for name in IMAGES:
            reference = "docker.io/library/ringprof-%s:%s" % (name, VERSION)
            out = self.dockerd.ctr("images", "import", archive(name, "amd64"))
            self.assertIn("unpacking " + reference, out)
            listed = self.dockerd.ctr("images", "list", "name==" + reference)
            self.assertIn(image_of(name).descriptor["digest"], listed)
            self.dockerd.ctr("images", "remove", reference)
            # Both platforms: the multi-platform archive.
            self.dockerd.ctr("images", "import", "--all-platforms",
                             archive(name))
            listed = self.dockerd.ctr("images", "list", "name==" + reference)
            self.assertIn("linux/amd64,linux/arm64", listed)

    def test_pushed_to_a_registry_and_pulled_by_docker(self):
        """What a user does with the archives: skopeo pushes them to their
        registry (here Debian's docker-registry on loopback), the
        multi-platform one with --all; their engine pulls the host's image;
        the digests survive."""
        if shutil.which("docker-registry") is None:
            raise AssertionError("docker-registry not found (run tools/setup)")
        registry = Registry(self.scratch)
        try:
            for name in ("emitter", "collector"):
                host = image_of(name)
                repository = "%s/ringprof-%s" % (registry.address, name)
                single = "%s:%s-amd64" % (repository, VERSION)
                run(["skopeo", "copy", "--quiet", "--dest-tls-verify=false",
                     "oci-archive:" + archive(name, "amd64"),
                     "docker://" + single])
                inspected = json.loads(run(["skopeo", "inspect",
                                            "--tls-verify=false",
                                            "docker://" + single]))
                self.assertEqual(inspected["Digest"], host.descriptor["digest"])
                both = "%s:%s" % (repository, VERSION)
                run(["skopeo", "copy", "--quiet", "--all",
                     "--dest-tls-verify=false", "oci-archive:" + archive(name),
                     "docker://" + both])
                index = json.loads(run(["skopeo", "inspect", "--raw",
                                        "--tls-verify=false", "docker://" + both]))
                self.assertEqual(sorted((m["platform"]["architecture"],
                                         m["digest"]) for m in index["manifests"]),
                                 sorted((arch, image_of(name, arch).descriptor[
                                     "digest"]) for arch in ARCHES))
                # Docker treats a loopback registry as insecure (plain HTTP)
                # and picks the host's platform from the index.
                self.dockerd.docker("pull", both)
                image_id = self.dockerd.docker("image", "inspect", "--format",
                                               "{{.Id}}", both).strip()
                self.assertEqual(image_id, host.manifest["config"]["digest"])
        finally:
            registry.stop()

    def test_skopeo_copies_every_archive(self):
        for name in IMAGES:
            dest = os.path.join(self.scratch, "skopeo-" + name)
            run(["skopeo", "copy", "--quiet",
                 "oci-archive:" + archive(name, "amd64"), "dir:" + dest])
            inspected = json.loads(run(["skopeo", "inspect", "dir:" + dest]))
            self.assertEqual(inspected["Digest"],
                             image_of(name).descriptor["digest"])


if __name__ == "__main__":
    unittest.main(verbosity=2)
