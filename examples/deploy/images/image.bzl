"""oci_image: one image of the deploy kit, built by buildah from a Dockerfile.

The rule stages the Dockerfile's build context from Bazel outputs and the
machine's Debian packages and builds it with buildah (build_image.py says
how); its output `NAME.tar` is an image archive that `docker load`, `ctr
images import`, `skopeo copy` and `umoci` take (oci_archive.py), named
`REPOSITORY:VERSION` (VERSION: the repository's VERSION file).

The image's architecture is the C++ toolchain's: the host's by default;
`arch = "arm64"` builds the image and everything in it for
//bazel/platforms:linux_aarch64 (the cross toolchain of //bazel/toolchains,
Debian's arm64 multiarch libraries). `oci_index` puts one repository's
images of several platforms under one OCI image index.

Reproducible: the layers' files and the config carry one timestamp,
`--define=SOURCE_DATE_EPOCH=N` (default 0, 1970-01-01, as distroless
images), so the same inputs give the same digests. The inputs include the
Debian packages installed on the machine: the dpkg database is an input of
the action, so installing or upgrading a package builds the images again.

Needs root (buildah's storage): the action runs outside Bazel's sandbox.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")
load("//bazel:arch.bzl", "AARCH64_PLATFORM")

# The C++ toolchain's cpu -> the image's (Debian) architecture.
_ARCHES = {
    "k8": "amd64",
    "x86_64": "amd64",
    "aarch64": "arm64",
    "arm64": "arm64",
}

# `arch = "arm64"` builds the image, and everything in it, for
# //bazel/platforms:linux_aarch64 (the cross toolchain of //bazel/toolchains);
# without it, for the configuration's own platform (the host's).
def _platform_impl(settings, attr):
    if attr.arch == "arm64":
        return {"//command_line_option:platforms": AARCH64_PLATFORM}
    return {"//command_line_option:platforms": settings["//command_line_option:platforms"]}

_to_platform = transition(
    implementation = _platform_impl,
    inputs = ["//command_line_option:platforms"],
    outputs = ["//command_line_option:platforms"],
)

OciImageInfo = provider(
    doc = "An image archive and its architecture.",
    fields = {
        "archive": "the archive File",
        "arch": "its Debian architecture (amd64, arm64)",
        "repository": "the image's name, without tag",
    },
)

def _single_file(target, attribute):
    files = target.files.to_list()
    if len(files) != 1:
        fail("%s: %s gives %d files, expected one" % (attribute, target.label, len(files)))
    return files[0]

def _oci_image_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    arch = _ARCHES.get(cc_toolchain.cpu)
    if not arch:
        fail("no image architecture for the C++ toolchain's cpu %s" % cc_toolchain.cpu)
    out = ctx.actions.declare_file(ctx.label.name + ".tar")
    args = ctx.actions.args()
    args.add("--dockerfile", ctx.file.dockerfile)
    args.add("--repository", ctx.attr.repository)
    args.add("--version-file", ctx.file._version)
    args.add("--arch", arch)
    args.add("--epoch", ctx.var.get("SOURCE_DATE_EPOCH", "0"))
    args.add_all(ctx.attr.layers, before_each = "--layer")
    inputs = [ctx.file.dockerfile, ctx.file._version, ctx.file._dpkg_status]
    for target, dest in ctx.attr.files.items():
        source = _single_file(target, "files")
        inputs.append(source)
        args.add("--file", "%s=%s" % (dest, source.path))
    for layer, sonames in ctx.attr.libraries.items():
        for soname in sonames:
            args.add("--library", "%s=%s" % (layer, soname))
    for layer, sonames in ctx.attr.debug_files.items():
        for soname in sonames:
            args.add("--debug-file", "%s=%s" % (layer, soname))
    args.add_all(ctx.attr.resolve, before_each = "--resolve")
    if ctx.attr.system_files:
        args.add("--system-files", ctx.attr.system_files)
    if ctx.attr.strip:
        args.add("--strip")
        args.add("--objcopy", cc_toolchain.objcopy_executable)
    if ctx.attr.base:
        base = _single_file(ctx.attr.base, "base")
        inputs.append(base)
        args.add("--base", base)
        args.add("--base-name", ctx.attr.base_name)
    args.add("--out", out)
    ctx.actions.run(
        executable = ctx.executable._builder,
        arguments = [args],
        inputs = depset(inputs, transitive = [cc_toolchain.all_files]),
        tools = ctx.files._builder_library,
        outputs = [out],
        mnemonic = "OciImage",
        progress_message = "Building image %s (%s)" % (ctx.attr.repository, arch),
        # buildah needs root and real mounts; the images hold Debian's files
        # of this machine.
        execution_requirements = {"local": "1"},
    )
    return [
        DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out])),
        OciImageInfo(archive = out, arch = arch, repository = ctx.attr.repository),
    ]

_oci_image = rule(
    implementation = _oci_image_impl,
    doc = "An image archive built by buildah from a Dockerfile (see the file's docstring).",
    cfg = _to_platform,
    attrs = {
        "arch": attr.string(
            values = ["", "arm64"],
            doc = "arm64: built for aarch64 (empty: the configuration's platform).",
        ),
        "_allowlist_function_transition": attr.label(
            default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
        ),
        "dockerfile": attr.label(allow_single_file = True, mandatory = True),
        "repository": attr.string(mandatory = True, doc = "The image's name, without tag."),
        "layers": attr.string_list(
            mandatory = True,
            doc = "The context directories the Dockerfile COPYs, lowest layer first.",
        ),
        "files": attr.label_keyed_string_dict(
            allow_files = True,
            doc = "Bazel outputs -> LAYER/PATH in the image.",
        ),
        "libraries": attr.string_list_dict(
            doc = "LAYER -> SONAMEs of Debian libraries to add (with what they need).",
        ),
        "debug_files": attr.string_list_dict(
            doc = "LAYER -> SONAMEs whose separate debug files (Debian's -dbg packages) to add.",
        ),
        "resolve": attr.string_list(
            doc = "Layers whose ELF files get the Debian libraries they need.",
        ),
        "system_files": attr.string(
            doc = "The layer that gets /etc/passwd, the CA bundle, ... (empty: none).",
        ),
        "strip": attr.bool(doc = "Strip debug sections (not the symbol table) of `files`."),
        "base": attr.label(allow_single_file = True, doc = "The image the Dockerfile builds FROM."),
        "base_name": attr.string(doc = "The name the Dockerfile gives `base`."),
        "_builder": attr.label(
            default = ":build_image.py",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
        "_builder_library": attr.label_list(
            default = [":debian_files.py", ":oci_archive.py"],
            allow_files = True,
        ),
        "_version": attr.label(default = "//:VERSION", allow_single_file = True),
        "_dpkg_status": attr.label(default = "@debian_dpkg//:status", allow_single_file = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)

def oci_image(name, reproduced = False, **kwargs):
    """The image `name`; with `reproduced`, also `name_reproduced`: the same
    image built again by another, independent buildah run (testonly), for a
    test to compare the two archives."""
    _oci_image(name = name, **kwargs)
    if reproduced:
        again = dict(kwargs)
        again.pop("visibility", None)
        _oci_image(name = name + "_reproduced", testonly = True, **again)

def _oci_index_impl(ctx):
    images = [image[OciImageInfo] for image in ctx.attr.images]
    repositories = {image.repository: True for image in images}
    if len(repositories) != 1:
        fail("%s: images of one repository only, not %s" % (ctx.label, repositories.keys()))
    outputs = []
    for image in images:
        copy = ctx.actions.declare_file("%s-%s.tar" % (ctx.label.name, image.arch))
        ctx.actions.symlink(output = copy, target_file = image.archive)
        outputs.append(copy)
    index = ctx.actions.declare_file(ctx.label.name + ".tar")
    args = ctx.actions.args()
    args.add("index", index)
    args.add(images[0].repository)
    args.add(ctx.file._version)
    args.add_all([image.archive for image in images])
    ctx.actions.run(
        executable = ctx.executable._archives,
        arguments = [args],
        inputs = [ctx.file._version] + [image.archive for image in images],
        tools = ctx.files._archives_library,
        outputs = [index],
        env = {"SOURCE_DATE_EPOCH": ctx.var.get("SOURCE_DATE_EPOCH", "0")},
        mnemonic = "OciIndex",
        progress_message = "Writing the multi-platform image %s" % images[0].repository,
    )
    outputs.append(index)
    return [DefaultInfo(files = depset(outputs), runfiles = ctx.runfiles(files = outputs))]

oci_index = rule(
    implementation = _oci_index_impl,
    doc = """One repository's images for several platforms.

Outputs NAME.tar, an archive whose index lists every platform's image (a
multi-platform image: `skopeo copy --all`, `ctr images import
--all-platforms`), and NAME-ARCH.tar, each platform's own archive (for
`docker load`, which before Docker 25 cannot choose a platform).""",
    attrs = {
        "images": attr.label_list(providers = [OciImageInfo], mandatory = True),
        "_archives": attr.label(
            default = ":archives.py",
            allow_single_file = True,
            executable = True,
            cfg = "exec",
        ),
        "_archives_library": attr.label_list(default = [":oci_archive.py"], allow_files = True),
        "_version": attr.label(default = "//:VERSION", allow_single_file = True),
    },
)
