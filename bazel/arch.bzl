"""Building for aarch64 beside the host, in one `bazel build //...`.

A Starlark transition sets the target platform to
//bazel/platforms:linux_aarch64 for one attribute; toolchain resolution then
compiles everything below it with the cross toolchain of //bazel/toolchains
(system libraries from the arm64 multiarch paths), while tools that run
during the build (protoc) stay host tools. The rules here are the only
users of the transition:

  aarch64_file        one file of a target built for aarch64, copied to
                      bazel-bin/<package>/<name> (the user-facing outputs,
                      //:aarch64/libringprof.so and //:aarch64/ringprof)
  aarch64_data        targets built for aarch64 as another target's data,
                      with their runfiles at the usual runfiles paths
  qemu_aarch64_test   a test binary built for aarch64, run under
                      `qemu-aarch64 -cpu max` (Debian's qemu-user; -cpu max
                      turns pointer authentication on), its runfiles and
                      arguments as if it ran natively

Nothing built for aarch64 exists under --config=asan/tsan (the sanitizers
are checked on the host; see //bazel:sanitizers.bzl).
"""

load("//bazel:sanitizers.bzl", "NOT_UNDER_SANITIZERS")

AARCH64_PLATFORM = "//bazel/platforms:linux_aarch64"

# How hardened arm64 code is built (Ubuntu's and Fedora's defaults, Android):
# no frame pointers, return addresses signed with pointer authentication and
# branch targets marked (BTI). Workloads built so are aarch64-only targets.
HARDENED_AARCH64_COPTS = [
    "-fomit-frame-pointer",
    "-mbranch-protection=standard",
]

def _to_aarch64_impl(settings, attr):
    return {"//command_line_option:platforms": AARCH64_PLATFORM}

_to_aarch64 = transition(
    implementation = _to_aarch64_impl,
    inputs = [],
    outputs = ["//command_line_option:platforms"],
)

_ALLOWLIST = {
    "_allowlist_function_transition": attr.label(
        default = "@bazel_tools//tools/allowlists/function_transition_allowlist",
    ),
}

def _aarch64_file_impl(ctx):
    files = ctx.attr.src[0][DefaultInfo].files.to_list()
    if len(files) != 1:
        fail("%s: %s must make exactly one file, not %d" %
             (ctx.label, ctx.attr.src[0].label, len(files)))
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.run_shell(
        inputs = files,
        outputs = [out],
        command = 'cp "$1" "$2"',
        arguments = [files[0].path, out.path],
        mnemonic = "CopyAarch64",
        progress_message = "Copying the aarch64 build of %s" % ctx.attr.src[0].label,
    )
    return [DefaultInfo(files = depset([out]), runfiles = ctx.runfiles(files = [out]))]

_aarch64_file = rule(
    implementation = _aarch64_file_impl,
    attrs = dict(
        _ALLOWLIST,
        src = attr.label(cfg = _to_aarch64, mandatory = True),
    ),
)

def aarch64_file(name, src, **kwargs):
    """bazel-bin/<package>/<name>: `src`'s one file, built for aarch64."""
    _aarch64_file(
        name = name,
        src = src,
        target_compatible_with = NOT_UNDER_SANITIZERS,
        **kwargs
    )

def _aarch64_data_impl(ctx):
    files = depset(transitive = [d[DefaultInfo].files for d in ctx.attr.srcs])
    runfiles = ctx.runfiles(transitive_files = files)
    for d in ctx.attr.srcs:
        runfiles = runfiles.merge(d[DefaultInfo].default_runfiles)
    return [DefaultInfo(files = files, runfiles = runfiles)]

_aarch64_data = rule(
    implementation = _aarch64_data_impl,
    attrs = dict(
        _ALLOWLIST,
        srcs = attr.label_list(cfg = _to_aarch64, allow_files = True),
    ),
)

def aarch64_data(name, srcs, **kwargs):
    """`srcs` built for aarch64, for another target's `data`."""
    _aarch64_data(
        name = name,
        srcs = srcs,
        testonly = True,
        target_compatible_with = NOT_UNDER_SANITIZERS,
        **kwargs
    )

def _qemu_aarch64_test_impl(ctx):
    binary = ctx.attr.binary[0][DefaultInfo]
    executable = binary.files_to_run.executable
    script = ctx.actions.declare_file(ctx.label.name + ".sh")
    ctx.actions.write(
        output = script,
        content = "\n".join([
            "#!/bin/bash",
            "# %s built for aarch64, under qemu-user." % ctx.attr.binary[0].label,
            "exec qemu-aarch64 -cpu max '%s' \"$@\"" % executable.short_path,
            "",
        ]),
        is_executable = True,
    )
    runfiles = ctx.runfiles(files = [executable]).merge(binary.default_runfiles)
    return [DefaultInfo(executable = script, runfiles = runfiles)]

_qemu_aarch64_test = rule(
    implementation = _qemu_aarch64_test_impl,
    test = True,
    attrs = dict(
        _ALLOWLIST,
        binary = attr.label(cfg = _to_aarch64, mandatory = True),
    ),
)

def qemu_aarch64_test(name, binary, **kwargs):
    """Runs the test binary `binary`, built for aarch64, under qemu-aarch64."""
    _qemu_aarch64_test(
        name = name,
        binary = binary,
        target_compatible_with = NOT_UNDER_SANITIZERS,
        **kwargs
    )
