#!/usr/bin/python3
"""What tools/images does with the image archives once Bazel built them.

  archives.py describe ARCHIVE...        one line per image: name, platform,
                                         layers (compressed / uncompressed
                                         bytes), manifest digest
  archives.py index OUT REPOSITORY VERSION_FILE ARCHIVE...
                                         one archive holding the images of
                                         ARCHIVEs (one per platform) under an
                                         OCI image index: a multi-platform
                                         image, for `skopeo copy --all`
"""

import hashlib
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import oci_archive  # noqa: E402


def mib(n):
    return "%.1f MiB" % (n / 1048576.0) if n >= 1048576 else "%.0f KiB" % (n / 1024.0)


def describe(paths):
    for path in paths:
        with open(path, "rb") as f:
            archive_digest = hashlib.sha256(f.read()).hexdigest()
        for image in oci_archive.read_archive(path):
            compressed, uncompressed = image.sizes()
            name = (image.name or "?").replace("docker.io/library/", "")
            print("%-28s %-12s %d layer%s, %s compressed, %s unpacked; "
                  "manifest %s" % (
                      name, image.platform, len(image.manifest["layers"]),
                      "" if len(image.manifest["layers"]) == 1 else "s",
                      mib(compressed), mib(uncompressed),
                      image.descriptor["digest"][:19]))
        print("  %s (sha256 %s...)" % (path, archive_digest[:16]))


def index(out, repository, version_file, paths):
    with open(version_file) as f:
        tag = f.read().strip()
    images = []
    for path in paths:
        images.extend(oci_archive.read_archive(path))
    platforms = [image.platform for image in images]
    if len(set(platforms)) != len(platforms):
        raise oci_archive.Error("two images for one platform: %s" % platforms)
    mtime = int(os.environ.get("SOURCE_DATE_EPOCH", "0"))
    oci_archive.write_archive(out, images, repository, tag, mtime)


def main(argv):
    if len(argv) >= 2 and argv[0] == "describe":
        describe(argv[1:])
    elif len(argv) >= 5 and argv[0] == "index":
        index(argv[1], argv[2], argv[3], argv[4:])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
