#!/usr/bin/python3
"""Checks ringprof's profiles of examples/tagged against the truth it wrote.

    check_tags.py TRUTH.json OUTPUT_DIR MAX_DIFF shares|split

Reads the merged process_cpu.pb.gz and memory.pb.gz of `ringprof run` and
asserts, from the samples' `endpoint` label:
  * shares (CPU from the timer): per endpoint (/light, /heavy), the
    untagged samples and the forked child's /forked, |reported share -
    measured share| <= MAX_DIFF, where a measured share is the CPU the
    program timed over the process tree's CPU (the rest is untagged);
  * split (CPU from tick-picked allocation samples, which estimate where
    threads spend wall time, not CPU: the two differ across threads and
    processes on a loaded machine, not within one worker thread): the
    /heavy share of /light + /heavy within MAX_DIFF of the measured one;
  * the measured /heavy : /light CPU ratio is about 3 (the workload is what
    the test says it is);
  * allocation samples are tagged: alloc_space per endpoint within 15% of
    the bytes the handlers allocated, and the untagged thread's bytes carry
    no endpoint.
Exits 1 with one line per failure.
"""

import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "accuracy"))
import compare  # pylint: disable=wrong-import-position


def by_endpoint(profile_pb2, path, type_name):
    profile = compare.read_profile(profile_pb2, path)
    strings = profile.string_table
    index = [strings[t.type] for t in profile.sample_type].index(type_name)
    out = {}
    for sample in profile.sample:
        endpoint = "untagged"
        for label in sample.label:
            if strings[label.key] == "endpoint":
                endpoint = strings[label.str]
        out[endpoint] = out.get(endpoint, 0) + sample.value[index]
    return out


def main():
    truth_path, out_dir = sys.argv[1], sys.argv[2]
    max_diff, mode = float(sys.argv[3]), sys.argv[4]
    with open(truth_path) as f:
        truth = json.load(f)
    pb2 = compare.load_profile_module()
    failures = []
    if not truth["ringprof_available"]:
        failures.append("the program did not find libringprof.so")

    cpu = by_endpoint(pb2, os.path.join(out_dir, "process_cpu.pb.gz"), "cpu")
    total = sum(cpu.values())
    measured_total = truth["total_cpu_ns"]
    print("CPU share       measured  reported")
    for key in ("/light", "/heavy", "untagged", "/forked"):
        measured = truth["cpu_ns"][key] / measured_total
        if key == "untagged":
            # Untagged samples also hold the CPU nobody timed (start-up,
            # the main thread): compare with everything but the tagged.
            tagged = sum(truth["cpu_ns"][k] for k in ("/light", "/heavy",
                                                     "/forked"))
            measured = 1 - tagged / measured_total
        reported = cpu.get(key, 0) / total if total else 0
        print("%-12s %9.3f %9.3f" % (key, measured, reported))
        if mode == "shares" and abs(reported - measured) > max_diff:
            failures.append("CPU share of %s: reported %.3f, measured %.3f"
                            % (key, reported, measured))
    measured = truth["cpu_ns"]["/heavy"] / max(
        1, truth["cpu_ns"]["/heavy"] + truth["cpu_ns"]["/light"])
    reported = cpu.get("/heavy", 0) / max(
        1, cpu.get("/heavy", 0) + cpu.get("/light", 0))
    print("/heavy of /light+/heavy: measured %.3f, reported %.3f"
          % (measured, reported))
    if abs(reported - measured) > max_diff:
        failures.append("/heavy of /light+/heavy: reported %.3f, measured "
                        "%.3f" % (reported, measured))
    if cpu.get("/forked", 0) == 0:
        failures.append("no CPU samples of the fork child under its tag")
    unknown = set(cpu) - {"/light", "/heavy", "untagged", "/forked"}
    if unknown:
        failures.append("unexpected endpoint labels: %s" % sorted(unknown))
    ratio = truth["cpu_ns"]["/heavy"] / max(1, truth["cpu_ns"]["/light"])
    if not 2.5 <= ratio <= 3.5:
        failures.append("measured /heavy:/light CPU ratio %.2f, not ~3"
                        % ratio)

    memory = by_endpoint(pb2, os.path.join(out_dir, "memory.pb.gz"),
                         "alloc_space")
    print("alloc_space     true MB  reported MB")
    for key in ("/light", "/heavy", "untagged"):
        want = truth["bytes"][key]
        got = memory.get(key, 0)
        print("%-12s %9.1f %9.1f" % (key, want / 1e6, got / 1e6))
        if key != "untagged" and not 0.85 * want <= got <= 1.15 * want:
            failures.append("alloc_space of %s: %d bytes, allocated %d"
                            % (key, got, want))
    if memory.get("untagged", 0) < 0.85 * truth["bytes"]["untagged"]:
        failures.append("the untagged thread's bytes carry a tag")

    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
