#!/usr/bin/env python3
"""Counts test cases from a `bazel test` log and the JUnit XML it left.

Usage: test_summary.py BAZEL_LOG TESTLOGS_DIR
Prints the failing and skipped cases and a last line `N passed, M failed`
(`, K skipped` when a test reported cases it could not run: JUnit
status="notrun"); exits 1 when anything failed or no test ran. Bazel errors
that left no failed test (a package that does not load) count as one failure.
"""
import os
import re
import sys
import xml.etree.ElementTree as ET

STATUS = re.compile(
    r"^(//\S+)\s+(?:\(cached\)\s+)?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|"
    r"FAILED TO BUILD|INCOMPLETE|REMOTE FAILURE)\b")


def cases_from_xml(path):
    """Returns (passed, failed names, skipped names) from one test.xml, or
    None."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    passed, failed, skipped = 0, [], []
    for case in root.iter("testcase"):
        if case.get("status") == "notrun":
            reason = case.find("skipped")
            skipped.append("%s.%s%s" % (
                case.get("classname", ""), case.get("name", ""),
                "" if reason is None else ": " + reason.get("message", "")))
            continue
        bad = case.find("failure") is not None or case.find("error") is not None
        name = "%s.%s" % (case.get("classname", ""), case.get("name", ""))
        if bad:
            failed.append(name)
        else:
            passed += 1
    return passed, failed, skipped


def main():
    log, testlogs = sys.argv[1], sys.argv[2]
    targets = {}
    errors = 0
    with open(log, errors="replace") as f:
        for line in f:
            errors += line.startswith("ERROR: ")
            m = STATUS.match(line.strip())
            if m:
                targets[m.group(1)] = m.group(2)
    passed, failed, skipped = 0, [], []
    for target, status in sorted(targets.items()):
        pkg, _, name = target[2:].partition(":")
        xml = os.path.join(testlogs, pkg, name, "test.xml")
        counted = cases_from_xml(xml) if status in ("PASSED", "FAILED", "FLAKY") else None
        ok = status in ("PASSED", "FLAKY")
        if counted:
            skipped += ["%s %s" % (target, n) for n in counted[2]]
        if counted and (counted[0] or counted[1]):
            p, f, _ = counted
            if not ok and not f:
                f = [target + " (target failed after its cases passed)"]
            passed += p
            failed += ["%s %s" % (target, n) for n in f]
        elif ok and counted and counted[2]:
            pass  # only skipped cases: listed above
        elif ok:
            passed += 1
        else:
            failed.append("%s %s" % (target, status))
    if errors and not failed:
        # A package that does not load has no test status at all: its tests
        # would otherwise vanish from the count.
        failed.append("bazel: %d loading or build errors (see the log)" % errors)
    for f in failed:
        print("FAILED:", f)
    for target, status in sorted(targets.items()):
        if status not in ("PASSED", "FLAKY", "NO STATUS"):
            pkg, _, name = target[2:].partition(":")
            print("  log: bazel-testlogs/%s/%s/test.log" % (pkg, name))
    for s in skipped:
        print("SKIPPED:", s)
    print("%d passed, %d failed%s" % (passed, len(failed),
                                      ", %d skipped" % len(skipped) if skipped else ""))
    return 1 if failed or passed == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
