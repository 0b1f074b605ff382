#!/usr/bin/python3
"""Asserts an in-use profile against keep_churn's truth.

    check_inuse.py PROFILE.pb.gz KEEP_BYTES LABEL

KeepBlocks' inclusive inuse_space must be within 10% of KEEP_BYTES, and
ChurnWorker's under 5% of the profile's total inuse_space.
"""

import gzip
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "accuracy"))
import compare  # pylint: disable=wrong-import-position


def inclusive(profile, sample_type):
    """{function: inclusive value} and the total, for one sample type."""
    strings = profile.string_table
    index = [strings[t.type] for t in profile.sample_type].index(sample_type)
    names = {f.id: strings[f.name] for f in profile.function}
    location_names = {l.id: {names.get(line.function_id, "") for line in l.line}
                      for l in profile.location}
    by_function, total = {}, 0
    for sample in profile.sample:
        value = sample.value[index]
        total += value
        seen = set()
        for location_id in sample.location_id:
            seen |= location_names.get(location_id, set())
        for name in seen:
            by_function[name] = by_function.get(name, 0) + value
    return by_function, total


def main():
    path, keep_bytes, label = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    profile_pb2 = compare.load_profile_module()
    profile = profile_pb2.Profile()
    with gzip.open(path, "rb") as f:
        profile.ParseFromString(f.read())
    by_function, total = inclusive(profile, "inuse_space")
    def of(function):  # "(anonymous namespace)::KeepBlocks(unsigned long)"
        return sum(v for name, v in by_function.items()
                   if name.split("(")[-2 if "(" in name else 0]
                   .endswith(function) or name == function)
    keeper = of("KeepBlocks")
    churner = of("ChurnWorker")
    ratio = keeper / keep_bytes
    churn_share = churner / total if total else 1.0
    print("%s: KeepBlocks in use %.1f MiB (true %.1f MiB, ratio %.3f); "
          "ChurnWorker %.2f MiB = %.2f%% of %.1f MiB in use"
          % (label, keeper / 2**20, keep_bytes / 2**20, ratio,
             churner / 2**20, 100 * churn_share, total / 2**20))
    failures = []
    if not 0.9 <= ratio <= 1.1:
        failures.append("KeepBlocks ratio %.3f outside [0.9, 1.1]" % ratio)
    if not churn_share < 0.05:
        failures.append("ChurnWorker %.2f%% of in-use, not under 5%%"
                        % (100 * churn_share))
    for failure in failures:
        print("FAIL (%s): %s" % (label, failure))
    if failures:
        top = sorted(by_function.items(), key=lambda kv: -kv[1])[:12]
        for name, value in top:
            print("  %10.2f MiB  %s" % (value / 2**20, name))
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
