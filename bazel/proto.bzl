"""cc_proto: a .proto file turned into a C++ library with Debian's protoc.

Bazel 4's native proto rules want a protobuf source repository; offline we
run the system protoc instead. Imports are written relative to the workspace
root (e.g. `import "proto/types.proto";`) and listed in `proto_deps`.
"""

def cc_proto(name, srcs, proto_deps = [], deps = [], visibility = None):
    """Generates NAME (a cc_library) from srcs.

    Args:
      name: the cc_library's name.
      srcs: .proto files in this package.
      proto_deps: other cc_proto targets whose .proto files srcs import.
      deps: extra cc deps.
      visibility: as usual.
    """
    hdrs = [s[:-len(".proto")] + ".pb.h" for s in srcs]
    ccs = [s[:-len(".proto")] + ".pb.cc" for s in srcs]
    native.filegroup(
        name = name + "_files",
        srcs = srcs + [d + "_files" for d in proto_deps],
        visibility = visibility,
    )
    native.genrule(
        name = name + "_gen",
        srcs = srcs + [d + "_files" for d in proto_deps],
        outs = hdrs + ccs,
        cmd = "protoc --proto_path=. --cpp_out=$(GENDIR) " +
              " ".join(["$(location %s)" % s for s in srcs]),
    )
    native.cc_library(
        name = name,
        srcs = ccs,
        hdrs = hdrs,
        deps = deps + proto_deps + ["//third_party:protobuf"],
        visibility = visibility,
    )
