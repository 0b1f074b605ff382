#!/usr/bin/python3
"""The deploy kit's Kubernetes pod, run as a real multi-container gVisor pod.

Reads examples/deploy/k8s/ringprof-gvisor.yaml and turns its pod template
into OCI bundles the way containerd and gVisor's runsc shim do, then runs
them with bare rootful `runsc create/start` under a private --root:

  * a pause container (io.kubernetes.cri.container-type=sandbox) that carries
    the pod's mount hints: for each emptyDir of medium Memory,
    dev.gvisor.spec.mount.<volume>.{source,type=tmpfs,share=pod} with the
    volume's host directory as source (what the shim writes when containerd
    passes the dev.gvisor.* pod annotations);
  * the init container, then the app and the collector sidecar
    (container-type=container, sandbox-id=<pause>), with the manifest's
    command/args (or the image's entrypoint), env (values, Secret keys,
    fieldRefs, $(VAR) expansion), volume mounts (a hinted volume as a tmpfs
    mount of the same source, other emptyDirs and the Secret as binds of
    host directories), securityContext (uid, gid, fsGroup, capabilities,
    noNewPrivileges, read-only root) and, with shareProcessNamespace, the pid
    namespace path /proc/<sandbox pid>/ns/pid (containerd's PID mode POD).

The containers run the kit's images as built (//examples/deploy/images,
what `tools/images` writes): each image the manifest names is found among
the image archives by its name and tag, unpacked by umoci into the
container's root filesystem (as containerd unpacks a snapshot), and its
config supplies what the manifest leaves out, as the kubelet and containerd
apply it: the entrypoint and default arguments, the environment, the
working directory and the user (`runAsNonRoot` checked against it). So the
init container copies the emitter image's libringprof.so with the image's
own copier, the sidecar is the collector image's entrypoint, and the app is
the examples image's server. The pause container is the only one not from
the kit: the host's /usr read-only (Kubernetes' own pause image is not
part of it).

What the test changes in the pod, and why: the app's --seconds (bounded
time), the collector's --metrics-port (a free port: the sandbox uses the
host's network, --network=host, instead of a pod network namespace, so the
collector reaches a server on the host's loopback), an --output-dir beside
its spool (local profiles to compare with what the server stored), and the
Secret's server-address (the Pyroscope the test runs). Everything else is
the manifest's: a change to it that breaks profiling fails this test.

--variant=shipped: the manifest as it is, shipping to the real Grafana
  Pyroscope v2.2.1 (tests/pyroscope_server). Asserts both profile types of
  the app with its hot functions symbolized in the local profiles, the
  server holding what they hold (totals, hot functions' self values) under
  the manifest's PYROSCOPE_TAGS, no upload refused, nothing lost, no
  permission or ring-directory warning. Where this machine has no server
  binary (tools/pyroscope/build could not build it), the readback is
  reported SKIPPED and the pod ships to the stand-in receiver
  (tests/pyroscope_receiver) instead, whose profiles are checked alike.
  The other variants ship to the stand-in.
--variant=no-mount-hint: the ring volume without medium: Memory (so no mount
  hint: a host directory served by the gofer). Asserts the collector's one
  warning about the ring directory and its /metrics gauge.
--variant=no-ptracer: the app without RINGPROF_PTRACER_ANY. Asserts the
  collector's one warning that /proc/<pid>/root was refused, and its
  /metrics counter.
--variant=sys-ptrace: the app without RINGPROF_PTRACER_ANY, the collector
  with capabilities.add: [SYS_PTRACE]; reports whether symbols arrive (a
  measurement, not run by the test suite).

Must run as root (rootful `runsc create`); if runsc cannot start a pod, the
test fails and says why.
"""

import argparse
import copy
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import sidecar_e2e_test as e2e  # noqa: E402  (receiver, checks, summaries)

sys.path.insert(0, os.path.dirname(
    e2e.path_of("tests/pyroscope_server/pyroscope_server.py")))
import pyroscope_server  # noqa: E402
import readback  # noqa: E402

sys.path.insert(0, os.path.dirname(
    e2e.path_of("examples/deploy/images/oci_archive.py")))
import oci_archive  # noqa: E402

