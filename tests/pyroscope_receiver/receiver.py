#!/usr/bin/python3
"""A local stand-in for Grafana Pyroscope's ingestion endpoint.

It speaks the two protocols ringprof ships with (the Connect unary Push API
and the legacy /ingest handler), enforces the validation rules Grafana
Pyroscope v2.2.1 applies with its default limits, with its messages (each
rule cites its source; README.md has the table), records every accepted
profile and every rejection, and
injects scriptable faults: down/up, status codes with Retry-After, slow
responses, TLS with a self-signed CA.

It is deliberately strict where Pyroscope is strict. Do not relax a rule to
make a client pass: fix the client.

Runs with Debian's /usr/bin/python3 (python3-protobuf); the Python modules for
proto/*.proto are generated with protoc into a temporary directory at start.
"""

import argparse
import atexit
import base64
import gzip
import http.server
import json
import os
import re
import shutil
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zlib

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Grafana Pyroscope's default limits (v2.2.1 pkg/validation/limits.go,
# RegisterFlags).
MAX_LABEL_NAMES_PER_SERIES = 30       # validation.max-label-names-per-series
MAX_LABEL_NAME_LENGTH = 1024          # validation.max-length-label-name
MAX_LABEL_VALUE_LENGTH = 2048         # validation.max-length-label-value
MAX_PROFILE_SIZE_BYTES = 4 * 1024 * 1024  # validation.max-profile-size-bytes
MAX_PROFILE_SAMPLES = 16000           # validation.max-profile-stacktrace-samples
MAX_SAMPLE_LABELS = 100               # ...max-profile-stacktrace-sample-labels
MAX_STACKTRACE_DEPTH = 1000           # ...max-profile-stacktrace-depth (truncates)
MAX_SYMBOL_VALUE_LENGTH = 65535       # ...max-profile-symbol-value-length (truncates)
REJECT_OLDER_THAN_NS = 3600 * 10**9   # validation.reject-older-than
CREATION_GRACE_PERIOD_NS = 600 * 10**9  # validation.reject-newer-than
INGESTION_RATE_MB = 4                 # distributor.ingestion-rate-limit-mb
INGESTION_BURST_SIZE_MB = 2           # distributor.ingestion-burst-size-mb
BYTES_IN_MB = 1048576                 # limits.go bytesInMB

# Connect error codes and their HTTP status (connectrpc.com protocol spec).
CONNECT_STATUS = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "resource_exhausted": 429,
    "unknown": 500,
    "internal": 500,
    "unimplemented": 501,
    "unavailable": 503,
}
STATUS_CONNECT = {v: k for k, v in CONNECT_STATUS.items() if k != "unknown"}


def load_protos():
    """Generates and imports profile_pb2, push_pb2 and a lenient profile
    module whose string_table is bytes: Go's pprof decoder (vtproto) takes
    any bytes and Pyroscope then refuses a non-UTF-8 string with its own
    message, which the receiver must give too (Python's proto3 decoder would
    fail earlier with a different one)."""
    out = tempfile.mkdtemp(prefix="pyroscope_receiver_pb2_")
    atexit.register(shutil.rmtree, out, True)  # when the interpreter exits
    protos = [os.path.join("proto", p)
              for p in ("profile.proto", "types.proto", "push.proto",
                        "otlp/common.proto", "otlp/resource.proto",
                        "otlp/profiles.proto", "otlp/profiles_service.proto")]
    subprocess.run(["protoc", "--proto_path=" + REPO_ROOT,
                    "--python_out=" + out] + protos, check=True)
    lenient_dir = os.path.join(out, "lenient")
    os.makedirs(os.path.join(lenient_dir, "lenient"))
    with open(os.path.join(REPO_ROOT, "proto", "profile.proto")) as f:
        text = f.read()
    text = re.sub(r"package\s+perftools\.profiles\s*;",
                  "package ringprof_receiver_lenient;", text)
    text = re.sub(r"repeated\s+string\s+string_table\s*=",
                  "repeated bytes string_table =", text)
    text = re.sub(r"option\s+go_package[^;]*;", "", text)
    with open(os.path.join(lenient_dir, "lenient", "profile_lenient.proto"), "w") as f:
        f.write(text)
    subprocess.run(["protoc", "--proto_path=" + lenient_dir, "--python_out=" + out,
                    os.path.join(lenient_dir, "lenient", "profile_lenient.proto")],
                   check=True)
    sys.path.insert(0, out)
    from proto import profile_pb2, push_pb2  # pylint: disable=import-outside-toplevel
    from proto.otlp import profiles_service_pb2  # pylint: disable=import-outside-toplevel
    from lenient import profile_lenient_pb2  # pylint: disable=import-outside-toplevel
    return profile_pb2, push_pb2, profile_lenient_pb2, profiles_service_pb2


profile_pb2, push_pb2, profile_lenient_pb2, profiles_service_pb2 = load_protos()
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import otlp_ingest  # noqa: E402  pylint: disable=wrong-import-position
from google.protobuf import json_format  # noqa: E402


class NotStored(Exception):
    """A profile Pyroscope answers with success but stores nowhere."""


