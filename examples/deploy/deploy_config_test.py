#!/usr/bin/python3
"""Keeps the deployment kit honest without a cluster or a Docker engine.

Parses every YAML file here and checks the invariants README.md explains:
  - the pod runs under gVisor with a shared process namespace;
  - the ring directory is an emptyDir of medium Memory, mounted at the same
    path in the workload and the collector, and it is the workload's
    RINGPROF_DIR and the collector's --ring-dir;
  - LD_PRELOAD points into the volume the init container fills, and the init
    container copies the library there;
  - every Secret key the collector reads exists in the Secret; the password
    comes from a mounted file, never an env value;
  - every container has resource requests and limits;
  - the compose stack's sidecar pair shares a tmpfs volume and a PID
    namespace, and its gVisor service runs `ringprof run`;
  - every collector flag and environment variable used anywhere in the kit
    is one `ringprof --helpfull` documents;
  - every ringprof image the manifest and the compose stack name is one
    that images/BUILD.bazel builds, tagged with the repository's VERSION;
    each Dockerfile COPYs exactly the layers its image's rule stages and
    runs as the pod's runAsUser:runAsGroup; the init container runs the
    emitter image's copier on the library it holds.
"""

import os
import re
import subprocess
import sys
import unittest

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
# Runfiles root: built outputs (the collector binary).
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
# The source tree, found through this file's runfiles symlink: BUILD files
# and emitter/config.h are read from there, as they are not build outputs.
SOURCE_ROOT = os.path.abspath(
    os.path.join(os.path.dirname(os.path.realpath(__file__)), "..", ".."))


def load(relative):
    with open(os.path.join(HERE, relative)) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def flag_values(args, name):
    prefix = "--%s=" % name
    return [a[len(prefix):] for a in args if a.startswith(prefix)]


def collector_help():
    binary = os.path.join(ROOT, "collector", "ringprof")
    # --helpfull: every flag linked in, the shipping flags included.
    result = subprocess.run([binary, "--helpfull"], stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, timeout=30)
    return result.stdout.decode(errors="replace")


class KubernetesManifestTest(unittest.TestCase):
    def setUp(self):
        docs = load("k8s/ringprof-gvisor.yaml")
        self.assertEqual([d["kind"] for d in docs], ["Deployment"])
        self.pod = docs[0]["spec"]["template"]["spec"]
        self.containers = {c["name"]: c for c in self.pod["containers"]}
        self.init = {c["name"]: c for c in self.pod["initContainers"]}
        self.volumes = {v["name"]: v for v in self.pod["volumes"]}
        self.app = self.containers["app"]
        self.collector = self.containers["ringprof"]

    def mount_path(self, container, volume):
        paths = [m["mountPath"] for m in container.get("volumeMounts", [])
                 if m["name"] == volume]
        self.assertEqual(len(paths), 1, "%s mounts %s once" % (container["name"], volume))
        return paths[0]

    def test_gvisor_and_shared_pid_namespace(self):
        self.assertEqual(self.pod["runtimeClassName"], "gvisor")
        self.assertIs(self.pod["shareProcessNamespace"], True)
        runtime_class = load("k8s/runtimeclass.yaml")[0]
        self.assertEqual(runtime_class["metadata"]["name"], "gvisor")
        self.assertEqual(runtime_class["handler"], "runsc")

    def test_ring_directory_is_pod_tmpfs_shared_by_both(self):
        rings = self.volumes["ringprof-rings"]
        self.assertEqual(rings["emptyDir"].get("medium"), "Memory")
        app_path = self.mount_path(self.app, "ringprof-rings")
        self.assertEqual(self.mount_path(self.collector, "ringprof-rings"), app_path)
        self.assertEqual(env_of(self.app)["RINGPROF_DIR"]["value"], app_path)
        self.assertEqual(flag_values(self.collector["args"], "ring-dir"), [app_path])

    def test_emitter_delivered_by_init_container(self):
        init = self.init["ringprof-emitter"]
        lib_dir = self.mount_path(init, "ringprof-lib")
        self.assertIn(lib_dir + "/libringprof.so", init["command"])
        app_lib_dir = self.mount_path(self.app, "ringprof-lib")
        self.assertEqual(env_of(self.app)["LD_PRELOAD"]["value"],
                         app_lib_dir + "/libringprof.so")
        self.assertNotIn("LD_PRELOAD", env_of(self.collector))

    def test_same_uid_for_workload_and_sidecar(self):
        security = self.pod["securityContext"]
        for name, c in self.containers.items():
            self.assertNotIn("runAsUser", c.get("securityContext", {}), name)
        self.assertTrue(security["runAsNonRoot"])
        self.assertEqual(security["fsGroup"], security["runAsGroup"])

    def test_secret_keys_exist_and_password_is_a_file(self):
        secret = load("k8s/pyroscope-secret.yaml")[0]
        keys = set(secret["stringData"])
        env = env_of(self.collector)
        for name, e in env.items():
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                self.assertEqual(ref["name"], secret["metadata"]["name"], name)
                self.assertIn(ref["key"], keys, name)
        self.assertNotIn("PYROSCOPE_BASIC_AUTH_PASSWORD", env)
        password_file = env["PYROSCOPE_BASIC_AUTH_PASSWORD_FILE"]["value"]
        secret_dir = self.mount_path(self.collector, "pyroscope-credentials")
        self.assertEqual(os.path.dirname(password_file), secret_dir)
        self.assertIn(os.path.basename(password_file), keys)
        self.assertEqual(self.volumes["pyroscope-credentials"]["secret"]["secretName"],
                         secret["metadata"]["name"])
        self.assertNotIn("PYROSCOPE", str(env_of(self.app)))

    def test_every_container_has_requests_and_limits(self):
        for c in list(self.containers.values()) + list(self.init.values()):
            for kind in ("requests", "limits"):
                for resource in ("cpu", "memory"):
                    self.assertIn(resource, c["resources"][kind], c["name"])


