"""Targets that preload libringprof.so cannot exist under a sanitizer.

Under --config=asan/tsan Bazel links the sanitizer runtime into every
binary, and that runtime refuses a library preloaded ahead of it. Such
targets set `target_compatible_with = NOT_UNDER_SANITIZERS` and are skipped
by `bazel test //...` there; the code they exercise runs under the
sanitizers in its own unit tests. (Bazel 4's @platforms has no
:incompatible; requiring Windows is the same on the Linux hosts we build on.)
"""

NOT_UNDER_SANITIZERS = select({
    "//bazel:asan_build": ["@platforms//os:windows"],
    "//bazel:tsan_build": ["@platforms//os:windows"],
    "//conditions:default": [],
})
