"""Image archives that `docker load`, `ctr images import`, `skopeo copy`
and `umoci` all take.

An archive is an OCI image layout in a tar file (`oci-layout`,
`index.json`, `blobs/sha256/...`) plus Docker's `manifest.json` naming the
same blobs: the layout Docker 25 and later write with `docker save`. Docker
before 25 reads only `manifest.json` (Debian 12's 20.10 refuses a bare OCI
layout), containerd and skopeo read `index.json`. Each manifest in
`index.json` carries its name (`io.containerd.image.name`, what `ctr
images import` tags) and tag (`org.opencontainers.image.ref.name`, what
`skopeo` and `umoci` select by).

Archives are written reproducibly: entries sorted, one fixed mtime, owner
0:0, fixed modes, so the same blobs give the same archive bytes.
"""

import gzip
import hashlib
import io
import json
import os
import tarfile

INDEX_MEDIA_TYPE = "application/vnd.oci.image.index.v1+json"
MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"


class Error(Exception):
    pass


def blob_path(digest):
    algorithm, hex_digest = digest.split(":", 1)
    return "blobs/%s/%s" % (algorithm, hex_digest)


class Image:
    """One platform's image: its manifest, config and blobs, by digest."""

    def __init__(self, blobs, descriptor, name=None):
        self.blobs = blobs  # digest -> bytes
        self.descriptor = descriptor
        # "docker.io/library/NAME:TAG", from the index entry (or the index
        # that lists this image), or None.
        self.name = name
        self.manifest = json.loads(blobs[descriptor["digest"]])
        self.config = json.loads(blobs[self.manifest["config"]["digest"]])

    @property
    def platform(self):
        return "%s/%s" % (self.config["os"], self.config["architecture"])

    def layers(self):
        """The layers' tar bytes (compressed as stored), lowest first."""
        return [self.blobs[layer["digest"]] for layer in self.manifest["layers"]]

    def files(self):
        """Every path the image's filesystem holds ("usr/bin/x"), after
        whiteouts, as {path: tarfile.TarInfo}."""
        result = {}
        for data in self.layers():
            with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as layer:
                for member in layer.getmembers():
                    name = member.name.lstrip("./").rstrip("/")
                    base = os.path.basename(name)
                    parent = os.path.dirname(name)
                    if base == ".wh..wh..opq":
                        for path in [p for p in result
                                     if p.startswith(parent + "/")]:
                            del result[path]
                    elif base.startswith(".wh."):
                        gone = os.path.join(parent, base[len(".wh."):])
                        for path in [p for p in result
                                     if p == gone or p.startswith(gone + "/")]:
                            del result[path]
                    elif name:
                        result[name] = member
        return result

    def sizes(self):
        """(compressed, uncompressed) bytes of the layers, i.e. what a
        registry stores and what the layer tars take unpacked."""
        compressed = sum(layer["size"] for layer in self.manifest["layers"])
        uncompressed = 0
        for layer, data in zip(self.manifest["layers"], self.layers()):
            if layer["mediaType"].endswith("+gzip"):
                data = gzip.decompress(data)
            uncompressed += len(data)
        return compressed, uncompressed


def read_layout(directory):
    """The images of an OCI layout directory (buildah push oci:DIR)."""
    blobs = {}
    blob_root = os.path.join(directory, "blobs")
    for algorithm in os.listdir(blob_root):
        for name in os.listdir(os.path.join(blob_root, algorithm)):
            with open(os.path.join(blob_root, algorithm, name), "rb") as f:
                blobs["%s:%s" % (algorithm, name)] = f.read()
    with open(os.path.join(directory, "index.json")) as f:
        index = json.load(f)
    return _images(blobs, index)