MANIFEST = "examples/deploy/k8s/ringprof-gvisor.yaml"
SECRET = "examples/deploy/k8s/pyroscope-secret.yaml"
POD_ID = "ringprof-pod"
APP_SECONDS = 6
TIME_BOUND_S = 75.0  # the pod, from the pause container to the checks
SERVICE = "orders-server"
# The collector's local profiles, beside its --spool-dir (the manifest
# mounts that volume writable).
OUTPUT_DIR_NAME = "ringprof-profiles"

# The kit's image archives (//examples/deploy/images).
IMAGE_ARCHIVES = [
    "examples/deploy/images/emitter.tar",
    "examples/deploy/images/collector.tar",
    "examples/deploy/images/examples.tar",
]

# containerd's default capabilities (oci.WithDefaultSpec / CRI).
DEFAULT_CAPS = ["CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER",
                "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID",
                "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
                "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE"]

# The hot functions must be symbolized with a real share of CPU and bytes
# (an unsymbolized profile gives them none). In the sandbox the workers'
# futex waits and wakes are charged as CPU, so ParseJsonRequest's CPU share
# moves between runs: 9.8-22% measured on a loaded machine.
HOT_FUNCTIONS = {"ParseJsonRequest": (0.05, 0.25), "RenderResponse": (0.03, 0.005)}

log = e2e.log
fail = e2e.fail


# --- the manifest ---------------------------------------------------------------

def load_pod(variant):
    with open(e2e.path_of(MANIFEST)) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    deployment = next(d for d in docs if d.get("kind") == "Deployment")
    pod = copy.deepcopy(deployment["spec"]["template"])
    with open(e2e.path_of(SECRET)) as f:
        secret = next(d for d in yaml.safe_load_all(f) if d)
    spec = pod["spec"]
    app = spec["containers"][0]
    collector = next(c for c in spec["containers"]
                     if "ringprof-collector" in c["image"])
    if variant == "no-mount-hint":
        for v in spec["volumes"]:
            if v.get("emptyDir", {}).get("medium") == "Memory":
                del v["emptyDir"]["medium"]
    if variant in ("no-ptracer", "sys-ptrace"):
        app["env"] = [e for e in app.get("env", [])
                      if e["name"] != "RINGPROF_PTRACER_ANY"]
    if variant == "sys-ptrace":
        caps = collector.setdefault("securityContext", {}).setdefault(
            "capabilities", {})
        caps.setdefault("add", []).append("SYS_PTRACE")
    return pod, secret, app, collector


def expand(value, env):
    """Kubernetes' $(VAR) references to earlier variables; $$ escapes."""
    return re.sub(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                  lambda m: "$" if m.group(0) == "$$" else
                  env.get(m.group(1), m.group(0)), value)


def container_env(container, secret_data, namespace):
    env = {}
    for e in container.get("env", []):
        if "value" in e:
            env[e["name"]] = expand(str(e["value"]), env)
            continue
        source = e["valueFrom"]
        if "secretKeyRef" in source:
            ref = source["secretKeyRef"]
            if ref["key"] in secret_data:
                env[e["name"]] = secret_data[ref["key"]]
            elif not ref.get("optional"):
                fail("Secret key %s missing" % ref["key"])
        elif "fieldRef" in source:
            path = source["fieldRef"]["fieldPath"]
            values = {"metadata.namespace": namespace,
                      "metadata.name": "orders-server-test"}
            env[e["name"]] = values[path]
        else:
            fail("env source not handled: %s" % source)
    return env


# --- images -------------------------------------------------------------------

def normalized(reference):
    """An image reference as containerd names it: docker.io/library/NAME:TAG
    for a bare name, :latest when no tag is given."""
    name, digest = reference, ""
    if "@" in name:
        name, digest = name.split("@", 1)
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        name += ":latest"
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif "." not in first and ":" not in first and first != "localhost":
        name = "docker.io/" + name
    return name + ("@" + digest if digest else "")


