"""The emitter's libraries, each compiled twice (see emitter/BUILD.bazel)."""

EMITTER_COPTS = [
    "-fno-exceptions",
    "-fno-rtti",
    "-fvisibility=hidden",
    "-fno-stack-protector",
    # CaptureStack starts its walk from its own frame pointer.
    "-fno-omit-frame-pointer",
]

# A sanitizer runtime must come first in a process's library list, so a
# preloaded library can never carry one: libringprof.so is built from a
# second, never-instrumented compilation of the same sources (the *_preload
# targets), whatever --config=asan/tsan says. The instrumented targets are
# what the unit tests link. The preloaded compilation also pins glibc
# symbol versions (glibc_compat.h, force-included in every file).
NO_SANITIZER = ["-fno-sanitize=all"]

# Also never fortified: -c opt's _FORTIFY_SOURCE turns calls like strncat
# into glibc's __strncat_chk, which musl lacks (libc_imports.h). On AArch64,
# atomics are inline (LL/SC, every ARMv8.0 core): GCC's default outline
# atomics would link libgcc's helpers, whose constructor imports glibc's
# __getauxval, which musl lacks.
PRELOAD = NO_SANITIZER + [
    "-U_FORTIFY_SOURCE",
    "-include emitter/glibc_compat.h",
] + select({
    "//bazel:aarch64": ["-mno-outline-atomics"],
    "//conditions:default": [],
})

def emitter_library(
        name,
        srcs,
        hdrs,
        emitter_deps = [],
        deps = [],
        test_deps = [],
        preload_deps = []):
    """`name` (instrumented under sanitizers, for tests) and `name`_preload.

    Args:
      name: the library's name.
      srcs: its sources.
      hdrs: its headers.
      emitter_deps: names of other emitter_library targets, linked in the
          same variant (":x" or ":x_preload").
      deps: dependencies of both variants.
      test_deps: dependencies of `name` only.
      preload_deps: dependencies of `name`_preload only.
    """
    for suffix, extra, variant_deps in [
        ("", [], [":libc_imports"] + test_deps),
        ("_preload", PRELOAD, [":glibc_compat", ":libc_imports"] + preload_deps),
    ]:
        native.cc_library(
            name = name + suffix,
            srcs = srcs,
            hdrs = hdrs,
            copts = EMITTER_COPTS + extra,
            deps = [":" + d + suffix for d in emitter_deps] + deps +
                   variant_deps,
        )