class ComposeTest(unittest.TestCase):
    def setUp(self):
        self.services = load("docker-compose.yaml")[0]["services"]

    def test_gvisor_service_runs_workload_and_collector_in_one_container(self):
        s = self.services["server-gvisor"]
        self.assertEqual(s["runtime"], "runsc")
        self.assertEqual(s["command"][:3], ["ringprof", "run", "--"])

    def test_runc_sidecar_pair_shares_tmpfs_and_pid_namespace(self):
        app, collector = self.services["pipeline"], self.services["pipeline-collector"]
        ring_dir = app["environment"]["RINGPROF_DIR"]
        self.assertIn("rings:" + ring_dir, app["volumes"])
        self.assertIn("rings:" + ring_dir, collector["volumes"])
        self.assertIn("--ring-dir=" + ring_dir, collector["command"])
        self.assertEqual(collector["pid"], "service:pipeline")
        volume = load("docker-compose.yaml")[0]["volumes"]["rings"]
        self.assertEqual(volume["driver_opts"]["type"], "tmpfs")


class AgainstTheCodeTest(unittest.TestCase):
    """Flags, variables and targets named in the kit exist in the code."""

    @classmethod
    def setUpClass(cls):
        cls.help = collector_help()
        cls.kit = ""
        for dirpath, _, files in os.walk(HERE):
            for f in files:
                if f.endswith((".yaml", ".md")) or f.startswith("Dockerfile"):
                    with open(os.path.join(dirpath, f)) as fh:
                        cls.kit += fh.read() + "\n"

    def test_collector_flags_are_documented_by_ringprof_help(self):
        pod = load("k8s/ringprof-gvisor.yaml")[0]["spec"]["template"]["spec"]
        collector = [c for c in pod["containers"] if c["name"] == "ringprof"][0]
        compose = load("docker-compose.yaml")[0]["services"]
        flags = set()
        for arg in collector["args"] + compose["pipeline-collector"]["command"]:
            flags.add(arg.split("=")[0])
        flags |= set(re.findall(r"(--(?:symbols-dir|spool-dir|metrics-port|"
                                r"metrics-address|ring-dir))\b", self.kit))
        # --help spells flags with underscores; both spellings are accepted.
        for flag in sorted(flags):
            self.assertTrue(flag.replace("-", "_").replace("__", "--", 1) in self.help,
                            "%s is not in ringprof --helpfull" % flag)

    def test_collector_environment_is_documented(self):
        documented = self.help
        readme = os.path.join(SOURCE_ROOT, "collector", "shipping", "README.md")
        if os.path.exists(readme):
            with open(readme) as f:
                documented += f.read()
        for name in sorted(set(re.findall(r"\bPYROSCOPE_[A-Z_]+\b", self.kit))):
            self.assertTrue(name in documented,
                            "%s is in neither ringprof --helpfull nor "
                            "collector/shipping/README.md" % name)

    def test_emitter_variables_exist(self):
        with open(os.path.join(SOURCE_ROOT, "emitter", "config.h")) as f:
            config = f.read()
        for name in sorted(set(re.findall(r"\bRINGPROF_[A-Z_]+\b", self.kit))):
            self.assertIn(name, config, "%s is not an emitter variable" % name)