class Images:
    """The image archives, by the name containerd gives them; each unpacked
    on demand into a container's root filesystem."""

    def __init__(self, scratch):
        self.scratch = scratch
        self.by_name = {}
        for relative in IMAGE_ARCHIVES:
            path = e2e.path_of(relative)
            for image in oci_archive.read_archive(path):
                name = image.descriptor["annotations"]["io.containerd.image.name"]
                self.by_name[name] = (path, image)
        self.layouts = {}

    def get(self, reference):
        name = normalized(reference)
        if name not in self.by_name:
            fail("the manifest's image %s is none of the built images (%s): "
                 "its name or tag differs from examples/deploy/images' "
                 "(tag: the repository's VERSION)" % (
                     reference, ", ".join(sorted(self.by_name))))
        return self.by_name[name][1]

    def unpack(self, reference, rootfs):
        """The image's filesystem into rootfs (umoci raw unpack, owners
        kept: we are root); returns its config."""
        image = self.get(reference)
        path, _ = self.by_name[normalized(reference)]
        layout = self.layouts.get(path)
        if layout is None:
            layout = os.path.join(self.scratch, "images",
                                  os.path.basename(path)[:-len(".tar")])
            os.makedirs(layout)
            with tarfile.open(path) as archive:
                archive.extractall(layout)
            self.layouts[path] = layout
        tag = image.descriptor["annotations"]["org.opencontainers.image.ref.name"]
        os.makedirs(os.path.dirname(rootfs), exist_ok=True)
        result = subprocess.run(["umoci", "raw", "unpack", "--image",
                                 "%s:%s" % (layout, tag), rootfs],
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if result.returncode != 0:
            fail("umoci raw unpack %s failed: %s" % (
                reference, result.stdout.decode(errors="replace")))
        return image.config.get("config", {})


def image_user(config, rootfs):
    """(uid, gid) of the image's USER ("uid", "uid:gid" or names looked up
    in the image's /etc/passwd and /etc/group), None for either unset."""
    user = config.get("User", "")
    if not user:
        return None, None
    name, _, group = user.partition(":")

    def lookup(value, database, gid_of_user):
        if value.isdigit():
            return int(value)
        try:
            with open(os.path.join(rootfs, "etc", database)) as f:
                for line in f:
                    fields = line.rstrip("\n").split(":")
                    if fields[0] == value:
                        return int(fields[3 if gid_of_user else 2])
        except OSError:
            pass
        fail("the image's USER %s is not in its /etc/%s" % (user, database))
        return None

    uid = lookup(name, "passwd", False)
    if group:
        gid = lookup(group, "group", False)
    elif name.isdigit():
        gid = None
    else:
        gid = lookup(name, "passwd", True)
    return uid, gid


def kubernetes_argv(container, config):
    """command/args over the image's Entrypoint/Cmd, as the kubelet does."""
    entrypoint = config.get("Entrypoint") or []
    cmd = config.get("Cmd") or []
    if container.get("command"):
        return container["command"] + container.get("args", [])
    if "args" in container:
        return entrypoint + container["args"]
    return entrypoint + cmd


# --- OCI bundles ------------------------------------------------------------

class Pod:
    def __init__(self, scratch, pod, secret, shm_root):
        self.scratch = scratch
        self.pod = pod
        self.spec = pod["spec"]
        self.secret = secret
        self.uid = "0d1e2f3a-test"
        # Host directories of the volumes, where the kubelet puts them:
        # medium Memory on a tmpfs, the others on disk.
        self.volumes = {}
        self.hints = {}
        for v in self.spec["volumes"]:
            name = v["name"]
            if "emptyDir" in v:
                memory = v["emptyDir"].get("medium") == "Memory"
                base = shm_root if memory else scratch
                path = os.path.join(base, "pods", self.uid, "volumes",
                                    "kubernetes.io~empty-dir", name)
                os.makedirs(path)
                os.chmod(path, 0o777)  # the kubelet makes emptyDirs 0777
                self.chgrp_fs_group(path)
                if memory:
                    self.hints[name] = path
            elif "secret" in v:
                path = os.path.join(scratch, "pods", self.uid, "volumes",
                                    "kubernetes.io~secret", name)
                os.makedirs(path)
                mode = v["secret"].get("defaultMode", 0o644)
                for key, value in secret["stringData"].items():
                    f = os.path.join(path, key)
                    with open(f, "w") as out:
                        out.write(value)
                    os.chmod(f, mode)
                    self.chgrp_fs_group(f)
            else:
                fail("volume kind not handled: %s" % v)
            self.volumes[name] = path

    def chgrp_fs_group(self, path):
        group = self.spec.get("securityContext", {}).get("fsGroup")
        if group is not None:
            os.chown(path, -1, group)

    def bundle(self, name, container, env, sandbox_pid, images):
        """Writes <scratch>/bundles/<name>/{config.json,rootfs}: the
        container's image unpacked, or for the pause container (None) the
        host's /usr."""
        bundle = os.path.join(self.scratch, "bundles", name)
        rootfs = os.path.join(bundle, "rootfs")
        if container is None:
            make_host_rootfs(rootfs)
            mounts = base_mounts() + host_mounts()
            image = {}
        else:
            image = images.unpack(container["image"], rootfs)
            mounts = base_mounts()
        for vm in (container or {}).get("volumeMounts", []):
            source = self.volumes[vm["name"]]
            ro = vm.get("readOnly", False)
            if vm["name"] in self.hints:
                # The shim's ChangeMountType: the bind of the hinted source
                # becomes a tmpfs mount, matched to the hint by source.
                mounts.append({"destination": vm["mountPath"], "type": "tmpfs",
                               "source": source,
                               "options": ["ro" if ro else "rw", "rprivate"]})
            else:
                mounts.append({"destination": vm["mountPath"], "type": "bind",
                               "source": source,
                               "options": ["rbind", "rprivate",
                                           "ro" if ro else "rw"]})
        # The runtime creates each mount point in the (still writable)
        # snapshot before the root is made read-only.
        for m in mounts:
            os.makedirs(rootfs + m["destination"], exist_ok=True)
        if container is None:  # pause
            argv = ["/usr/bin/sleep", "100000"]
        else:
            argv = kubernetes_argv(container, image)
        annotations = {"io.kubernetes.cri.sandbox-id": POD_ID}
        namespaces = [{"type": t} for t in ("mount", "ipc", "uts")]
        if container is None:
            annotations["io.kubernetes.cri.container-type"] = "sandbox"
            for vol, source in self.hints.items():
                prefix = "dev.gvisor.spec.mount.%s." % vol
                annotations[prefix + "source"] = source
                annotations[prefix + "type"] = "tmpfs"
                annotations[prefix + "share"] = "pod"
            namespaces.append({"type": "pid"})
        else:
            annotations["io.kubernetes.cri.container-type"] = "container"
            annotations["io.kubernetes.cri.container-name"] = container["name"]
            pid = {"type": "pid"}
            if self.spec.get("shareProcessNamespace"):
                pid["path"] = "/proc/%d/ns/pid" % sandbox_pid
            namespaces.append(pid)
        config = {
            "ociVersion": "1.0.2",
            "process": self.process(container, argv, env, image, rootfs),
            "root": {"path": "rootfs",
                     "readonly": bool(container and container.get(
                         "securityContext", {}).get("readOnlyRootFilesystem"))},
            "hostname": "orders-server-test",
            "mounts": mounts,
            "annotations": annotations,
            "linux": {"namespaces": namespaces},
        }
        with open(os.path.join(bundle, "config.json"), "w") as f:
            json.dump(config, f, indent=1)
        return bundle

    def process(self, container, argv, env, image, rootfs):
        """The OCI process: the image's USER and Env under the manifest's
        securityContext and env, as containerd's CRI plugin merges them."""
        pod_sc = self.spec.get("securityContext", {})
        sc = (container or {}).get("securityContext", {})
        image_uid, image_gid = image_user(image, rootfs)
        uid = sc.get("runAsUser", pod_sc.get("runAsUser", image_uid))
        gid = sc.get("runAsGroup", pod_sc.get("runAsGroup", image_gid))
        uid = 0 if uid is None else uid
        gid = 0 if gid is None else gid
        if container is not None and sc.get(
                "runAsNonRoot", pod_sc.get("runAsNonRoot")) and uid == 0:
            fail("container %s has runAsNonRoot and image %s will run as "
                 "root (the kubelet refuses to start it)" % (
                     container["name"], container["image"]))
        groups = [g for g in [pod_sc.get("fsGroup")] +
                  pod_sc.get("supplementalGroups", []) if g is not None]
        caps = [] if container is None else list(DEFAULT_CAPS)
        dropped = sc.get("capabilities", {}).get("drop", [])
        if "ALL" in dropped:
            caps = []
        caps = [c for c in caps if c[len("CAP_"):] not in dropped]
        caps += ["CAP_" + c for c in sc.get("capabilities", {}).get("add", [])]
        environment = {}
        for entry in image.get("Env") or []:
            key, _, value = entry.partition("=")
            environment[key] = value
        environment.setdefault("PATH", "/usr/local/sbin:/usr/local/bin:"
                               "/usr/sbin:/usr/bin:/sbin:/bin")
        environment["HOSTNAME"] = "orders-server-test"
        environment.update(env)
        return {
            "terminal": False,
            "user": {"uid": uid, "gid": gid, "additionalGids": groups},
            "args": argv,
            "env": ["%s=%s" % kv for kv in environment.items()],
            "cwd": (container or {}).get("workingDir") or
                   image.get("WorkingDir") or "/",
            # As containerd gives them: no ambient set, so a non-root
            # process keeps nothing across execve but what its file grants.
            "capabilities": {"bounding": caps, "effective": caps,
                             "permitted": caps, "inheritable": [],
                             "ambient": []},
            "noNewPrivileges": sc.get("allowPrivilegeEscalation") is False,
        }


def make_host_rootfs(rootfs):
    """The pause container's root: mount points for the host's /usr/* and
    /etc (read-only binds, host_mounts) and merged-/usr symlinks."""
    for d in ("proc", "dev", "sys", "etc", "usr/bin", "usr/lib", "usr/lib64",
              "usr/share", "usr/sbin"):
        os.makedirs(os.path.join(rootfs, d), exist_ok=True)
    for link, target in (("bin", "usr/bin"), ("lib", "usr/lib"),
                         ("lib64", "usr/lib64"), ("sbin", "usr/sbin")):
        os.symlink(target, os.path.join(rootfs, link))


def base_mounts():
    """What containerd mounts in every container."""
    return [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "ro"]},
    ]


