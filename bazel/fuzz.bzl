"""One rule shape for every fuzz target of readers of untrusted data.

Under `--config=fuzz` (clang) the target is a libFuzzer binary:
    bazel run --config=fuzz //ringfile:reader_fuzz -- -max_total_time=300
otherwise a replay binary that runs the fuzz function on each file named on
its command line (`reader_fuzz FILE...`), so the target builds, and its
corpus replays, in every configuration.
"""

def fuzz_binary(name, srcs, deps):
    native.cc_binary(
        name = name,
        testonly = True,
        srcs = srcs + select({
            "//ringfile:libfuzzer": [],
            "//conditions:default": ["//ringfile:fuzz_replay_main.cc"],
        }),
        linkopts = select({
            "//ringfile:libfuzzer": ["-fsanitize=fuzzer"],
            "//conditions:default": [],
        }),
        deps = deps,
    )
