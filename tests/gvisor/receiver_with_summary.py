#!/usr/bin/python3
"""Runs the Pyroscope test receiver (tests/pyroscope_receiver/receiver.py)
unchanged — same protocol, same validation, same control endpoint — and adds
to every accepted entry a per-function summary of the profile
(profile_summary.summarize), so that the gVisor end-to-end test can check
from GET /accepted which functions arrived, by name.

Takes the receiver's own flags.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "pyroscope_receiver"))
sys.path.insert(0, HERE)

import profile_summary  # noqa: E402
import receiver  # noqa: E402

_validate_pprof = receiver.validate_pprof


def validate_and_summarize(lenient_profile, size, labels, now_ns):
    # Raises on anything Pyroscope rejects (strings are UTF-8 past it).
    summary = _validate_pprof(lenient_profile, size, labels, now_ns)
    profile = receiver.profile_pb2.Profile()
    profile.ParseFromString(lenient_profile.SerializeToString())
    summary["summary"] = profile_summary.summarize(profile)
    return summary


receiver.validate_pprof = validate_and_summarize

if __name__ == "__main__":
    receiver.main()
