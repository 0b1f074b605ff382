#!/usr/bin/python3
"""Compares ringprof's profiles of examples/accuracy with the workload's truth.

    compare.py --truth=TRUTH.json --out=RINGPROF_OUTPUT_DIR [--json=PATH]

Reads the merged `process_cpu.pb.gz` and `memory.pb.gz` that `ringprof run`
wrote, and the truth JSON the workload wrote, and prints one table:

  * CPU shares: per function, the inclusive CPU share (samples whose stack
    contains the function, over the profile's total), against the truth
    (the function's measured thread CPU time over the process's CPU time);
    "other" is everything else. L1 = sum of |reported - true| over the three
    functions and "other" (0 = perfect, 2 = disjoint).
  * alloc_space: per function, the reported inclusive bytes against the
    bytes the function requested, as a ratio.

With --json, also writes the numbers for a test to assert on.
"""

import argparse
import atexit
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile

FUNCTIONS = ("SpinCompute", "AllocHeavy", "MixedWork")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def load_profile_module():
    """profile_pb2 from proto/profile.proto (protoc into a temp dir, removed
    when the interpreter exits)."""
    out = tempfile.mkdtemp(prefix="accuracy_pb2_")
    atexit.register(shutil.rmtree, out, True)
    subprocess.run(["protoc", "--proto_path=" + ROOT, "--python_out=" + out,
                    os.path.join(ROOT, "proto", "profile.proto")], check=True)
    sys.path.insert(0, out)
    from proto import profile_pb2  # pylint: disable=import-outside-toplevel
    return profile_pb2


def inclusive(profile, type_name):
    """(total, {function: inclusive value}) for sample type `type_name`."""
    strings = profile.string_table
    index = None
    for i, sample_type in enumerate(profile.sample_type):
        if strings[sample_type.type] == type_name:
            index = i
    if index is None:
        raise ValueError("no sample type %r" % type_name)
    names = {f.id: strings[f.name] for f in profile.function}
    location_functions = {}
    for location in profile.location:
        found = set()
        for line in location.line:
            name = names.get(line.function_id, "")
            for function in FUNCTIONS:
                if function in name:
                    found.add(function)
        location_functions[location.id] = found
    total = 0
    per_function = {f: 0 for f in FUNCTIONS}
    for sample in profile.sample:
        value = sample.value[index]
        total += value
        seen = set()
        for location_id in sample.location_id:
            seen |= location_functions.get(location_id, set())
        for function in seen:
            per_function[function] += value
    return total, per_function


def read_profile(profile_pb2, path):
    profile = profile_pb2.Profile()
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    profile.ParseFromString(data)
    return profile


def compare(truth, cpu_profile, memory_profile):
    """The comparison as a dict (see the module docstring)."""
    process_cpu = truth["process_cpu_ns"]
    true_share = {f: truth["functions"][f]["cpu_ns"] / process_cpu
                  for f in FUNCTIONS}
    true_share["other"] = 1 - sum(true_share.values())
    cpu_total, cpu = inclusive(cpu_profile, "cpu")
    reported_share = {f: (cpu[f] / cpu_total if cpu_total else 0.0)
                      for f in FUNCTIONS}
    reported_share["other"] = 1 - sum(reported_share.values())
    l1 = sum(abs(reported_share[k] - true_share[k]) for k in true_share)

    _, space = inclusive(memory_profile, "alloc_space")
    alloc = {}
    for f in FUNCTIONS:
        true_bytes = truth["functions"][f]["alloc_bytes"]
        alloc[f] = {
            "true_bytes": true_bytes,
            "reported_bytes": space[f],
            "ratio": (space[f] / true_bytes) if true_bytes else None,
        }
    return {
        "process_cpu_ns": process_cpu,
        "profile_cpu_ns": cpu_total,
        "true_share": true_share,
        "reported_share": reported_share,
        "cpu_l1": l1,
        "alloc": alloc,
    }


def print_table(result, label):
    print("%s: CPU shares (inclusive)   true  reported" % label)
    for key in FUNCTIONS + ("other",):
        print("  %-12s %24.3f %9.3f" % (key, result["true_share"][key],
                                       result["reported_share"][key]))
    print("  L1 distance %25.3f" % result["cpu_l1"])
    print("  profile CPU %.2f s of %.2f s process CPU" % (
        result["profile_cpu_ns"] / 1e9, result["process_cpu_ns"] / 1e9))
    print("%s: alloc_space         true GB  reported GB  ratio" % label)
    for f in FUNCTIONS:
        a = result["alloc"][f]
        ratio = "%.3f" % a["ratio"] if a["ratio"] is not None else "-"
        print("  %-12s %14.3f %12.3f %6s" % (f, a["true_bytes"] / 1e9,
                                            a["reported_bytes"] / 1e9, ratio))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--truth", required=True)
    parser.add_argument("--out", required=True,
                        help="ringprof run's --output-dir")
    parser.add_argument("--json", help="write the comparison here")
    parser.add_argument("--label", default="accuracy")
    args = parser.parse_args()
    with open(args.truth) as f:
        truth = json.load(f)
    profile_pb2 = load_profile_module()
    result = compare(
        truth,
        read_profile(profile_pb2, os.path.join(args.out, "process_cpu.pb.gz")),
        read_profile(profile_pb2, os.path.join(args.out, "memory.pb.gz")))
    print_table(result, args.label)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