class Rejection(Exception):
    """A request Pyroscope would refuse: connect code + message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def label_pairs_string(labels):
    """phlaremodel.LabelPairsString: {a="1", b="2"} (Go %q quoting)."""
    return "{" + ", ".join("%s=%s" % (n, json.dumps(v, ensure_ascii=False))
                           for n, v in labels) + "}"


def humanize_ibytes(n):
    """go-humanize IBytes: "4.0 MiB", "512 B"."""
    if n < 1024:
        return "%d B" % n
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    e = 0
    v = float(n)
    while v >= 1024 and e < len(units) - 1:
        v /= 1024
        e += 1
    return ("%.1f %s" if v < 10 else "%.0f %s") % (v, units[e])


def humanize_bytes(n):
    """go-humanize Bytes (SI): "4.2 MB"."""
    if n < 1000:
        return "%d B" % n
    units = ["B", "kB", "MB", "GB", "TB"]
    e = 0
    v = float(n)
    while v >= 1000 and e < len(units) - 1:
        v /= 1000
        e += 1
    return ("%.1f %s" if v < 10 else "%.0f %s") % (v, units[e])


def sanitize_legacy_label_name(name):
    """validation.SanitizeLegacyLabelName: (sanitized, ok). Names are
    [a-zA-Z0-9_.], not starting with a digit; dots become underscores.
    Used only with --label-sanitization (v1.x's default)."""
    if not name:
        return name, False
    for i, c in enumerate(name):
        if not (("a" <= c <= "z") or ("A" <= c <= "Z") or c == "_" or
                ("0" <= c <= "9" and i != 0)):
            if c != ".":
                return name, False
    return name.replace(".", "_"), True


def is_valid_utf8(text):
    """Python str from protobuf is always valid; surrogates are not."""
    try:
        text.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def _invalid(ls, why):
    return Rejection("invalid_argument", "invalid labels '%s' with error: %s"
                     % (label_pairs_string(ls), why))


def validate_labels(labels, sanitize=False):
    """labels: list of (name, value) as sent. Mirrors v2.2.1
    pkg/validation/validate.go ValidateLabels with default limits: label
    sanitization off (-validation.disable-label-sanitization=true), so any
    non-empty UTF-8 name is stored as sent; `sanitize` is the v1.x default
    (names [A-Za-z0-9_.] without a leading digit, '.' renamed '_').
    Returns the labels as Pyroscope stores them (sorted)."""
    if not labels:
        raise Rejection("invalid_argument",
                        "error at least one label pair is required per profile")
    ls = sorted(labels, key=lambda kv: kv[0])
    if len(ls) > MAX_LABEL_NAMES_PER_SERIES:
        raise Rejection("invalid_argument",
                        "profile series '%s' has %d label names; limit %d"
                        % (label_pairs_string(ls), len(ls), MAX_LABEL_NAMES_PER_SERIES))
    metric = next((v for n, v in ls if n == "__name__"), "")
    if not metric or not is_valid_utf8(metric):
        raise _invalid(ls, "invalid metric name")
    service = next((v for n, v in ls if n == "service_name"), "")
    if not service:
        raise _invalid(ls, "service name is not provided")
    out = []
    for name, value in ls:
        if len(name.encode("utf-8")) > MAX_LABEL_NAME_LENGTH:
            raise Rejection("invalid_argument",
                            "profile with labels '%s' has label name too long: '%s'"
                            % (label_pairs_string(ls), name))
        if len(value.encode("utf-8")) > MAX_LABEL_VALUE_LENGTH:
            raise Rejection("invalid_argument",
                            "profile with labels '%s' has label value too long: '%s'"
                            % (label_pairs_string(ls), value))
        new_name = name
        if sanitize:
            new_name, ok = sanitize_legacy_label_name(name)
            if not ok:
                raise _invalid(ls, "invalid label name '%s'" % name)
        elif not name or not is_valid_utf8(name):
            raise _invalid(ls, "invalid label name '%s'" % name)
        if not is_valid_utf8(value):
            raise _invalid(ls, "invalid label value '%s'" % value)
        if new_name != name:
            # handleSanitizedLabel: same name and value merge; a different
            # value is a duplicate.
            clash = [v for n, v in ls if n == new_name] + \
                    [v for n, v in out if n == new_name]
            if clash and clash[0] != value:
                raise Rejection("invalid_argument",
                                "profile with labels '%s' has duplicate label name "
                                "'%s' after label name sanitization from '%s'"
                                % (label_pairs_string(ls), new_name, name))
            if clash:
                continue
        elif any(n == new_name for n, _ in out):
            raise Rejection("invalid_argument",
                            "profile with labels '%s' has duplicate label name: '%s'"
                            % (label_pairs_string(ls), name))
        # Stricter than Pyroscope (which treats it as no label): an empty
        # value is always a client bug here.
        if value == "":
            raise Rejection("invalid_argument", "empty value for label %r" % name)
        out.append((new_name, value))
    return sorted(out, key=lambda kv: kv[0])


# Sample labels Pyroscope v2 keeps on samples (pprofsplit); every other
# string sample label becomes a series label.
SAMPLE_LEVEL_LABELS = ("span_id", "trace_id", "profile_id")


def split_series(p, strings, labels):
    """pkg/model/pprofsplit VisitSampleSeries: the distinct label sets the
    samples' string labels make with the series labels (a series label of
    the same name wins)."""
    names = dict(labels)
    sets = set()
    for smp in p.sample:
        extra = {}
        for lab in smp.label:
            if lab.str <= 0:
                continue
            key = strings[lab.key]
            if key in SAMPLE_LEVEL_LABELS or key in names or key in extra:
                continue
            extra[key] = strings[lab.str]
        sets.add(tuple(sorted(extra.items())))
    return [list(labels) + list(extra) for extra in sorted(sets)] or [list(labels)]


def decompress_profile(raw):
    """pprof.RawFromBytesWithLimit: gzip detected by magic; the
    uncompressed size is limited (default 4 MiB: a validation error, 400).
    A corrupt gzip stream is not a validation error: Connect answers it
    500 "unknown" (distributor.Push)."""
    if raw[:2] != b"\x1f\x8b":
        data, gzipped = raw, False
    else:
        try:
            d = zlib.decompressobj(16 + zlib.MAX_WBITS)
            data = d.decompress(raw, MAX_PROFILE_SIZE_BYTES + 1)
            if not d.eof and len(data) <= MAX_PROFILE_SIZE_BYTES:
                raise Rejection("unknown", "copy to buffer: unexpected EOF")
        except zlib.error as e:
            raise Rejection("unknown", "copy to buffer: %s" % e)
        gzipped = True
    if len(data) > MAX_PROFILE_SIZE_BYTES:
        raise Rejection("invalid_argument",
                        "uncompressed profile payload size exceeds limit of %s"
                        % humanize_bytes(MAX_PROFILE_SIZE_BYTES))
    return data, gzipped


def parse_pprof(data):
    """A pprof that does not decode: 500 "unknown" (not a validation error)."""
    p = profile_lenient_pb2.Profile()
    try:
        p.ParseFromString(data)
    except Exception as e:  # pylint: disable=broad-except
        raise Rejection("unknown", "failed to parse profile: %s" % e)
    return p


def validate_pprof(p, size, labels, now_ns):
    """Mirrors v2.2.1 pkg/validation/validate.go ValidateProfile (and
    validateStringTableAccess) with default limits, plus structural rules
    Pyroscope enforces later or not at all (marked "stricter"). `p` is a
    lenient Profile (string_table as bytes). Returns a summary dict."""
    ls = label_pairs_string(labels)
    if not p.sample_type:
        raise Rejection("invalid_argument", "empty profile")
    if p.time_nanos > 0:
        start, end = now_ns - REJECT_OLDER_THAN_NS, now_ns + CREATION_GRACE_PERIOD_NS
        if not (start < p.time_nanos < end):
            raise Rejection("invalid_argument",
                            "profile with labels '%s' is outside of ingestion window "
                            "(profile timestamp: %s, the ingestion window starts at %s "
                            "and ends at %s)" % (ls, fmt_ms(p.time_nanos),
                                                 fmt_ms(start), fmt_ms(end)))
    if size > MAX_PROFILE_SIZE_BYTES:
        raise Rejection("invalid_argument",
                        "the profile with labels '%s' exceeds the size limit "
                        "(max_profile_size_byte, actual: %d, limit: %d)"
                        % (ls, size, MAX_PROFILE_SIZE_BYTES))
    if len(p.sample) > MAX_PROFILE_SAMPLES:
        raise Rejection("invalid_argument",
                        "the profile with labels '%s' exceeds the samples count limit "
                        "(max_profile_stacktrace_samples, actual: %d, limit: %d)"
                        % (ls, len(p.sample), MAX_PROFILE_SAMPLES))
    max_depth = 0
    for smp in p.sample:
        max_depth = max(max_depth, min(len(smp.location_id), MAX_STACKTRACE_DEPTH))
        if len(smp.label) > MAX_SAMPLE_LABELS:
            raise Rejection("invalid_argument",
                            "the profile with labels '%s' exceeds the sample labels limit "
                            "(max_profile_stacktrace_sample_labels, actual: %d, limit: %d)"
                            % (ls, len(smp.label), MAX_SAMPLE_LABELS))
    # Longer symbols are cut to their last 65535 bytes, before the UTF-8
    # check: a cut inside a character makes the profile invalid.
    st = [b if len(b) <= MAX_SYMBOL_VALUE_LENGTH else b[len(b) - MAX_SYMBOL_VALUE_LENGTH:]
          for b in p.string_table]
    for loc in p.location:
        if loc.id == 0:
            raise Rejection("invalid_argument", "location id is 0")
    for f in p.function:
        if f.id == 0:
            raise Rejection("invalid_argument", "function id is 0")
    for smp in p.sample:
        if len(smp.value) != len(p.sample_type):
            raise Rejection("invalid_argument", "sample value length mismatch")
    # validateStringTableAccess
    n = len(st)
    if n == 0 or st[0] != b"":
        raise Rejection("invalid_argument", "string 0 should be empty string")
    for vt in p.sample_type:
        if vt.type >= n:
            raise Rejection("invalid_argument", "sample type type string index out of range")
    for smp in p.sample:
        for lab in smp.label:
            if lab.str >= n or lab.key >= n:
                raise Rejection("invalid_argument", "sample label string index out of range")
    for f in p.function:
        if f.name >= n:
            raise Rejection("invalid_argument", "function name string index out of range")
        if f.system_name >= n:
            raise Rejection("invalid_argument",
                            "function system name index string out of range")
        if f.filename >= n:
            raise Rejection("invalid_argument", "function file name string index out of range")
    for m in p.mapping:
        if m.filename >= n:
            raise Rejection("invalid_argument", "mapping file name string index out of range")
        if m.build_id >= n:
            raise Rejection("invalid_argument", "mapping build id string index out of range")
    for vt in p.sample_type:
        if b"-" in st[vt.type]:
            raise Rejection("invalid_argument", "sample type contains -")
    strings = []
    for b in st:
        try:
            strings.append(b.decode("utf-8"))
        except UnicodeDecodeError:
            raise Rejection("invalid_argument", "invalid utf8 string hex: %s" % b.hex())

    # Stricter than Pyroscope's validation (it would break later, or store
    # a profile pprof tools cannot read): every index and id resolves, the
    # unit and period type are set, sample type names are not empty.
    def s(i, what):
        if i < 0 or i >= n:
            raise Rejection("invalid_argument",
                            "%s: string index %d out of range" % (what, i))
        return strings[i]

    sample_types = []
    for vt in p.sample_type:
        t, u = s(vt.type, "sample_type"), s(vt.unit, "sample_type unit")
        if not t:
            raise Rejection("invalid_argument", "invalid sample type name %r" % t)
        sample_types.append("%s:%s" % (t, u))
    if p.period_type.type == 0:
        raise Rejection("invalid_argument", "period_type is not set")
    period_type = "%s:%s" % (s(p.period_type.type, "period_type"),
                             s(p.period_type.unit, "period_type unit"))
    function_ids = {f.id for f in p.function}
    mapping_ids = {m.id for m in p.mapping}
    for m in p.mapping:
        if m.id == 0:
            raise Rejection("invalid_argument", "mapping id is 0")
    location_ids = set()
    for loc in p.location:
        if loc.mapping_id != 0 and loc.mapping_id not in mapping_ids:
            raise Rejection("invalid_argument",
                            "location %d references unknown mapping" % loc.id)
        for line in loc.line:
            if line.function_id not in function_ids:
                raise Rejection("invalid_argument",
                                "location %d references unknown function %d"
                                % (loc.id, line.function_id))
        location_ids.add(loc.id)
    totals = [0] * len(p.sample_type)
    label_keys = set()
    for smp in p.sample:
        for lid in smp.location_id:
            if lid not in location_ids:
                raise Rejection("invalid_argument",
                                "sample references unknown location %d" % lid)
        for i, v in enumerate(smp.value):
            totals[i] += v
        for lab in smp.label:
            if lab.str:
                label_keys.add(strings[lab.key])
    return {
        "sample_types": sample_types,
        "period_type": period_type,
        "period": p.period,
        "time_nanos": p.time_nanos,
        "duration_nanos": p.duration_nanos,
        "num_samples": len(p.sample),
        "max_depth": max_depth,
        "totals": totals,
        # String labels on samples become series labels in Pyroscope.
        "sample_label_keys": sorted(label_keys),
        "uncompressed_size": size,
        "mapping_files": sorted({strings[m.filename] for m in p.mapping}),
        "functions": sorted({strings[f.name] for f in p.function}),
    }


def fmt_ms(ns):
    """util.FormatTimeMillis: RFC 3339 with milliseconds, UTC."""
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ns // 10**9)) + \
        ".%03dZ" % ((ns // 10**6) % 1000)


class TokenBucket:
    """golang.org/x/time/rate.Limiter as the distributor's per-tenant
    ingestion limiter uses it: AllowN(now, n) is false when n exceeds the
    burst (always) or the tokens available; tokens refill at `rate`/s."""

    def __init__(self, rate, burst):
        self.rate = rate
        self.burst = burst
        self.tokens = float(burst)
        self.last = time.monotonic()

    def allow_n(self, n):
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.rate)
        self.last = now
        if self.rate == 0:
            return True  # 0 disables the limit (tests of the client alone)
        if n > self.tokens:
            return False
        self.tokens -= n
        return True


def rate_limit(state, tenant, labels, size):
    """distributor.rateLimit: labels' bytes plus the uncompressed profile
    (calculateRequestSize) against the tenant's token bucket; 429
    resource_exhausted otherwise (never with Retry-After)."""
    cost = size + sum(len(n.encode()) + len(v.encode()) for n, v in labels)
    with state.lock:
        bucket = state.buckets.get(tenant)
        if bucket is None:
            bucket = state.buckets[tenant] = TokenBucket(
                state.args.ingestion_rate_mb * BYTES_IN_MB,
                int(state.args.ingestion_burst_size_mb * BYTES_IN_MB))
        ok = bucket.allow_n(cost)
    if not ok:
        raise Rejection("resource_exhausted",
                        "push rate limit (%s) exceeded while adding %s"
                        % (humanize_ibytes(int(state.args.ingestion_rate_mb * BYTES_IN_MB)),
                           humanize_ibytes(cost)))


def ingest_series(state, tenant, labels, raw_profile, now_ns):
    """One profile of a push (distributor.Push + pushSeries): decompress,
    service_name fallback, rate limit, ValidateProfile, ValidateLabels."""
    data, gzipped = decompress_profile(raw_profile)
    p = parse_pprof(data)
    labels = list(labels)
    service = next((v for n, v in labels if n == "service_name"), "")
    if service == "":
        labels.append(("service_name", "unknown_service"))
    labels.sort(key=lambda kv: kv[0])
    rate_limit(state, tenant, labels, len(data))
    summary = validate_pprof(p, len(data), labels, now_ns)
    # pprof.Normalize drops samples with a negative or no value; a profile
    # left empty is answered success and stored nowhere.
    kept = [smp for smp in p.sample
            if all(v >= 0 for v in smp.value) and any(v != 0 for v in smp.value)]
    if not kept:
        raise NotStored()
    # Pyroscope drops __session_id__ unless validation.max-sessions-per-series
    # is set (distributor.limitMaxSessionsPerSeries; default 0), before it
    # splits the profile by sample labels and checks each series' labels.
    labels = [(n, v) for n, v in labels if n != "__session_id__"]
    strings = [b[-MAX_SYMBOL_VALUE_LENGTH:].decode("utf-8") for b in p.string_table]
    del p.sample[:]
    p.sample.extend(kept)
    sanitize = state.args.label_sanitization
    series = [dict(validate_labels(ls, sanitize))
              for ls in split_series(p, strings, labels)]
    stored = validate_labels(labels, sanitize)
    for one in series:
        check_series_limit(state, tenant, sorted(one.items()))
    return dict(summary, gzipped=gzipped, stored_labels=dict(stored),
                stored_series=series)


def check_series_limit(state, tenant, stored):
    """The ingester's per-tenant series limit (pkg/ingester/limiter.go
    allowNewSeries; ingester.max-global-series-per-tenant, default 5000, on
    one ingester): a new series beyond it is refused with 429. Series here
    never go inactive (Pyroscope forgets idle ones after a while)."""
    limit = state.args.max_series
    key = tuple(stored)
    with state.lock:
        series = state.series.setdefault(tenant, set())
        if key in series or limit == 0 or len(series) < limit:
            series.add(key)
            return
        count = len(series)
    raise Rejection("resource_exhausted",
                    "Maximum active series limit exceeded (%d/%d), reduce the number of "
                    "active streams (reduce labels or reduce label values), or contact "
                    "your administrator to see if the limit can be increased"
                    % (count, limit))


class State:
    """Everything the control endpoint reads and writes. Guarded by lock."""

    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.accepted = []
        self.rejected = []
        self.requests = 0
        self.faults = []  # list of dicts with "count"
        self.down = False
        self.buckets = {}  # tenant -> TokenBucket
        self.series = {}  # tenant -> set of stored label tuples
        self.record_file = open(args.record, "a") if args.record else None
        self.otlp_bodies = 0

    def next_fault(self, labels):
        """The first pending fault for a request with series `labels`
        (name -> value): a fault with "when_label": [name, value] applies
        only to requests carrying that label."""
        with self.lock:
            self.requests += 1
            self.faults = [f for f in self.faults if f["count"] > 0]
            for f in self.faults:
                when = f.get("when_label")
                if when and labels.get(when[0]) != when[1]:
                    continue
                f["count"] -= 1
                return dict(f)
            return None

    def record(self, kind, entry):
        if "labels" in entry:
            # Also as a list of pairs, for clients that cannot use maps.
            entry["label_list"] = [{"name": k, "value": v}
                                   for k, v in entry["labels"].items()]
        if "stored_labels" in entry:
            entry["stored_label_list"] = [{"name": k, "value": v}
                                          for k, v in entry["stored_labels"].items()]
        with self.lock:
            (self.accepted if kind == "accepted" else self.rejected).append(entry)
            if self.record_file:
                self.record_file.write(json.dumps(dict(entry, kind=kind)) + "\n")
                self.record_file.flush()


def check_auth(state, headers):
    args = state.args
    if args.tenant is not None or args.require_tenant:
        org = headers.get("X-Scope-OrgID")
        if not org:
            raise Rejection("unauthenticated", "no org id")
        if args.tenant is not None and org != args.tenant:
            raise Rejection("unauthenticated", "unknown tenant")
    if args.basic_auth or args.bearer_token:
        auth = headers.get("Authorization", "")
        ok = False
        if args.basic_auth and auth.startswith("Basic "):
            try:
                ok = base64.b64decode(auth[6:]).decode() == args.basic_auth
            except Exception:  # pylint: disable=broad-except
                ok = False
        if args.bearer_token and auth == "Bearer " + args.bearer_token:
            ok = True
        if not ok:
            raise Rejection("unauthenticated", "invalid credentials")
    return headers.get("X-Scope-OrgID", "")


def handle_push(state, headers, body):
    ctype = headers.get("Content-Type", "").split(";")[0].strip()
    if ctype not in ("application/proto", "application/json"):
        # Connect answers an unknown unary codec with 415 and no error body.
        raise Rejection("unsupported_media_type", "unsupported content type %r" % ctype)
    encoding = headers.get("Content-Encoding", "identity")
    if encoding == "gzip":
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError) as e:
            raise Rejection("invalid_argument", "bad gzip request body: %s" % e)
    elif encoding not in ("", "identity"):
        raise Rejection("unimplemented", "unknown compression %r" % encoding)
    tenant = check_auth(state, headers)
    req = push_pb2.PushRequest()
    try:
        if ctype == "application/json":
            json_format.Parse(body.decode("utf-8"), req)
        else:
            req.ParseFromString(body)
    except Exception as e:  # pylint: disable=broad-except
        raise Rejection("invalid_argument", "cannot decode PushRequest: %s" % e)
    now_ns = time.time_ns()
    entries, errors = [], []
    # Every profile is pushed on its own; the valid ones are ingested even
    # when another of the same request fails (distributor.PushBatch), and
    # the request then fails with the errors.
    for series in req.series:
        labels = [(l.name, l.value) for l in series.labels]
        for sample in series.samples:
            try:
                summary = ingest_series(state, tenant, labels, sample.raw_profile, now_ns)
            except Rejection as r:
                errors.append(r)
                continue
            except NotStored:
                continue
            # Pyroscope stores the profile under a new UUID
            # (sendRequestsToIngester: series.ID = uuid.NewString()); `id`
            # is what the client sent.
            entries.append(dict(summary, labels=dict(labels), id=sample.ID,
                                tenant=tenant, api="push", received_ns=now_ns))
    if not req.series or not any(series.samples for series in req.series):
        raise Rejection("invalid_argument", "no profiles received")
    return entries, errors


def handle_otlp(state, headers, body):
    """POST /v1development/profiles, HTTP/protobuf (Pyroscope v2's OTLP
    ingest handler: 415 for another Content-Type, gzip by
    Content-Encoding). Each profile is converted (otlp_ingest.py) and then
    ingested like a pushed one; with --otlp-body-dir the decompressed body
    is kept for decoders to check."""
    ctype = headers.get("Content-Type", "").split(";")[0].strip()
    if ctype not in ("application/x-protobuf", "application/protobuf"):
        raise Rejection("unsupported_media_type", "Unsupported Content-Type: %s" % ctype)
    gzipped = headers.get("Content-Encoding", "").lower() == "gzip"
    if gzipped:
        try:
            body = gzip.decompress(body)
        except (OSError, EOFError):
            raise Rejection("invalid_argument", "Failed to read request body")
    tenant = check_auth(state, headers)
    req = profiles_service_pb2.ExportProfilesServiceRequest()
    try:
        req.ParseFromString(body)
    except Exception:  # pylint: disable=broad-except
        raise Rejection("invalid_argument", "Failed to parse protobuf request")
    if state.args.otlp_body_dir:
        with state.lock:
            state.otlp_bodies += 1
            n = state.otlp_bodies
        with open(os.path.join(state.args.otlp_body_dir, "%06d.pb" % n), "wb") as f:
            f.write(body)
    try:
        converted = otlp_ingest.convert(req, profile_pb2)
    except otlp_ingest.ConversionError as e:
        raise Rejection("invalid_argument", "failed to convert otel profile: %s" % e)
    now_ns = time.time_ns()
    entries, errors = [], []
    for labels, data in converted:
        try:
            summary = ingest_series(state, tenant, labels, data, now_ns)
        except Rejection as r:
            errors.append(r)
            continue
        entries.append(dict(summary, labels=dict(labels), tenant=tenant,
                            api="otlp", gzipped=gzipped, received_ns=now_ns,
                            resource={kv.key: _any_value(kv.value)
                                      for rp in req.resource_profiles
                                      for kv in rp.resource.attributes}))
    return entries, errors


def _any_value(v):
    kind = v.WhichOneof("value")
    return getattr(v, kind) if kind in ("string_value", "int_value",
                                        "bool_value", "double_value") else None


def label_name_rune_ok(c):
    return ("a" <= c <= "z") or ("A" <= c <= "Z") or ("0" <= c <= "9") or c in "_."


def parse_legacy_name(name):
    """api/model/labelset.Parse (v1.21.1), the /ingest `name` query: the
    application name, then {k=v,...}. The app name may hold [A-Za-z0-9_.-/]
    only; a tag value ends at ',' or '}' (what follows a '}' is ignored)."""
    labels = {}
    state, key, value = "name", "", ""
    for c in name + "{":
        if state == "name":
            if c == "{":
                state = "tags"
                service = value.strip()
                if not service:
                    raise Rejection("invalid_argument", "name: service name is required")
                for r in service:
                    if not (label_name_rune_ok(r) or r in "-/"):
                        raise Rejection("invalid_argument",
                                        "name: invalid service name: %s: character is "
                                        "not allowed: %s" % (service, go_quote_rune(r)))
                labels["__name__"] = service
            else:
                value += c
        elif state == "tags":
            if c == "}":
                state = "done"
            elif c == "=":
                state, value = "value", ""
            else:
                key += c
        elif state == "value":
            if c in ",}":
                state = "tags"
                k = key.strip()
                if k != "__name__":
                    if not k:
                        raise Rejection("invalid_argument", "name: label name is required")
                    for r in k:
                        if not label_name_rune_ok(r):
                            raise Rejection("invalid_argument",
                                            "name: invalid label name: %s: character is "
                                            "not allowed: %s" % (k, go_quote_rune(r)))
                labels[k] = value.strip()
                key = ""
            else:
                value += c
    return labels


def go_quote_rune(r):
    """Go's %q of a rune: 'x'."""
    return "'" + (r if r.isprintable() and r not in "'\\" else
                  json.dumps(r)[1:-1]) + "'"


def parse_legacy_time(text):
    """Unix time in s, ms, µs or ns, by digit count (Pyroscope's attime)."""
    if not text.isdigit():
        raise Rejection("invalid_argument", "invalid time %r" % text)
    v = int(text)
    digits = len(text)
    if digits <= 10:
        return v * 10**9
    if digits <= 13:
        return v * 10**6
    if digits <= 16:
        return v * 10**3
    return v


def handle_ingest(state, headers, query, body):
    tenant = check_auth(state, headers)
    q = urllib.parse.parse_qs(query, keep_blank_values=True)
    name = q.get("name", [""])[0]
    parsed = parse_legacy_name(name)
    if q.get("format", [""])[0] != "pprof":
        raise Rejection("invalid_argument", "only format=pprof is supported here")
    from_ns = parse_legacy_time(q.get("from", ["0"])[0])
    until_ns = parse_legacy_time(q.get("until", ["0"])[0])
    # The ingest adapter: the labelset's __name__ is the service; the
    # profile's name comes from its sample types (process_cpu for ours).
    labels = [("service_name", parsed.pop("__name__"))] + sorted(parsed.items())
    labels.append(("__name__", "process_cpu"))
    now_ns = time.time_ns()
    summary = ingest_series(state, tenant, labels, body, now_ns)
    return [dict(summary, labels=dict(labels), id="",
                 tenant=tenant, api="ingest", from_ns=from_ns,
                 until_ns=until_ns, spy_name=q.get("spyName", [""])[0],
                 received_ns=now_ns)], []


def request_id_and_labels(headers, body):
    """The first RawSample.ID and series labels of a binary push body, for
    fault matching and records."""
    if headers.get("Content-Type", "") != "application/proto":
        return "", {}
    try:
        req = push_pb2.PushRequest()
        req.ParseFromString(body)
        series = req.series[0]
        return series.samples[0].ID, {l.name: l.value for l in series.labels}
    except Exception:  # pylint: disable=broad-except
        return "", {}


class QuietServer(http.server.ThreadingHTTPServer):
    """Clients that give up (timeouts) are expected: no tracebacks."""

    allow_reuse_address = True
    daemon_threads = True

    def handle_error(self, request, client_address):
        if not isinstance(sys.exc_info()[1], (ConnectionError, ssl.SSLError)):
            super().handle_error(request, client_address)


class IngestHandler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "pyroscope-receiver"

    def log_message(self, fmt, *args):  # noqa: N802
        if self.server.state.args.verbose:
            sys.stderr.write("receiver: " + (fmt % args) + "\n")

    def do_POST(self):  # noqa: N802
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        if state.down:
            # A listener torn down mid-connection: no response at all.
            self.close_connection = True
            return
        fault_id, fault_labels = request_id_and_labels(self.headers, body)
        fault = state.next_fault(fault_labels)
        if fault and fault.get("delay_ms"):
            time.sleep(fault["delay_ms"] / 1000.0)
        partial = fault.get("partial_success") if fault else None
        if fault and fault.get("status"):
            self.reply_error(fault["status"],
                             STATUS_CONNECT.get(fault["status"], "unknown"),
                             fault.get("message", "injected fault"),
                             retry_after=fault.get("retry_after"))
            state.record("rejected", {"status": fault["status"], "fault": True,
                                      "message": fault.get("message", ""),
                                      "id": fault_id, "labels": fault_labels,
                                      "received_ns": time.time_ns()})
            return
        url = urllib.parse.urlsplit(self.path)
        entries = []
        try:
            if url.path == "/push.v1.PusherService/Push":
                entries, errors = handle_push(state, self.headers, body)
            elif url.path == "/ingest":
                entries, errors = handle_ingest(state, self.headers, url.query, body)
            elif url.path == "/v1development/profiles":
                entries, errors = handle_otlp(state, self.headers, body)
            else:
                raise Rejection("not_found", "no such endpoint %s" % url.path)
            if errors:
                raise Rejection(errors[0].code, "; ".join(e.message for e in errors))
        except Rejection as r:
            for e in entries:
                state.record("accepted", e)
            status = 415 if r.code == "unsupported_media_type" else CONNECT_STATUS[r.code]
            state.record("rejected", {"status": status, "code": r.code,
                                      "message": r.message, "path": url.path,
                                      "received_ns": time.time_ns()})
            if status == 415:
                self.send_response(415)
                self.send_header("Content-Length", "0")
                self.end_headers()
            elif url.path == "/ingest":
                # The legacy handler answers with a plain-text message.
                payload = (r.message + "\n").encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)
            else:
                self.reply_error(status, r.code, r.message)
            return
        for e in entries:
            state.record("accepted", e)
        ctype = self.headers.get("Content-Type", "application/proto").split(";")[0]
        payload = b"{}" if ctype == "application/json" else b""
        if url.path == "/v1development/profiles":
            # An ExportProfilesServiceResponse: empty, or the partial
            # success a fault asked for (the profiles are still ingested).
            response = profiles_service_pb2.ExportProfilesServiceResponse()
            if partial:
                response.partial_success.rejected_profiles = partial.get(
                    "rejected_profiles", 1)
                response.partial_success.error_message = partial.get(
                    "error_message", "injected partial success")
            ctype, payload = "application/x-protobuf", response.SerializeToString()
        self.send_response(200)
        self.send_header("Content-Type", ctype if url.path != "/ingest" else "text/plain")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def reply_error(self, status, code, message, retry_after=None):
        payload = json.dumps({"code": code, "message": message}).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        if retry_after is not None:
            self.send_header("Retry-After", str(retry_after))
        self.end_headers()
        self.wfile.write(payload)


