#!/usr/bin/python3
"""Checks ringprof's wall profile of wall_workload against the wall-clock
time each of its threads measured.

    check_wall.py TRUTH.json OUTPUT_DIR MAX_ERROR native|gvisor

Reads the merged wall.pb.gz that `ringprof run` wrote and the workload's
JSON line, and asserts per thread:
  * the wall time of the samples labelled with its thread_id is within
    MAX_ERROR (relative) of the time it measured;
  * its samples carry its name as thread_name;
and that a few threads' time is where they spent it, by leaf function:
spin-sleep's CPU (some in SpinFor; in gVisor, in SpinFor or at the
nanosleep that follows it) and sleeps (SleepMs), lock-a's lock waits
(Locker) and sleeps, the pipe reader's reads and the poller's polls. Exits
1 with one line per failure.
"""

import collections
import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "accuracy"))
import compare  # pylint: disable=wrong-import-position


def by_thread(profile):
    """thread_id -> (wall ns, set of thread_name values, Counter of wall ns
    by "leaf:FUNCTION" (the sample's leaf) and "in:FUNCTION" (anywhere in
    its stack))."""
    strings = profile.string_table
    names = {f.id: strings[f.name] for f in profile.function}
    # A location's lines are innermost first.
    leaf_of = {l.id: names.get(l.line[0].function_id, "") if l.line else ""
               for l in profile.location}
    functions = {l.id: {names.get(line.function_id, "") for line in l.line}
                 for l in profile.location}
    wall = collections.Counter()
    thread_names = collections.defaultdict(set)
    leaves = collections.defaultdict(collections.Counter)
    for s in profile.sample:
        labels = {strings[l.key]: strings[l.str] for l in s.label}
        tid = labels.get("thread_id", "")
        wall[tid] += s.value[0]
        if "thread_name" in labels:
            thread_names[tid].add(labels["thread_name"])
        if s.location_id:
            leaves[tid]["leaf:" + leaf_of.get(s.location_id[0], "")] += (
                s.value[0])
        for function in set().union(
                *(functions.get(l, set()) for l in s.location_id)):
            leaves[tid]["in:" + function] += s.value[0]
    return wall, thread_names, leaves


def main():
    truth_path, out, max_error, mode = (sys.argv[1], sys.argv[2],
                                        float(sys.argv[3]), sys.argv[4])
    truth = json.loads(open(truth_path).read().strip().splitlines()[-1])
    path = os.path.join(out, "wall.pb.gz")
    if not os.path.exists(path):
        print("FAIL: no wall profile (%s)" % path)
        return 1
    profile = compare.read_profile(compare.load_profile_module(), path)
    strings = profile.string_table
    types = [(strings[t.type], strings[t.unit]) for t in profile.sample_type]
    failures = []
    if types != [("wall", "nanoseconds")]:
        failures.append("sample types %s, not wall/nanoseconds" % types)
    wall, thread_names, leaves = by_thread(profile)
    for thread in truth["threads"]:
        tid, name = str(thread["tid"]), thread["name"]
        reported, measured = wall.get(tid, 0), thread["wall_ns"]
        error = reported / measured - 1
        print("%-12s tid %-8s wall %7.3f s, measured %7.3f s (%+.1f%%)" % (
            name, tid, reported / 1e9, measured / 1e9, 100 * error))
        if abs(error) > max_error:
            failures.append("%s: wall off by %+.1f%% (bound %.0f%%)" % (
                name, 100 * error, 100 * max_error))
        if thread_names.get(tid) != {name}:
            failures.append("%s: thread_name labels %s" % (
                name, sorted(thread_names.get(tid, []))))
    # Where the time went: the interposed call's own frame is the
    # emitter's (trimmed), so a wait's leaf is its caller.
    tids = {t["name"]: str(t["tid"]) for t in truth["threads"]}
    # (The spinner's CPU mostly has the vDSO's clock_gettime as its leaf.)
    # The spinner's CPU share is 5% on an idle machine, far less on a busy
    # one: some is enough. gVisor (systrap, ptrace) charges a thread's user
    # time when the thread next enters its kernel, so there a CPU-timer
    # signal for a spin mostly arrives at the nanosleep after it: of the
    # spinner's ~12 CPU samples, 1-3 fall in SpinFor.
    spin_cpu = ("in:SpinFor" if mode == "native" else
                "in:SpinFor|leaf:__clock_nanosleep")
    for name, where, share in (("spin-sleep", spin_cpu, 1e-9),
                               ("spin-sleep", "leaf:SleepMs", 0.75),
                               ("lock-a", "leaf:Locker", 0.2),
                               ("lock-a", "leaf:SleepMs", 0.4),
                               ("pipe-reader", "leaf:PipeReader", 0.9),
                               ("poller", "leaf:Poller", 0.9)):
        by_place = leaves.get(tids[name], collections.Counter())
        patterns = [re.compile(r"^%s:(.*::)?%s(\(.*)?$" % tuple(
            place.split(":"))) for place in where.split("|")]
        got = sum(ns for f, ns in by_place.items()
                  if any(p.match(f) for p in patterns))
        total = max(1, wall.get(tids[name], 0))
        if got < share * total:
            failures.append("%s: %.0f%% of its wall time %s (expected "
                            ">= %.0f%%; leaves %s)" % (
                                name, 100.0 * got / total, where, 100 * share,
                                [(f, ns) for f, ns in by_place.most_common()
                                 if f.startswith("leaf:")][:4]))
    for failure in failures:
        print("FAIL: " + failure)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
