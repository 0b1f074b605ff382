#!/usr/bin/python3
"""Builds one image of the deploy kit with buildah, reproducibly.

Run by the `oci_image` rule (image.bzl), which passes everything below; see
README.md here for what each image holds and why.

1. Stages the build context: one directory per layer (`--layer`, lowest
   first), each holding the files the Dockerfile COPYs from it:
   - the project's files (`--file LAYER/PATH=SRC`), ELF files stripped of
     their debug sections (`--strip`; the symbol table stays);
   - Debian's shared libraries that the layer's ELF files need
     (`--resolve LAYER`) and the extra libraries named
     (`--library LAYER=SONAME`, e.g. what the collector dlopens), found and
     verified by debian_files.py in the image architecture's multiarch
     directory, each package recorded in status.d with its copyright;
     a library the layers below (or the base image) hold is left out;
   - the separate debug files of the libraries named (`--debug-file
     LAYER=SONAME`), from Debian's -dbg packages (/usr/lib/debug/.build-id),
     where the collector looks inside the workload's root;
   - with `--system-files LAYER`: the merged-/usr symlinks, /etc/passwd and
     /etc/group (root and ringprof, uid/gid 10001), /etc/nsswitch.conf,
     /etc/os-release, the CA bundle built from Debian's ca-certificates
     (what update-ca-certificates writes), /tmp.
2. `buildah build --timestamp EPOCH --layers` of the Dockerfile in that
   context, in a private, temporary storage (vfs): every file in every
   layer gets the same mtime and the config no build time, so the same
   inputs give the same layer and config digests. `--base ARCHIVE` is
   loaded first and tagged `--base-name:VERSION`, for a Dockerfile that
   builds FROM another image of the kit.
3. `buildah push` to an OCI layout, written out as an archive by
   oci_archive.py (Docker's manifest.json beside the OCI index).

Needs root (buildah's storage), buildah and readelf; objcopy with --strip.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import debian_files  # noqa: E402
import oci_archive  # noqa: E402

# The unprivileged user of the collector and examples images, also the
# manifest's runAsUser (examples/deploy/k8s).
USER_ID = 10001
PASSWD = ("root:x:0:0:root:/root:/usr/sbin/nologin\n"
          "ringprof:x:%d:%d:ringprof:/nonexistent:/usr/sbin/nologin\n"
          % (USER_ID, USER_ID))
GROUP = "root:x:0:\nringprof:x:%d:\n" % USER_ID
# glibc's lookups without NSS modules beyond libc's own files and dns.
NSSWITCH = ("passwd: files\ngroup: files\nshadow: files\n"
            "hosts: files dns\nnetworks: files\nprotocols: files\n"
            "services: files\n")
CA_DIR = "/usr/share/ca-certificates"
CA_BUNDLE = "etc/ssl/certs/ca-certificates.crt"


def fail(message):
    print("build_image: " + message, file=sys.stderr)
    sys.exit(1)


class Context:
    """The build context: <dir>/<layer>/<path in the image>."""

    def __init__(self, directory, arch, packages):
        self.directory = directory
        self.arch = arch
        self.packages = packages
        self.provided = set()  # image paths ("usr/lib/x") below this layer
        self.recorded = set()  # packages recorded in status.d below

    def path(self, layer, inside):
        return os.path.join(self.directory, layer, inside.lstrip("/"))

    def write(self, layer, inside, data, mode=0o644):
        dest = self.path(layer, inside)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        with open(dest, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
        os.chmod(dest, mode)

    def symlink(self, layer, inside, target):
        dest = self.path(layer, inside)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        if not os.path.lexists(dest):
            os.symlink(target, dest)

    def add_project_file(self, layer, inside, source, strip, objcopy):
        dest = self.path(layer, inside)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        elf = debian_files.is_elf(source)
        if strip and elf:
            result = subprocess.run([objcopy, "--strip-debug", source, dest],
                                    stderr=subprocess.PIPE)
            if result.returncode != 0:
                fail("%s --strip-debug %s: %s" % (
                    objcopy, source, result.stderr.decode().strip()))
        else:
            shutil.copyfile(source, dest)
        os.chmod(dest, 0o755 if elf or os.access(source, os.X_OK) else 0o644)

    def add_debian_path(self, layer, host_path, packages_used):
        """Copies a host file of a Debian package into the layer under its
        merged-/usr path, symlinks as symlinks (and their targets)."""
        inside = debian_files.merged(host_path)
        if inside.lstrip("/") in self.provided:
            return
        if os.path.lexists(self.path(layer, inside)):
            return
        if os.path.islink(host_path):
            target = os.readlink(host_path)
            self.symlink(layer, inside, target)
            resolved = target if target.startswith("/") else os.path.join(
                os.path.dirname(host_path), target)
            self.add_debian_path(layer, os.path.normpath(resolved),
                                 packages_used)
            packages_used.add(self.packages.owner_of(host_path))
            return
        package = self.packages.verify(host_path)
        packages_used.add(package)
        if debian_files.is_elf(host_path) and \
                debian_files.elf_arch(host_path) != self.arch:
            fail("%s is %s, the image is %s" % (
                host_path, debian_files.elf_arch(host_path), self.arch))
        dest = self.path(layer, inside)
        os.makedirs(os.path.dirname(dest), exist_ok=True)
        shutil.copyfile(host_path, dest)
        os.chmod(dest, os.stat(host_path).st_mode & 0o7777)

    def record_packages(self, layer, packages_used):
        """status.d paragraph and copyright of each new package."""
        for package in sorted(packages_used, key=lambda p: p.name):
            if package.name in self.recorded:
                continue
            self.recorded.add(package.name)
            self.write(layer, "/var/lib/dpkg/status.d/" + package.name,
                       package.paragraph)
            copyright = "/usr/share/doc/%s/copyright" % package.name
            if os.path.exists(copyright):
                with open(copyright, "rb") as f:
                    self.write(layer, copyright, f.read())

    def add_system_files(self, layer, packages_used):
        for link in debian_files.MERGED:
            if link in ("lib32", "libx32"):
                continue
            self.symlink(layer, "/" + link, "usr/" + link)
            os.makedirs(self.path(layer, "/usr/" + link), exist_ok=True)
        self.write(layer, "/etc/passwd", PASSWD)
        self.write(layer, "/etc/group", GROUP)
        self.write(layer, "/etc/nsswitch.conf", NSSWITCH)
        os_release = "/usr/lib/os-release"
        self.add_debian_path(layer, os_release, packages_used)
        self.symlink(layer, "/etc/os-release", "../usr/lib/os-release")
        # update-ca-certificates: every certificate ca-certificates ships
        # (its default selection), concatenated in name order.
        bundle = b""
        for directory, _, names in sorted(os.walk(CA_DIR)):
            for name in sorted(names):
                if name.endswith(".crt"):
                    path = os.path.join(directory, name)
                    packages_used.add(self.packages.verify(path))
                    with open(path, "rb") as f:
                        pem = f.read()
                    bundle += pem if pem.endswith(b"\n") else pem + b"\n"
        if not bundle:
            fail("no certificates in %s (install ca-certificates)" % CA_DIR)
        self.write(layer, "/" + CA_BUNDLE, bundle)
        for directory, mode in (("/tmp", 0o1777), ("/root", 0o700)):
            os.makedirs(self.path(layer, directory), exist_ok=True)
            os.chmod(self.path(layer, directory), mode)

    def finish_layer(self, layer):
        root = os.path.join(self.directory, layer)
        for directory, dirs, files in os.walk(root):
            for name in dirs + files:
                self.provided.add(os.path.relpath(os.path.join(directory, name),
                                                  root))


def run(cmd, what):
    result = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        fail("%s failed (exit %d): %s\n%s" % (
            what, result.returncode, " ".join(cmd),
            result.stdout.decode(errors="replace")[-3000:]))
    return result.stdout.decode(errors="replace")


def pairs(values, what):
    result = []
    for value in values:
        key, sep, rest = value.partition("=")
        if not sep:
            fail("%s %s: expected KEY=VALUE" % (what, value))
        result.append((key, rest))
    return result


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dockerfile", required=True)
    ap.add_argument("--repository", required=True)
    ap.add_argument("--version-file", required=True,
                    help="the file holding the version (the images' tag)")
    ap.add_argument("--arch", required=True, choices=sorted(debian_files.TRIPLETS))
    ap.add_argument("--epoch", type=int, default=0)
    ap.add_argument("--layer", action="append", default=[])
    ap.add_argument("--file", action="append", default=[],
                    help="LAYER/PATH=SRC")
    ap.add_argument("--strip", action="store_true")
    ap.add_argument("--objcopy", default="objcopy")
    ap.add_argument("--library", action="append", default=[],
                    help="LAYER=SONAME")
    ap.add_argument("--debug-file", action="append", default=[],
                    help="LAYER=SONAME: the library's separate debug file")
    ap.add_argument("--resolve", action="append", default=[])
    ap.add_argument("--system-files")
    ap.add_argument("--base")
    ap.add_argument("--base-name")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    if os.geteuid() != 0:
        fail("needs root: buildah keeps its storage as root")
    if shutil.which("buildah") is None:
        fail("buildah is not installed (run tools/setup)")
    with open(args.version_file) as f:
        args.version = f.read().strip()

    work = tempfile.mkdtemp(prefix="ringprof-image.")
    try:
        build(args, work)
    finally:
        # buildah's vfs storage holds read-only directories: make them
        # removable first.
        subprocess.run(["chmod", "-R", "u+w", work], stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


def build(args, work):
    context = stage(args, work)
    build_with_buildah(args, work, context)


def stage(args, work):
    """The build context in <work>/context; returns its path."""
    packages = debian_files.Packages()
    context = Context(os.path.join(work, "context"), args.arch, packages)
    base_images = []
    if args.base:
        base_images = oci_archive.read_archive(args.base)
        context.provided |= set(base_images[0].files())
        for info in base_images[0].files():
            if info.startswith("var/lib/dpkg/status.d/"):
                context.recorded.add(os.path.basename(info))
    files = {}
    for layer_path, source in pairs(args.file, "--file"):
        layer, _, inside = layer_path.partition("/")
        files.setdefault(layer, []).append(("/" + inside, source))
    libraries = {}
    for layer, soname in pairs(args.library, "--library"):
        libraries.setdefault(layer, []).append(soname)
    debug_libraries = {}
    for layer, soname in pairs(args.debug_file, "--debug-file"):
        debug_libraries.setdefault(layer, []).append(soname)
    for layer in args.layer:
        os.makedirs(os.path.join(context.directory, layer), exist_ok=True)
        used = set()
        if layer == args.system_files:
            context.add_system_files(layer, used)
        elf_files = []
        for inside, source in files.get(layer, []):
            context.add_project_file(layer, inside, source, args.strip,
                                     args.objcopy)
            dest = context.path(layer, inside)
            if debian_files.is_elf(dest):
                if debian_files.elf_arch(dest) != args.arch:
                    fail("%s is %s, the image is %s" % (
                        source, debian_files.elf_arch(dest), args.arch))
                elf_files.append(dest)
        if layer in args.resolve or libraries.get(layer):
            try:
                for host_path in debian_files.library_closure(
                        elf_files if layer in args.resolve else [],
                        libraries.get(layer, []), args.arch):
                    context.add_debian_path(layer, host_path, used)
            except debian_files.Error as e:
                fail(str(e))
        for soname in debug_libraries.get(layer, []):
            try:
                library = debian_files.find_library(soname, args.arch)
                debug = debian_files.debug_file(library)
            except debian_files.Error as e:
                fail(str(e))
            if debug is None:
                fail("no debug file for %s (%s) in /usr/lib/debug/.build-id: "
                     "install its -dbg package (libc6-dbg for glibc's)" % (
                         library, args.arch))
            context.add_debian_path(layer, debug, used)
        context.record_packages(layer, used)
        context.finish_layer(layer)
    for directory, dirs, names in os.walk(context.directory):
        for name in dirs + names:
            os.utime(os.path.join(directory, name), (args.epoch, args.epoch),
                     follow_symlinks=False)
    return context.directory


def build_with_buildah(args, work, context_dir):
    storage = ["buildah", "--root", os.path.join(work, "storage"),
               "--runroot", os.path.join(work, "run"),
               "--storage-driver", "vfs"]
    policy = os.path.join(work, "policy.json")
    with open(policy, "w") as f:
        f.write('{"default": [{"type": "insecureAcceptAnything"}]}\n')
    registries = os.path.join(work, "registries.conf")
    with open(registries, "w") as f:
        f.write("unqualified-search-registries = []\n")
    os.environ["CONTAINERS_REGISTRIES_CONF"] = registries
    os.environ["HOME"] = work
    name = "localhost/%s:%s" % (args.repository, args.version)
    if args.base:
        image_id = run(storage + ["pull", "--quiet", "--signature-policy",
                                  policy, "oci-archive:" + args.base],
                       "loading the base image").split()[-1]
        run(storage + ["tag", image_id, "localhost/%s:%s" % (
            args.base_name, args.version)], "tagging the base image")
    run(storage + ["build", "--quiet", "--signature-policy", policy,
                   "--timestamp", str(args.epoch), "--layers", "--pull=never",
                   "--platform", "linux/" + args.arch,
                   "--build-arg", "VERSION=" + args.version,
                   "-f", args.dockerfile, "-t", name, context_dir],
        "buildah build")
    layout = os.path.join(work, "layout")
    run(storage + ["push", "--quiet", "--signature-policy", policy, name,
                   "oci:" + layout], "buildah push")
    images = oci_archive.read_layout(layout)
    if len(images) != 1:
        fail("buildah pushed %d images, expected one" % len(images))
    oci_archive.write_archive(args.out, images, args.repository, args.version,
                              args.epoch)


if __name__ == "__main__":
    main()