def host_mounts():
    return [{"destination": d, "type": "bind", "source": d,
             "options": ["rbind", "ro"]}
            for d in ("/usr/bin", "/usr/lib", "/usr/lib64", "/usr/share",
                      "/usr/sbin", "/etc")]


# --- runsc --------------------------------------------------------------------

class Runsc:
    def __init__(self, binary, platform, state_dir, debug_dir):
        self.base = [binary, "--root=" + state_dir, "--network=host",
                     "--platform=" + platform,
                     "--debug-log=" + debug_dir + "/"]
        self.debug_dir = debug_dir

    def run(self, *args, stdout=None, timeout=60, check=True):
        cmd = self.base + list(args)
        result = subprocess.run(cmd, stdout=stdout or subprocess.PIPE,
                                stderr=subprocess.STDOUT, timeout=timeout)
        if check and result.returncode != 0:
            out = "" if stdout else result.stdout.decode(errors="replace")
            fail("%s failed (exit %d): %s\n%s" % (
                " ".join(args[:2]), result.returncode, out, self.debug_tail()))
        return result

    def debug_tail(self):
        tail = ""
        for f in sorted(os.listdir(self.debug_dir))[-4:]:
            with open(os.path.join(self.debug_dir, f), errors="replace") as fh:
                tail += "--- %s\n%s" % (f, "".join(fh.readlines()[-8:]))
        return tail

    def start(self, cid, bundle, log_path):
        """create + start; the container's stdio goes to log_path (the root
        container's through create, a subcontainer's through start)."""
        with open(log_path, "wb") as out:
            self.run("create", "--bundle", bundle, cid, stdout=out)
            self.run("start", cid, stdout=out)

    def wait(self, cid, timeout):
        result = self.run("wait", cid, timeout=timeout)
        return json.loads(result.stdout.decode()).get("exitStatus")

    def sandbox_pid(self):
        return json.loads(self.run("state", POD_ID).stdout.decode())["pid"]