class ControlHandler(http.server.BaseHTTPRequestHandler):
    """GET /accepted /rejected /stats; POST /down /up /fault /clear."""

    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):  # noqa: N802
        pass

    def reply(self, obj, status=200):
        payload = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def do_GET(self):  # noqa: N802
        state = self.server.state
        with state.lock:
            if self.path == "/accepted":
                return self.reply(state.accepted)
            if self.path == "/rejected":
                return self.reply(state.rejected)
            if self.path == "/stats":
                return self.reply({"accepted": len(state.accepted),
                                   "rejected": len(state.rejected),
                                   "requests": state.requests,
                                   "down": state.down,
                                   "pending_faults": sum(f["count"] for f in state.faults)})
        return self.reply({"error": "not found"}, 404)

    def do_POST(self):  # noqa: N802
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length) if length else b""
        if self.path == "/down":
            self.server.ingest.set_down(True)
        elif self.path == "/up":
            self.server.ingest.set_down(False)
        elif self.path == "/fault":
            fault = json.loads(body or b"{}")
            fault.setdefault("count", 1)
            with state.lock:
                state.faults.append(fault)
        elif self.path == "/clear":
            with state.lock:
                state.accepted.clear()
                state.rejected.clear()
                state.faults.clear()
                state.requests = 0
        else:
            return self.reply({"error": "not found"}, 404)
        return self.reply({"ok": True})


