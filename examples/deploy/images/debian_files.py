"""Files of the machine's Debian packages, for a distroless image.

An image here has no package manager: its runtime files are copied from
the Debian packages installed on the building machine, each checked
against the package's own checksum (so a locally changed file is refused),
and every package that contributes a file is recorded the way distroless
images record theirs, so that image scanners find them:

  /var/lib/dpkg/status.d/<package>   the package's dpkg status paragraph
  /usr/share/doc/<package>/copyright its licence

`Packages` indexes the dpkg database once; `library_closure` finds the
shared libraries an ELF file needs, as the dynamic loader would, in the
multiarch directory of one architecture (x86_64-linux-gnu,
aarch64-linux-gnu: Debian's multiarch packages give an image of another
architecture its libraries).

Paths are compared in merged-/usr form (/lib/x -> /usr/lib/x): Debian 12's
packages list /lib/..., its systems and these images have /lib -> usr/lib.
"""

import glob
import hashlib
import os
import re
import subprocess

DPKG = "/var/lib/dpkg"
MERGED = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")
# Debian architecture -> multiarch triplet.
TRIPLETS = {"amd64": "x86_64-linux-gnu", "arm64": "aarch64-linux-gnu"}


class Error(Exception):
    pass


def merged(path):
    """/lib/x -> /usr/lib/x, and so on for each merged directory."""
    parts = path.lstrip("/").split("/", 1)
    if parts[0] in MERGED:
        return "/usr/" + path.lstrip("/")
    return "/" + path.lstrip("/")


class Package:
    def __init__(self, name, arch, paragraph):
        self.name = name  # without :arch
        self.arch = arch
        self.paragraph = paragraph  # dpkg status paragraph, as text
        self.md5sums = {}  # merged path -> md5

    @property
    def version(self):
        m = re.search(r"^Version: (.*)$", self.paragraph, re.M)
        return m.group(1) if m else ""


class Packages:
    """The installed packages: which one owns a path, and its checksums."""

    def __init__(self, root=DPKG):
        self.root = root
        self.by_key = {}  # "name:arch" -> Package
        self.by_name = {}  # "name" -> Package (an Architecture: all one)
        with open(os.path.join(root, "status"), encoding="utf-8") as f:
            for paragraph in f.read().split("\n\n"):
                fields = dict(re.findall(r"^([A-Za-z-]+): (.*)$", paragraph,
                                         re.M))
                if "install ok installed" not in fields.get("Status", ""):
                    continue
                key = "%s:%s" % (fields["Package"], fields["Architecture"])
                package = Package(fields["Package"], fields["Architecture"],
                                  paragraph.strip() + "\n")
                self.by_key[key] = package
                self.by_name.setdefault(package.name, package)
        self.owner = {}  # merged path -> Package
        for list_file in glob.glob(os.path.join(root, "info", "*.list")):
            package = self._package_of(os.path.basename(list_file)[:-5])
            if package is None:
                continue
            with open(list_file, encoding="utf-8", errors="replace") as f:
                for line in f:
                    self.owner.setdefault(merged(line.rstrip("\n")), package)

    def _package_of(self, name):
        """A .list file's stem ("libc6:amd64", "ca-certificates") -> Package."""
        if ":" in name:
            return self.by_key.get(name)
        return self.by_name.get(name)

    def owner_of(self, path):
        package = self.owner.get(merged(path))
        if package is None:
            raise Error("%s belongs to no installed Debian package" % path)
        return package

    def verify(self, path):
        """The package owning `path`, once its bytes are checked against the
        package's md5sums (conffiles have none and are refused too)."""
        package = self.owner_of(path)
        if not package.md5sums:
            suffix = package.name if package.arch == "all" else \
                "%s:%s" % (package.name, package.arch)
            sums = os.path.join(self.root, "info", suffix + ".md5sums")
            if not os.path.exists(sums):
                sums = os.path.join(self.root, "info", package.name + ".md5sums")
            with open(sums, encoding="utf-8", errors="replace") as f:
                for line in f:
                    digest, name = line.rstrip("\n").split("  ", 1)
                    package.md5sums[merged(name)] = digest
        expected = package.md5sums.get(merged(path))
        if expected is None:
            raise Error("%s: no checksum in %s's md5sums" % (path, package.name))
        with open(path, "rb") as f:
            actual = hashlib.md5(f.read()).hexdigest()
        if actual != expected:
            raise Error("%s differs from what Debian's %s %s installed "
                        "(dpkg --verify %s): reinstall the package" % (
                            path, package.name, package.version, package.name))
        return package


# --- ELF ---------------------------------------------------------------------

def _readelf(args, path):
    result = subprocess.run(["readelf", "-W"] + args + [path],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={"LC_ALL": "C", "PATH": os.environ.get(
                                "PATH", "/usr/bin:/bin")})
    if result.returncode != 0:
        raise Error("readelf %s %s: %s" % (" ".join(args), path,
                                            result.stderr.decode().strip()))
    return result.stdout.decode()


def is_elf(path):
    with open(path, "rb") as f:
        return f.read(4) == b"\x7fELF"


def needed(path):
    """DT_NEEDED entries of an ELF file, in order."""
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                      _readelf(["-d"], path))


def interpreter(path):
    """PT_INTERP of an executable, or None."""
    m = re.search(r"Requesting program interpreter: ([^\]]+)\]",
                  _readelf(["-l"], path))
    return m.group(1) if m else None


def build_id(path):
    """The GNU build-id of an ELF file (lower-case hex), or None."""
    m = re.search(r"Build ID: ([0-9a-f]+)", _readelf(["-n"], path))
    return m.group(1) if m else None


def debug_file(path):
    """The separate debug file a Debian -dbg/-dbgsym package installs for
    the ELF file `path` (/usr/lib/debug/.build-id/ab/cdef....debug), or
    None when none is installed."""
    hex_id = build_id(path)
    if not hex_id:
        return None
    candidate = "/usr/lib/debug/.build-id/%s/%s.debug" % (hex_id[:2], hex_id[2:])
    return candidate if os.path.exists(candidate) else None


def find_library(soname, arch):
    """The host path of a library of `arch` by SONAME."""
    for directory in ("/usr/lib/" + TRIPLETS[arch], "/usr/lib"):
        candidate = os.path.join(directory, soname)
        if os.path.exists(candidate):
            return candidate
    raise Error("%s (%s) is not installed: install its Debian package for %s"
                % (soname, arch, arch))


def elf_arch(path):
    machine = re.search(r"Machine:\s+(.*)", _readelf(["-h"], path)).group(1)
    if "X86-64" in machine:
        return "amd64"
    if "AArch64" in machine:
        return "arm64"
    raise Error("%s: unsupported machine %s" % (path, machine))


def library_closure(elf_paths, sonames, arch):
    """Host paths of every shared library (by SONAME) that `elf_paths` and
    the libraries `sonames` need, transitively, plus the ELF interpreters,
    found in /usr/lib/<triplet> as the loader finds them there."""
    found = {}  # soname -> host path
    paths = []
    pending = list(sonames)
    for path in elf_paths:
        pending.extend(needed(path))
        interp = interpreter(path)
        if interp and interp not in paths:
            paths.append(interp)
    while pending:
        soname = pending.pop(0)
        if soname in found:
            continue
        found[soname] = find_library(soname, arch)
        paths.append(found[soname])
        pending.extend(needed(found[soname]))
    return paths