def metrics(port):
    try:
        with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port,
                                    timeout=5) as r:
            return r.read().decode()
    except OSError:
        return ""


def wait_until(what, predicate, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    fail("timed out after %.0f s waiting for %s" % (timeout_s, what))


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def with_flag(args, name, value):
    prefix = "--%s=" % name
    return [prefix + value if a.startswith(prefix) else a for a in args]


def flag_value(args, name):
    prefix = "--%s=" % name
    return next((a[len(prefix):] for a in args if a.startswith(prefix)), None)


def host_path(pod, container, inside):
    """Where `inside` (a path in `container`) is on the host: under one of
    its writable volume mounts that is a host directory."""
    for vm in container.get("volumeMounts", []):
        mount = vm["mountPath"].rstrip("/")
        if (not vm.get("readOnly") and vm["name"] not in pod.hints and
                inside.startswith(mount + "/")):
            return pod.volumes[vm["name"]] + inside[len(mount):]
    fail("%s is on no writable host volume of the collector" % inside)
    return None


# --- the test ---------------------------------------------------------------

def run_pod(args, scratch, server_url):
    pod_spec, secret, app, collector = load_pod(args.variant)
    secret = copy.deepcopy(secret)
    secret["stringData"]["server-address"] = server_url
    shm_root = tempfile.mkdtemp(prefix="ringprof-pod.", dir="/dev/shm")
    state_dir = tempfile.mkdtemp(prefix="ringprof-runsc.", dir="/tmp")
    debug_dir = os.path.join(scratch, "runsc-debug")
    os.makedirs(debug_dir)
    runsc = Runsc(args.runsc, args.platform, state_dir, debug_dir)
    pod = Pod(scratch, pod_spec, secret, shm_root)
    images = Images(scratch)
    port = free_port()
    namespace = "default"
    started = []
    out = {}
    try:
        runsc.start(POD_ID, pod.bundle("pause", None, {}, 0, images),
                    os.path.join(scratch, "pause.log"))
        started.append(POD_ID)
        spid = runsc.sandbox_pid()
        for init in pod.spec.get("initContainers", []):
            env = container_env(init, secret["stringData"], namespace)
            cid = "init-" + init["name"]
            runsc.start(cid, pod.bundle(cid, init, env, spid, images),
                        os.path.join(scratch, cid + ".log"))
            started.append(cid)
            status = runsc.wait(cid, 60)
            if status != 0:
                with open(os.path.join(scratch, cid + ".log")) as f:
                    fail("init container %s exited %s:\n%s" % (
                        init["name"], status, f.read()))
            if args.delete_init:
                runsc.run("delete", cid)
                started.remove(cid)
        spool = flag_value(collector["args"], "spool-dir") or "/var/spool/x"
        output_dir = os.path.join(os.path.dirname(spool), OUTPUT_DIR_NAME)
        out["local_dir"] = host_path(pod, collector, output_dir)
        collector = dict(collector, args=with_flag(
            collector["args"], "metrics-port", str(port)) +
            ["--output-dir=" + output_dir])
        coll_log = os.path.join(scratch, "collector.log")
        runsc.start("collector", pod.bundle(
            "collector", collector,
            container_env(collector, secret["stringData"], namespace), spid,
            images), coll_log)
        started.append("collector")
        # A readiness probe's view: the sidecar serves /metrics.
        wait_until("the collector's /metrics", lambda: metrics(port), 30)
        app = dict(app, command=with_flag(app["command"], "seconds",
                                          str(APP_SECONDS)))
        runsc.start("app", pod.bundle(
            "app", app, container_env(app, secret["stringData"], namespace),
            spid, images), os.path.join(scratch, "app.log"))
        started.append("app")
        out["app_exit"] = runsc.wait("app", APP_SECONDS + 40)
        # Every ring followed to its end, then the counters as an operator
        # would read them, then pod shutdown: SIGTERM to the sidecar.
        def drained():
            text = metrics(port)
            opened = e2e.metric_values(text, "ringprof_ring_files_opened_total")
            still = e2e.metric_values(text, "ringprof_ring_files_open")
            return text if opened and still == 0 else None
        out["metrics"] = wait_until("the collector to drain the rings",
                                    drained, 30)
        runsc.run("kill", "collector", "TERM")
        out["collector_exit"] = runsc.wait("collector", 30)
        with open(coll_log, errors="replace") as f:
            out["collector_log"] = f.read()
        with open(os.path.join(scratch, "app.log"), errors="replace") as f:
            out["app_log"] = f.read()
    finally:
        for cid in reversed(started):
            runsc.run("delete", "-force", cid, check=False)
        shutil.rmtree(state_dir, ignore_errors=True)
        shutil.rmtree(shm_root, ignore_errors=True)
    return out


def check(args, out, scratch, receiver, server):
    checks = e2e.Checks()
    log("--- collector log ---\n%s--- app log (last 10 lines) ---\n%s---" % (
        out["collector_log"], "\n".join(out["app_log"].splitlines()[-10:])))
    checks.expect(out["app_exit"] == 0, "app exited 0 (%s)" % out["app_exit"])
    checks.expect(out["collector_exit"] == 0,
                  "collector drained and exited 0 on SIGTERM (%s)"
                  % out["collector_exit"])
    text, clog = out["metrics"], out["collector_log"]
    denied = e2e.metric_values(text, "ringprof_symbolizer_roots_denied_total")
    file_server = e2e.metric_values(text, "ringprof_ring_dir_file_server")
    root_warnings = len(re.findall(r"warning: pid \d+: .*root.*may not read",
                                   clog))
    dir_warnings = clog.count("not a tmpfs")
    if args.variant == "no-ptracer":
        checks.expect(root_warnings == 1, "one warning that /proc/<pid>/root "
                      "was refused (%d)" % root_warnings)
        checks.expect((denied or 0) >= 1, "ringprof_symbolizer_roots_denied_total"
                      " >= 1 (%s)" % denied)
        return checks
    if args.variant == "no-mount-hint":
        checks.expect(dir_warnings == 1, "one warning that the ring directory "
                      "is not a tmpfs (%d)" % dir_warnings)
        checks.expect(file_server == 1, "ringprof_ring_dir_file_server 1 (%s)"
                      % file_server)
        return checks
    checks.expect(root_warnings == 0 and (denied or 0) == 0,
                  "no /proc/<pid>/root refused (%d warnings, counter %s)"
                  % (root_warnings, denied))
    if args.variant == "sys-ptrace":
        return checks
    checks.expect(dir_warnings == 0 and file_server == 0,
                  "the ring directory is the pod's tmpfs (gauge %s)" % file_server)
    lost, how = e2e.lost_records(clog, text, 1)
    checks.expect(lost == 0, "nothing lost in the ring (%s; %s)" % (lost, how))
    share = e2e.emitter_lost_share(text)
    checks.expect(share is not None and share <= 0.01,
                  "the emitter lost at most 1%% of its samples: %s" % share)
    service = e2e.Workload(SERVICE, None, None, HOT_FUNCTIONS)
    log("local profiles (%s):" % out["local_dir"])
    e2e.check_profiles(checks, [service],
                       e2e.local_profiles(out["local_dir"], scratch))
    if server is not None:
        check_server(checks, out, server)
    else:
        check_receiver(checks, receiver, service)
    return checks


def check_receiver(checks, receiver, service):
    """What the stand-in receiver got: accepted, tagged, symbolized."""
    accepted, rejected = receiver.get("accepted"), receiver.get("rejected")
    checks.expect(not rejected, "no upload rejected (%d rejected, %d accepted)"
                  % (len(rejected), len(accepted)), json.dumps(rejected[:3]))
    by_service = {}
    for entry in accepted:
        labels = entry.get("labels", {})
        by_service.setdefault(labels.get("service_name"), {}).setdefault(
            labels.get("__name__"), []).append(entry["summary"])
    tagged = [e for e in accepted
              if e.get("labels", {}).get("runtime") == "gvisor" and
              e["labels"].get("namespace") == "default"]
    checks.expect(accepted and len(tagged) == len(accepted),
                  "the manifest's PYROSCOPE_TAGS (namespace, runtime) on every "
                  "series (%d of %d)" % (len(tagged), len(accepted)))
    log("received profiles:")
    e2e.check_profiles(checks, [service], by_service)


def check_server(checks, out, server):
    """What the real server stored: the local profiles' totals and hot
    functions, under the manifest's PYROSCOPE_TAGS (series labels)."""
    refused = sum(e2e.metric_values(out["metrics"], name) or 0 for name in (
        "ringprof_profiles_failed_total", "ringprof_profiles_invalid_total"))
    checks.expect(refused == 0, "no profile refused or invalid (%d)" % refused)
    log("readback from Grafana Pyroscope %s:" % pyroscope_server.VERSION)
    failures = readback.compare_run(
        server.query, out["local_dir"], SERVICE,
        selector_extra=', namespace="default", runtime="gvisor"')
    checks.expect(not failures, "the server holds what the local profiles "
                  "hold, under namespace=default, runtime=gvisor (%d of the "
                  "readback's checks failed)" % len(failures),
                  "\n".join(failures))


def real_server(args, scratch):
    """The real Pyroscope for the shipped pod, started; None (the readback
    reported skipped) where this machine has no server binary, or for the
    variants that check warnings only."""
    if args.variant != "shipped":
        return None
    try:
        pyroscope_server.binary_path()
    except pyroscope_server.ServerError as e:
        log("SKIPPED: the readback from a real Grafana Pyroscope (%s); "
            "shipping to the stand-in receiver instead" % e)
        return None
    server = pyroscope_server.PyroscopeServer(
        os.path.join(scratch, "pyroscope"))
    try:
        return server.start()
    except pyroscope_server.ServerError as e:
        fail(str(e))
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runsc", default=e2e.RUNSC)
    ap.add_argument("--platform", default="systrap")
    ap.add_argument("--variant", default="shipped",
                    choices=["shipped", "no-mount-hint", "no-ptracer",
                             "sys-ptrace"])
    # runsc 20221219 gives the first container that names the pod's pid
    # namespace a new child namespace (no fixPidns), which dies with it: once
    # the init container has exited, every later container of the pod fails
    # with "creating process: out of memory", unless the exited init
    # container is deleted first. The kubelet keeps it, so a pod with init
    # containers and shareProcessNamespace does not start on that release.
    ap.add_argument("--delete-init", action="store_true",
                    help="delete each init container once it has exited")
    args = ap.parse_args()
    if os.geteuid() != 0:
        fail("must run as root: runsc create (a multi-container pod) is "
             "rootful only")
    if shutil.which(args.runsc) is None:
        fail("%s not found (run tools/setup)" % args.runsc)
    keep = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR")
    scratch = tempfile.mkdtemp(prefix="pod_test.", dir=os.environ.get("TEST_TMPDIR"))
    server = real_server(args, scratch)
    receiver = None if server else e2e.Receiver(scratch)
    try:
        version = subprocess.run([args.runsc, "--version"], capture_output=True,
                                 text=True).stdout.splitlines()[0]
        log("%s, platform %s, variant %s, shipping to %s" % (
            version, args.platform, args.variant,
            "Grafana Pyroscope " + pyroscope_server.VERSION if server
            else "the stand-in receiver"))
        started = time.monotonic()
        out = run_pod(args, scratch, (server or receiver).url)
        total = time.monotonic() - started
        checks = check(args, out, scratch, receiver, server)
        checks.expect(total < TIME_BOUND_S, "the pod ran within %.0f s (%.1f s)"
                      % (TIME_BOUND_S, total))
        if checks.failures:
            log("%d check(s) failed; outputs in %s" % (checks.failures,
                                                       keep or scratch))
            return 1
        log("PASS: gVisor pod (%s)" % args.variant)
        return 0
    finally:
        if receiver:
            receiver.stop()
        if server:
            server.stop()
        if keep:
            for name in ("collector.log", "app.log", "pause.log",
                         "receiver.log", "pyroscope/pyroscope.log",
                         "bundles/app/config.json",
                         "bundles/collector/config.json",
                         "bundles/pause/config.json"):
                src = os.path.join(scratch, name)
                if os.path.exists(src):
                    shutil.copy(src, os.path.join(keep, name.replace("/", "_")))


if __name__ == "__main__":
    sys.exit(main())