class IngestServer:
    """The ingestion listener, which can be closed (down) and reopened (up) on
    the same port so clients see connection refused while it is down."""

    def __init__(self, state, bind, port, ssl_context):
        self.state = state
        self.bind = bind
        self.port = port
        self.ssl_context = ssl_context
        self.httpd = None
        self.thread = None
        self.mu = threading.Lock()
        self.set_down(False)

    def set_down(self, down):
        with self.mu:
            self.state.down = down
            if down and self.httpd:
                self.httpd.shutdown()
                self.httpd.server_close()
                self.httpd = None
            elif not down and not self.httpd:
                httpd = QuietServer((self.bind, self.port), IngestHandler)
                if self.ssl_context:
                    httpd.socket = self.ssl_context.wrap_socket(httpd.socket,
                                                                server_side=True)
                httpd.state = self.state
                self.port = httpd.server_address[1]
                self.httpd = httpd
                self.thread = threading.Thread(target=httpd.serve_forever,
                                               daemon=True)
                self.thread.start()


def make_self_signed(directory):
    """Creates DIR/ca.pem (a CA) and DIR/server.{pem,key} for 127.0.0.1."""
    os.makedirs(directory, exist_ok=True)
    ca_key = os.path.join(directory, "ca.key")
    ca_pem = os.path.join(directory, "ca.pem")
    key = os.path.join(directory, "server.key")
    csr = os.path.join(directory, "server.csr")
    pem = os.path.join(directory, "server.pem")
    ext = os.path.join(directory, "san.ext")
    with open(ext, "w") as f:
        f.write("subjectAltName=IP:127.0.0.1,DNS:localhost\n"
                "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
                "extendedKeyUsage=serverAuth\n")
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "check": True}
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", ca_key, "-out", ca_pem, "-days", "2",
                    "-subj", "/CN=pyroscope-receiver test CA"], **quiet)
    subprocess.run(["openssl", "req", "-newkey", "rsa:2048", "-nodes",
                    "-keyout", key, "-out", csr, "-subj", "/CN=127.0.0.1"], **quiet)
    subprocess.run(["openssl", "x509", "-req", "-in", csr, "-CA", ca_pem,
                    "-CAkey", ca_key, "-CAcreateserial", "-out", pem,
                    "-days", "2", "-extfile", ext], **quiet)
    return pem, key


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bind", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0, help="0 picks a free port")
    ap.add_argument("--control-port", type=int, default=0)
    ap.add_argument("--ready-file",
                    help="written (atomically) once listening: JSON with "
                         "port, control_port, url")
    ap.add_argument("--record", help="append accepted/rejected entries as JSONL")
    ap.add_argument("--otlp-body-dir",
                    help="keep every OTLP request body (decompressed) here")
    ap.add_argument("--require-tenant", action="store_true",
                    help="multi-tenancy: 401 without X-Scope-OrgID")
    ap.add_argument("--tenant", help="accept only this X-Scope-OrgID")
    ap.add_argument("--basic-auth", help="USER:PASSWORD required")
    ap.add_argument("--bearer-token", help="Bearer token accepted")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--self-signed-tls", metavar="DIR",
                    help="generate DIR/ca.pem and a server cert; serve https")
    ap.add_argument("--ingestion-rate-mb", type=float, default=INGESTION_RATE_MB,
                    help="per-tenant ingestion rate, MiB/s (Pyroscope default "
                         "4; 0 disables the limiter)")
    ap.add_argument("--ingestion-burst-size-mb", type=float,
                    default=INGESTION_BURST_SIZE_MB,
                    help="per-tenant burst, MiB (Pyroscope default 2): a "
                         "profile larger than this is refused with 429")
    ap.add_argument("--max-series", type=int, default=0,
                    help="series per tenant, as Pyroscope v1's storage limits "
                    "them (its default 5000); 0 (default): no limit, as v2")
    ap.add_argument("--label-sanitization", action="store_true",
                    help="v1.x label names: [A-Za-z0-9_.] without a leading "
                    "digit, '.' renamed '_' (v2: "
                    "-validation.disable-label-sanitization=false)")
    ap.add_argument("--start-down", action="store_true")
    ap.add_argument("--verbose", action="store_true")
    ap.add_argument("--exit-with-parent", action="store_true",
                    help="exit when the process that started us exits")
    args = ap.parse_args()

    if args.exit_with_parent:
        parent = os.getppid()

        def watch_parent():
            while os.getppid() == parent:
                time.sleep(0.2)
            os._exit(0)
        threading.Thread(target=watch_parent, daemon=True).start()

    ssl_context = None
    if args.self_signed_tls:
        args.tls_cert, args.tls_key = make_self_signed(args.self_signed_tls)
    if args.tls_cert:
        ssl_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ssl_context.load_cert_chain(args.tls_cert, args.tls_key)

    state = State(args)
    ingest = IngestServer(state, args.bind, args.port, ssl_context)
    control = http.server.ThreadingHTTPServer((args.bind, args.control_port),
                                              ControlHandler)
    control.daemon_threads = True
    control.state = state
    control.ingest = ingest
    if args.start_down:
        ingest.set_down(True)

    scheme = "https" if ssl_context else "http"
    info = {"port": ingest.port, "control_port": control.server_address[1],
            "url": "%s://%s:%d" % (scheme, args.bind, ingest.port)}
    if args.ready_file:
        tmp = args.ready_file + ".tmp"
        with open(tmp, "w") as f:
            json.dump(info, f)
        os.rename(tmp, args.ready_file)
    print(json.dumps(info), flush=True)
    try:
        control.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
