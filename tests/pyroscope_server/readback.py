"""Compares what a Pyroscope server stored with the local profiles of the
same `ringprof` run (its --output-dir: one .pb.gz per window, process and
profile type, `<out>/<service>/<name>/<pid>.<from_ms>-<until_ms>.pb.gz`).

The server holds what was shipped, so for one service over the run:
  * totals per sample type equal the local windows' sum (cpu, alloc_*,
    wall),
    within `tolerance` (1%);
  * the hot functions (largest self values locally) have the same self
    values on the server;
  * in-use (inuse_space, inuse_objects) is a snapshot: the server's value
    for each window equals that window's local snapshot (summed over the
    service's processes), never a sum over windows;
  * with a tag, per tag value, the same (tags become series labels);
  * with span ids, the samples of those spans (span_id stays on samples).

    python3 readback.py URL OUTPUT_DIR SERVICE [--tag NAME]... [--spans]

prints one line per check and exits 1 when one fails.
"""

import argparse
import atexit
import collections
import glob
import gzip
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import query  # noqa: E402  pylint: disable=wrong-import-position

TYPES = {"cpu": query.CPU, "alloc_space": query.ALLOC_SPACE,
         "alloc_objects": query.ALLOC_OBJECTS,
         "inuse_space": query.INUSE_SPACE,
         "inuse_objects": query.INUSE_OBJECTS, "wall": query.WALL}
INUSE = ("inuse_space", "inuse_objects")
Window = collections.namedtuple("Window", "service pid name from_ms until_ms path")
_WINDOW = re.compile(r"(\d+)\.(\d+)-(\d+)\.pb\.gz$")
_pb2 = []


def profile_pb2():
    """proto/profile.proto's Python module (protoc into a temp dir, once)."""
    if not _pb2:
        out = tempfile.mkdtemp(prefix="readback_pb2_")
        atexit.register(shutil.rmtree, out, True)  # when the interpreter exits
        subprocess.run(["protoc", "--proto_path=" + ROOT,
                        "--python_out=" + out,
                        os.path.join(ROOT, "proto", "profile.proto")],
                       check=True)
        sys.path.insert(0, out)
        from proto import profile_pb2 as module  # pylint: disable=import-outside-toplevel
        _pb2.append(module)
    return _pb2[0]


def local_windows(out_dir):
    windows = []
    for path in glob.glob(os.path.join(out_dir, "*", "*", "*.pb.gz")):
        match = _WINDOW.search(path)
        if not match:
            continue
        parts = path.split(os.sep)
        windows.append(Window(parts[-3], match.group(1), parts[-2],
                              int(match.group(2)), int(match.group(3)), path))
    return sorted(windows, key=lambda w: (w.from_ms, w.pid, w.name))


def read_profile(path):
    profile = profile_pb2().Profile()
    with open(path, "rb") as f:
        data = f.read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    profile.ParseFromString(data)
    return profile


class Local:
    """Per sample type, totals and self values of a set of local windows,
    optionally restricted to samples with label NAME=VALUE or to spans."""

    def __init__(self, windows, label=None, span_ids=None):
        self.total = collections.Counter()
        self.self = collections.defaultdict(collections.Counter)
        self.spans = collections.Counter()  # span_id -> samples
        for window in windows:
            self._add(read_profile(window.path), label, span_ids)

    def _add(self, profile, label, span_ids):
        strings = profile.string_table
        types = [strings[t.type] for t in profile.sample_type]
        leaf = {}
        functions = {f.id: strings[f.name] for f in profile.function}
        for location in profile.location:
            if location.line:
                leaf[location.id] = functions.get(location.line[0].function_id, "")
        for sample in profile.sample:
            labels = {strings[l.key]: strings[l.str] for l in sample.label
                      if l.str}
            if "span_id" in labels:
                self.spans[labels["span_id"]] += 1
            if label and labels.get(label[0]) != label[1]:
                continue
            if span_ids is not None and labels.get("span_id") not in span_ids:
                continue
            name = leaf.get(sample.location_id[0], "") if sample.location_id else ""
            for type_name, value in zip(types, sample.value):
                self.total[type_name] += value
                self.self[type_name][name] += value


