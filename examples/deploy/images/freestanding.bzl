"""freestanding_binary: one C file compiled and linked with the C++
toolchain's compiler alone, as a static executable without any C library
(-nostdlib -ffreestanding), for the target platform's architecture.

None of the toolchain's flags reach it (no sanitizer, no libstdc++): a
genrule's $(CC) would do the same, but under Bazel 4 it stays the host's
compiler when the target platform is another architecture, so the rule
takes the compiler from toolchain resolution itself.
"""

load("@bazel_tools//tools/cpp:toolchain_utils.bzl", "find_cpp_toolchain")

def _freestanding_binary_impl(ctx):
    cc_toolchain = find_cpp_toolchain(ctx)
    out = ctx.actions.declare_file(ctx.label.name)
    ctx.actions.run(
        executable = cc_toolchain.compiler_executable,
        arguments = [
            "-static",
            "-nostdlib",
            "-ffreestanding",
            "-fno-stack-protector",
            "-fno-builtin",
            "-Os",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-o",
            out.path,
            ctx.file.src.path,
        ],
        inputs = depset([ctx.file.src], transitive = [cc_toolchain.all_files]),
        outputs = [out],
        # gcc finds its assembler and linker on the PATH.
        env = {"PATH": "/usr/bin:/bin"},
        mnemonic = "FreestandingLink",
        progress_message = "Compiling %s (freestanding, static)" % ctx.label,
    )
    return [DefaultInfo(files = depset([out]), executable = out)]

freestanding_binary = rule(
    implementation = _freestanding_binary_impl,
    attrs = {
        "src": attr.label(allow_single_file = [".c"], mandatory = True),
        "_cc_toolchain": attr.label(default = Label("@bazel_tools//tools/cpp:current_cc_toolchain")),
    },
    executable = True,
    toolchains = ["@bazel_tools//tools/cpp:toolchain_type"],
    incompatible_use_toolchain_transition = True,
)