def built_images():
    """{repository: {"dockerfile": ..., "layers": [...], "files": {path in
    the image: label}}} from the oci_image rules of images/BUILD.bazel."""
    with open(os.path.join(SOURCE_ROOT, "examples", "deploy", "images",
                           "BUILD.bazel")) as f:
        build = f.read()
    images = {}
    # Each image's rule, whether written alone or in a comprehension over
    # architectures ("[oci_image(...) for arch, ... ]").
    for rule in re.findall(r"\n\[?oci_image\((.*?)\n\)", build, re.S):
        repository = re.search(r'repository = "([^"]+)"', rule).group(1)
        dockerfile = re.search(r'dockerfile = "//examples/deploy:([^"]+)"',
                               rule).group(1)
        layers_text = re.search(r"layers = \[(.*?)\]", rule, re.S).group(1)
        files_text = re.search(r"files = \{(.*?)\}", rule, re.S).group(1)
        images[repository] = {
            "dockerfile": dockerfile,
            "layers": re.findall(r'"([^"]+)"', layers_text),
            "files": {"/" + path.split("/", 1)[1]: label for label, path in
                      re.findall(r'"([^"]+)": "([^"]+)"', files_text)},
        }
    return images


class ImagesTest(unittest.TestCase):
    """The kit names the images examples/deploy/images builds."""

    @classmethod
    def setUpClass(cls):
        cls.images = built_images()
        with open(os.path.join(SOURCE_ROOT, "VERSION")) as f:
            cls.version = f.read().strip()

    def kit_image_names(self):
        pod = load("k8s/ringprof-gvisor.yaml")[0]["spec"]["template"]["spec"]
        names = [c["image"] for c in pod["containers"] + pod["initContainers"]]
        names += [s["image"] for s in load("docker-compose.yaml")[0][
            "services"].values()]
        return [n for n in names if n.startswith("ringprof-")]

    def test_kit_names_built_images_with_the_version_tag(self):
        names = self.kit_image_names()
        self.assertGreaterEqual(len(names), 4)
        for name in names:
            repository, _, tag = name.partition(":")
            self.assertIn(repository, self.images, name)
            self.assertEqual(tag, self.version,
                             "%s: tag it with VERSION (%s)" % (name, self.version))

    def test_dockerfiles_copy_the_layers_their_rule_stages(self):
        for repository, image in self.images.items():
            with open(os.path.join(HERE, image["dockerfile"])) as f:
                dockerfile = f.read()
            copied = re.findall(r"^COPY (\S+)/ /$", dockerfile, re.M)
            self.assertEqual(copied, image["layers"], image["dockerfile"])
            self.assertNotIn("RUN ", dockerfile, "no shell in the images")

    def test_images_run_as_the_pods_user(self):
        """The images' USER is the manifest's runAsUser:runAsGroup, so a
        pod that leaves them out runs the same."""
        pod = load("k8s/ringprof-gvisor.yaml")[0]["spec"]["template"]["spec"]
        security = pod["securityContext"]
        expected = "%d:%d" % (security["runAsUser"], security["runAsGroup"])
        for image in self.images.values():
            with open(os.path.join(HERE, image["dockerfile"])) as f:
                users = re.findall(r"^USER (\S+)$", f.read(), re.M)
            self.assertEqual(users[-1:], [expected], image["dockerfile"])

    def test_init_container_runs_the_emitter_images_copier(self):
        pod = load("k8s/ringprof-gvisor.yaml")[0]["spec"]["template"]["spec"]
        init = [c for c in pod["initContainers"]
                if c["image"].startswith("ringprof-emitter:")][0]
        files = self.images["ringprof-emitter"]["files"]
        program, source = init["command"][:2]
        self.assertTrue(files.get(program, "").endswith(":copier"), program)
        self.assertEqual(files.get(source), "//emitter:libringprof.so", source)

if __name__ == "__main__":
    unittest.main(verbosity=2)