def _within(a, b, tolerance):
    return abs(a - b) <= tolerance * max(abs(a), abs(b), 1)


class Checks:
    def __init__(self):
        self.failures = []

    def expect(self, ok, message):
        print("%s: %s" % ("ok" if ok else "FAIL", message))
        if not ok:
            self.failures.append(message)
        return ok


def _server_total(client, type_name, selector, start_ms, end_ms,
                  span_ids=None):
    return client.select_merge_stacktraces(TYPES[type_name], selector,
                                           start_ms, end_ms, span_ids)


def _settled(client, type_name, selector, start_ms, end_ms, want,
             tolerance, timeout_s, span_ids=None):
    """The server's flame graph once its total matches `want` (data may
    still be on its way to the queryable store), or the last one seen."""
    last = []

    def matches():
        graph = _server_total(client, type_name, selector, start_ms, end_ms,
                              span_ids)
        last[:] = [graph]
        return _within(graph["total"], want, tolerance)

    try:
        client.wait_for(matches, "%s total" % type_name, timeout_s)
    except AssertionError:
        pass
    return last[0] if last else {"total": 0}


def compare_run(client, out_dir, service, tags=(), spans=False,
                tolerance=0.01, timeout_s=60, hot=5, selector_extra=""):
    """Runs every check above for `service`; returns the list of failures
    (also printed)."""
    checks = Checks()
    windows = [w for w in local_windows(out_dir) if w.service == service]
    checks.expect(bool(windows), "local windows of %s in %s" % (service, out_dir))
    if not windows:
        return checks.failures
    start_ms = min(w.from_ms for w in windows) - 60000
    end_ms = max(w.until_ms for w in windows) + 60000
    selector = '{service_name="%s"%s}' % (service, selector_extra)
    types = client.wait_for(
        lambda: client.profile_types(start_ms, end_ms), "profile types", timeout_s)
    by_name = collections.defaultdict(list)
    for w in windows:
        by_name[w.name].append(w)
    for name, group in sorted(by_name.items()):
        local = Local(group)
        for type_name in sorted(local.total):
            if type_name not in TYPES:
                continue
            # The server drops samples without value (pprof.Normalize): a
            # type with nothing (in use at none of the windows) is absent.
            if local.total[type_name] == 0:
                graph = _server_total(client, type_name, selector, start_ms,
                                      end_ms)
                checks.expect(graph["total"] == 0, "%s %s: none, locally and "
                              "on the server (%d)" % (service, type_name,
                                                      graph["total"]))
                continue
            checks.expect(TYPES[type_name] in types,
                          "profile type %s listed" % TYPES[type_name])
            if type_name in INUSE:
                _compare_snapshots(client, checks, group, type_name, selector,
                                   tolerance, timeout_s)
                continue
            want = local.total[type_name]
            graph = _settled(client, type_name, selector, start_ms, end_ms,
                             want, tolerance, timeout_s)
            checks.expect(_within(graph["total"], want, tolerance),
                          "%s %s total: server %d, local %d" % (
                              service, type_name, graph["total"], want))
            server_self = query.self_by_function(graph)
            for function, value in local.self[type_name].most_common(hot):
                got = server_self.get(function, 0)
                checks.expect(_within(got, value, tolerance),
                              "%s %s self of %s: server %d, local %d" % (
                                  service, type_name, function[:60], got, value))
    for tag in tags:
        _compare_tag(client, checks, windows, tag, service, start_ms, end_ms,
                     tolerance, timeout_s)
    if spans:
        _compare_spans(client, checks, windows, selector, start_ms, end_ms,
                       tolerance, timeout_s)
    return checks.failures


