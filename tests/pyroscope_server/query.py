"""Reads profiles back from a Grafana Pyroscope server: its query API
(`querier.v1.QuerierService`, Connect unary with JSON bodies; times in Unix
milliseconds), as Grafana's data source calls it.

    client = QueryClient("http://127.0.0.1:4040")
    graph = client.select_merge_stacktraces(
        "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
        '{service_name="app"}', start_ms, end_ms)
    self_by_function(graph), graph["total"]
"""

import json
import time
import urllib.error
import urllib.request

CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds"
ALLOC_SPACE = "memory:alloc_space:bytes:space:bytes"
ALLOC_OBJECTS = "memory:alloc_objects:count:space:bytes"
INUSE_SPACE = "memory:inuse_space:bytes:space:bytes"
INUSE_OBJECTS = "memory:inuse_objects:count:space:bytes"
WALL = "wall:wall:nanoseconds:wall:nanoseconds"
MAX_NODES = 1 << 20  # the server's -querier.max-flamegraph-nodes-max


class QueryError(Exception):
    """The server answered a query with an error (status and Connect body)."""


class QueryClient:
    def __init__(self, url, tenant=None, timeout_s=30):
        self.url = url.rstrip("/")
        self.tenant = tenant
        self.timeout_s = timeout_s

    def call(self, method, request):
        """POST /querier.v1.QuerierService/METHOD with a JSON request;
        returns the decoded JSON answer."""
        # allow-utf8-labelnames: as Grafana asks, so that label names
        # outside Prometheus' legacy charset (k8s.cluster) are listed too.
        headers = {"Content-Type": "application/json",
                   "Accept": "application/json; allow-utf8-labelnames=true",
                   "Connect-Protocol-Version": "1"}
        if self.tenant:
            headers["X-Scope-OrgID"] = self.tenant
        http_request = urllib.request.Request(
            "%s/querier.v1.QuerierService/%s" % (self.url, method),
            data=json.dumps(request).encode(), headers=headers, method="POST")
        try:
            with urllib.request.urlopen(http_request,
                                        timeout=self.timeout_s) as response:
                body = response.read()
        except urllib.error.HTTPError as e:
            raise QueryError("%s: HTTP %d %s" % (
                method, e.code, e.read().decode(errors="replace"))) from e
        return json.loads(body) if body else {}

    def profile_types(self, start_ms, end_ms):
        """Profile type ids (`__name__:type:unit:period_type:period_unit`)."""
        answer = self.call("ProfileTypes", {"start": start_ms, "end": end_ms})
        return sorted(t["ID"] for t in answer.get("profileTypes", []))

    def label_names(self, matchers, start_ms, end_ms):
        answer = self.call("LabelNames", {"matchers": list(matchers),
                                          "start": start_ms, "end": end_ms})
        return answer.get("names", [])

    def label_values(self, name, matchers, start_ms, end_ms):
        answer = self.call("LabelValues", {"name": name,
                                           "matchers": list(matchers),
                                           "start": start_ms, "end": end_ms})
        return answer.get("names", [])

    def series(self, matchers, start_ms, end_ms, label_names=()):
        """[{name: value}] of every series matching one of `matchers`."""
        answer = self.call("Series", {"matchers": list(matchers),
                                      "labelNames": list(label_names),
                                      "start": start_ms, "end": end_ms})
        return [{p["name"]: p["value"] for p in s.get("labels", [])}
                for s in answer.get("labelsSet", [])]

    def select_merge_stacktraces(self, profile_type, selector, start_ms,
                                 end_ms, span_ids=None):
        """The merged flame graph {names, levels, total, maxSelf}; with
        `span_ids`, only samples carrying one of those span_id labels."""
        request = {"profileTypeID": profile_type, "labelSelector": selector,
                   "start": start_ms, "end": end_ms, "maxNodes": MAX_NODES}
        if span_ids is not None:
            request["spanSelector"] = list(span_ids)
        answer = self.call("SelectMergeStacktraces", request)
        graph = answer.get("flamegraph", {})
        graph["total"] = int(graph.get("total", 0))
        return graph

    def select_merge_span_profile(self, profile_type, selector, span_ids,
                                  start_ms, end_ms):
        answer = self.call("SelectMergeSpanProfile", {
            "profileTypeID": profile_type, "labelSelector": selector,
            "spanSelector": list(span_ids), "start": start_ms, "end": end_ms,
            "maxNodes": MAX_NODES})
        graph = answer.get("flamegraph", {})
        graph["total"] = int(graph.get("total", 0))
        return graph

    def select_merge_profile(self, profile_type, selector, start_ms, end_ms):
        """The merged profile as google.v1.Profile JSON (int64s as
        strings, as protobuf's JSON mapping writes them)."""
        return self.call("SelectMergeProfile", {
            "profileTypeID": profile_type, "labelSelector": selector,
            "start": start_ms, "end": end_ms})

    def wait_for(self, predicate, what, timeout_s=60):
        """Polls `predicate()` (may raise QueryError while data settles)
        until it returns a true value, which is returned; AssertionError
        naming `what` and the last error after `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        last = None
        while True:
            try:
                value = predicate()
                if value:
                    return value
            except QueryError as e:
                last = e
            if time.monotonic() > deadline:
                raise AssertionError("timed out after %d s waiting for %s%s"
                                     % (timeout_s, what,
                                        " (last error: %s)" % last
                                        if last else ""))
            time.sleep(0.5)


def self_by_function(graph):
    """{function name: self value} of a flame graph (levels of quads
    offset, total, self, name index)."""
    names = graph.get("names", [])
    out = {}
    for level in graph.get("levels", []):
        values = [int(v) for v in level.get("values", [])]
        for i in range(0, len(values) - 3, 4):
            self_value = values[i + 2]
            if self_value:
                name = names[values[i + 3]]
                out[name] = out.get(name, 0) + self_value
    return out


def total_by_function(graph):
    """{function name: inclusive value}, each function counted once per
    stack (recursion does not double it)."""
    names = graph.get("names", [])
    out = {}
    # Walk levels keeping, per node, the set of names above it.
    parents = [(0, 1 << 62, frozenset())]  # (start, end, names) of level -1
    for level in graph.get("levels", []):
        values = [int(v) for v in level.get("values", [])]
        current, x, p = [], 0, 0
        for i in range(0, len(values) - 3, 4):
            x += values[i]
            total, name = values[i + 1], names[values[i + 3]]
            while p < len(parents) and parents[p][1] <= x:
                p += 1
            above = parents[p][2] if p < len(parents) else frozenset()
            if name not in above:
                out[name] = out.get(name, 0) + total
            current.append((x, x + total, above | {name}))
            x += total
        parents = current
    return out