def read_archive(path):
    """The images of an archive written by write_archive (or any OCI layout
    in a tar file)."""
    blobs, index = {}, None
    with tarfile.open(path) as archive:
        for member in archive.getmembers():
            if not member.isfile():
                continue
            name = member.name.lstrip("./")
            data = archive.extractfile(member).read()
            if name == "index.json":
                index = json.loads(data)
            elif name.startswith("blobs/"):
                _, algorithm, hex_digest = name.split("/", 2)
                blobs["%s:%s" % (algorithm, hex_digest)] = data
    if index is None:
        raise Error("%s: no index.json (not an OCI image layout)" % path)
    return _images(blobs, index)


def _images(blobs, index, name=None):
    images = []
    for descriptor in index["manifests"]:
        named = descriptor.get("annotations", {}).get(
            "io.containerd.image.name", name)
        if descriptor["mediaType"] == INDEX_MEDIA_TYPE:
            images.extend(_images(blobs, json.loads(blobs[descriptor["digest"]]),
                                  named))
        else:
            images.append(Image(blobs, descriptor, named))
    for image in images:
        for digest in [image.manifest["config"]["digest"]] + [
                layer["digest"] for layer in image.manifest["layers"]]:
            if digest not in blobs:
                raise Error("blob %s missing" % digest)
            if "sha256:" + hashlib.sha256(blobs[digest]).hexdigest() != digest:
                raise Error("blob %s does not match its digest" % digest)
    return images


def write_archive(path, images, repository, tag, mtime):
    """Writes `images` (one per platform) as an archive named
    `repository:tag`. With one image, the index lists its manifest; with
    several, it lists an image index of them (a multi-platform image), and
    Docker's manifest.json is left out (Docker before 25 cannot choose a
    platform)."""
    blobs = {}
    for image in images:
        blobs.update(image.blobs)
    annotations = {
        "io.containerd.image.name": "docker.io/library/%s:%s" % (repository,
                                                                 tag),
        "org.opencontainers.image.ref.name": tag,
    }
    if len(images) == 1:
        top = dict(images[0].descriptor)
        docker_manifest = [{
            "Config": blob_path(images[0].manifest["config"]["digest"]),
            "RepoTags": ["%s:%s" % (repository, tag)],
            "Layers": [blob_path(layer["digest"])
                       for layer in images[0].manifest["layers"]],
        }]
    else:
        manifests = []
        for image in images:
            descriptor = {k: v for k, v in image.descriptor.items()
                          if k != "annotations"}
            descriptor["platform"] = {"os": image.config["os"],
                                      "architecture": image.config["architecture"]}
            if image.config.get("variant"):
                descriptor["platform"]["variant"] = image.config["variant"]
            manifests.append(descriptor)
        nested = _json({"schemaVersion": 2, "mediaType": INDEX_MEDIA_TYPE,
                        "manifests": manifests})
        digest = "sha256:" + hashlib.sha256(nested).hexdigest()
        blobs[digest] = nested
        top = {"mediaType": INDEX_MEDIA_TYPE, "digest": digest,
               "size": len(nested)}
        docker_manifest = None
    top["annotations"] = annotations
    files = {
        "oci-layout": _json({"imageLayoutVersion": "1.0.0"}),
        "index.json": _json({"schemaVersion": 2,
                             "mediaType": INDEX_MEDIA_TYPE,
                             "manifests": [top]}),
    }
    if docker_manifest is not None:
        files["manifest.json"] = _json(docker_manifest)
    for digest, data in blobs.items():
        files[blob_path(digest)] = data
    directories = sorted({os.path.dirname(name) + "/" for name in files
                          if "/" in name} | {"blobs/"})
    tmp = path + ".tmp"
    with open(tmp, "wb") as out:
        with tarfile.open(fileobj=out, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name in sorted(directories + list(files)):
                info = tarfile.TarInfo(name.rstrip("/"))
                info.mtime = mtime
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                if name.endswith("/"):
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    tar.addfile(info)
                else:
                    info.mode = 0o644
                    info.size = len(files[name])
                    tar.addfile(info, io.BytesIO(files[name]))
    os.replace(tmp, path)


def _json(value):
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()