def _compare_snapshots(client, checks, group, type_name, selector, tolerance,
                       timeout_s):
    """Each window's in-use on the server against the local snapshots of
    every window that starts inside it (any of the service's processes)."""
    per_window = collections.defaultdict(list)
    for w in group:
        per_window[(w.from_ms, w.until_ms)].append(w)
    whole = 0
    for (from_ms, until_ms), ws in sorted(per_window.items()):
        whole += Local(ws).total[type_name]
        # The server answers a time range with every profile stamped inside
        # it: windows of other processes that start within this one (a fork
        # child's, opened a few milliseconds after its parent's) count too.
        inside = [w for w in group if from_ms <= w.from_ms < until_ms]
        want = Local(inside).total[type_name]
        graph = _settled(client, type_name, selector, from_ms, until_ms - 1,
                         want, tolerance, timeout_s)
        checks.expect(_within(graph["total"], want, tolerance),
                      "%s snapshot of window %d: server %d, local %d" % (
                          type_name, from_ms, graph["total"], want))
    nonzero = [w for w, ws in per_window.items() if Local(ws).total[type_name]]
    if len(nonzero) > 1:
        last = max(nonzero)
        want = Local(per_window[last]).total[type_name]
        checks.expect(not _within(want, whole, tolerance),
                      "%s: the last snapshot (%d) is not the sum of the "
                      "windows (%d)" % (type_name, want, whole))


def _compare_tag(client, checks, windows, tag, service, start_ms, end_ms,
                 tolerance, timeout_s):
    values = client.wait_for(
        lambda: client.label_values(tag, ['{service_name="%s"}' % service],
                                    start_ms, end_ms),
        "values of %s" % tag, timeout_s)
    for value in values:
        selector = '{service_name="%s", %s="%s"}' % (service, tag, value)
        for name, type_name in (("process_cpu", "cpu"),
                                ("memory", "alloc_space")):
            local = Local([w for w in windows if w.name == name],
                          label=(tag, value))
            want = local.total[type_name]
            graph = _settled(client, type_name, selector, start_ms, end_ms,
                             want, tolerance, timeout_s)
            checks.expect(_within(graph["total"], want, tolerance),
                          "%s=%s %s: server %d, local %d" % (
                              tag, value, type_name, graph["total"], want))
    local_values = set()
    for w in windows:
        profile = read_profile(w.path)
        strings = profile.string_table
        for sample in profile.sample:
            local_values.update(strings[l.str] for l in sample.label
                                if strings[l.key] == tag and l.str)
    checks.expect(local_values and local_values <= set(values),
                  "tag %s: local values %s are series on the server (%s)"
                  % (tag, sorted(local_values), sorted(values)))


def _compare_spans(client, checks, windows, selector, start_ms, end_ms,
                   tolerance, timeout_s):
    cpu_windows = [w for w in windows if w.name == "process_cpu"]
    spans = Local(cpu_windows).spans
    checks.expect(bool(spans), "local CPU samples carry span_id")
    if not spans:
        return
    chosen = [span for span, _ in spans.most_common(5)]
    want = Local(cpu_windows, span_ids=set(chosen)).total["cpu"]
    graph = _settled(client, "cpu", selector, start_ms, end_ms, want,
                     tolerance, timeout_s, span_ids=chosen)
    checks.expect(_within(graph["total"], want, tolerance) and want > 0,
                  "CPU of spans %s: server %d, local %d" % (
                      ",".join(chosen), graph["total"], want))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("url")
    parser.add_argument("out_dir")
    parser.add_argument("service")
    parser.add_argument("--tag", action="append", default=[])
    parser.add_argument("--spans", action="store_true")
    parser.add_argument("--tolerance", type=float, default=0.01)
    args = parser.parse_args()
    failures = compare_run(query.QueryClient(args.url), args.out_dir,
                           args.service, args.tag, args.spans, args.tolerance)
    print("%d check(s) failed" % len(failures) if failures else "all checks passed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
