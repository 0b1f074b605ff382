#!/usr/bin/python3
"""Checks ringprof's mutex and block profiles of wait_workload.

    check_waits.py TRUTH.json OUTPUT_DIR MAX_ERROR

Reads the merged mutex.pb.gz and block.pb.gz that `ringprof run` wrote and
the totals the workload measured (its JSON line), and asserts per wait:
  * mutex delay of stacks through ContendMutex vs mutex_wait_ns,
  * block delay of stacks through ReadPipe vs pipe_read_ns,
  * block delay of stacks through WaitCondition vs cond_wait_ns,
each within MAX_ERROR (relative); the contended lock's waits are not in
the block profile nor the pipe read's in the mutex profile; both profiles
have contentions > 0; `go tool pprof -top` reads both. Exits 1 with one
line per failure.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))), "accuracy"))
import compare  # pylint: disable=wrong-import-position


def through(profile, type_name, function):
    """Sum of `type_name` over samples whose stack has `function`."""
    strings = profile.string_table
    index = [strings[t.type] for t in profile.sample_type].index(type_name)
    names = {f.id: strings[f.name] for f in profile.function}
    has = set()
    for location in profile.location:
        if any(function in names.get(line.function_id, "")
               for line in location.line):
            has.add(location.id)
    return sum(s.value[index] for s in profile.sample
               if any(l in has for l in s.location_id))


def main():
    truth_path, out, max_error = sys.argv[1], sys.argv[2], float(sys.argv[3])
    truth = json.loads(open(truth_path).read().strip().splitlines()[-1])
    pb2 = compare.load_profile_module()
    failures = []
    profiles = {}
    for name in ("mutex", "block"):
        path = os.path.join(out, name + ".pb.gz")
        if not os.path.exists(path):
            failures.append("no %s profile (%s)" % (name, path))
            continue
        profiles[name] = compare.read_profile(pb2, path)
    checks = [("mutex", "ContendMutex", "mutex_wait_ns"),
              ("block", "ReadPipe", "pipe_read_ns"),
              ("block", "WaitCondition", "cond_wait_ns")]
    for name, function, key in checks:
        if name not in profiles:
            continue
        reported = through(profiles[name], "delay", function)
        true = truth[key]
        error = reported / true - 1 if true else float("inf")
        print("%-6s %-14s reported %8.3f s, measured %8.3f s (%+.1f%%)" % (
            name, function, reported / 1e9, true / 1e9, 100 * error))
        if abs(error) > max_error:
            failures.append("%s delay through %s off by %+.1f%% (bound %.0f%%)"
                            % (name, function, 100 * error, 100 * max_error))
    for name, function in (("block", "ContendMutex"), ("mutex", "ReadPipe")):
        if name in profiles and through(profiles[name], "delay", function):
            failures.append("%s profile has waits in %s" % (name, function))
    for name, profile in profiles.items():
        contentions = through(profile, "contentions", "")
        print("%-6s contentions %d" % (name, contentions))
        if contentions <= 0:
            failures.append("%s profile has no contentions" % name)
    go = shutil.which("go")
    if go is None:
        failures.append("go not found: cannot check go tool pprof")
    else:
        # Under Bazel there is no HOME; go builds pprof into its cache on
        # first use (minutes): one cache kept across runs.
        scratch = tempfile.mkdtemp(prefix="check_waits_")
        env = dict(os.environ, HOME=scratch, PPROF_TMPDIR=scratch, GOFLAGS="",
                   GOCACHE="/tmp/ringprof-check-waits-gocache")
        for name in profiles:
            run = subprocess.run(
                [go, "tool", "pprof", "-symbolize=none", "-top",
                 "-sample_index=delay",
                 os.path.join(out, name + ".pb.gz")],
                capture_output=True, text=True, check=False, env=env)
            if run.returncode != 0 or "Type: delay" not in run.stdout:
                failures.append("go tool pprof cannot read %s: %s" % (
                    name, run.stderr.strip()[:200]))
    for failure in failures:
        print("FAIL:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
