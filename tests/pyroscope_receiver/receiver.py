#!/usr/bin/python3
"""A local stand-in for Grafana Pyroscope's ingestion endpoint.

It speaks the two protocols ringprof ships with (the Connect unary Push API
and the legacy /ingest handler), enforces the validation rules Pyroscope's
distributor applies with its default limits (see ../../shared notes §6 and
README.md here), records every accepted profile and every rejection, and
injects scriptable faults: down/up, status codes with Retry-After, slow
responses, TLS with a self-signed CA.

It is deliberately strict where Pyroscope is strict. Do not relax a rule to
make a client pass: fix the client.

Runs with Debian's /usr/bin/python3 (python3-protobuf); the Python modules for
proto/*.proto are generated with protoc into a temporary directory at start.
"""

import argparse
import base64
import gzip
import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))

# Pyroscope's default limits (pkg/validation/limits.go).
MAX_LABEL_NAMES_PER_SERIES = 30
MAX_LABEL_NAME_LENGTH = 1024
MAX_LABEL_VALUE_LENGTH = 2048
MAX_PROFILE_SIZE_BYTES = 4 * 1024 * 1024
MAX_PROFILE_SAMPLES = 16000
REJECT_OLDER_THAN_NS = 3600 * 10**9
CREATION_GRACE_PERIOD_NS = 600 * 10**9

LABEL_NAME_RE = re.compile(r"^[A-Za-z0-9_.]+$")
# Legacy application names: letters, digits and ._- (pyroscope flameql).
APP_NAME_RE = re.compile(r"^[A-Za-z0-9_.\-]+$")

# Connect error codes and their HTTP status (connectrpc.com protocol spec).
CONNECT_STATUS = {
    "invalid_argument": 400,
    "unauthenticated": 401,
    "permission_denied": 403,
    "not_found": 404,
    "resource_exhausted": 429,
    "internal": 500,
    "unimplemented": 501,
    "unavailable": 503,
}
STATUS_CONNECT = {v: k for k, v in CONNECT_STATUS.items()}


def load_protos():
    """Generates and imports profile_pb2, types_pb2 and push_pb2."""
    out = tempfile.mkdtemp(prefix="pyroscope_receiver_pb2_")
    protos = [os.path.join("proto", p)
              for p in ("profile.proto", "types.proto", "push.proto")]
    subprocess.run(["protoc", "--proto_path=" + REPO_ROOT,
                    "--python_out=" + out] + protos, check=True)
    sys.path.insert(0, out)
    from proto import profile_pb2, push_pb2  # pylint: disable=import-outside-toplevel
    return profile_pb2, push_pb2


profile_pb2, push_pb2 = load_protos()
from google.protobuf import json_format  # noqa: E402


class Rejection(Exception):
    """A request Pyroscope would refuse: connect code + message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message


def maybe_gunzip(data):
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data), True
        except (OSError, EOFError) as e:
            raise Rejection("invalid_argument", "failed to decompress profile: %s" % e)
    return data, False


def validate_labels(labels):
    """labels: list of (name, value) as sent. Mirrors validation.ValidateLabels."""
    if len(labels) > MAX_LABEL_NAMES_PER_SERIES:
        raise Rejection("invalid_argument",
                        "profile series has %d label names; limit %d"
                        % (len(labels), MAX_LABEL_NAMES_PER_SERIES))
    names = [n for n, _ in labels]
    if "__name__" not in names:
        raise Rejection("invalid_argument", "profile series without __name__ label")
    seen = set()
    for name, value in labels:
        if len(name) > MAX_LABEL_NAME_LENGTH:
            raise Rejection("invalid_argument", "label name too long: %r" % name[:64])
        if len(value) > MAX_LABEL_VALUE_LENGTH:
            raise Rejection("invalid_argument",
                            "label value too long for label %r" % name)
        if not LABEL_NAME_RE.match(name):
            raise Rejection("invalid_argument", "invalid label name %r" % name)
        if value == "":
            raise Rejection("invalid_argument", "empty value for label %r" % name)
        if name in seen:
            raise Rejection("invalid_argument", "duplicate label name %r" % name)
        seen.add(name)


def validate_utf8(raw, what):
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise Rejection("invalid_argument", "%s is not valid UTF-8" % what)


def validate_pprof(data, now_ns):
    """Parses and validates one uncompressed pprof. Returns a summary dict."""
    if len(data) > MAX_PROFILE_SIZE_BYTES:
        raise Rejection("invalid_argument",
                        "uncompressed profile payload size exceeds limit of %d bytes"
                        % MAX_PROFILE_SIZE_BYTES)
    p = profile_pb2.Profile()
    try:
        p.ParseFromString(data)
    except Exception as e:  # pylint: disable=broad-except
        raise Rejection("invalid_argument", "failed to parse profile: %s" % e)
    st = p.string_table
    if len(st) == 0 or st[0] != "":
        raise Rejection("invalid_argument", "string_table[0] must be \"\"")

    def s(i, what):
        if i < 0 or i >= len(st):
            raise Rejection("invalid_argument",
                            "%s: string index %d out of range" % (what, i))
        return st[i]

    if len(p.sample) > MAX_PROFILE_SAMPLES:
        raise Rejection("invalid_argument",
                        "profile has %d samples; limit %d"
                        % (len(p.sample), MAX_PROFILE_SAMPLES))
    if not p.sample_type:
        raise Rejection("invalid_argument", "profile has no sample types")
    sample_types = []
    for vt in p.sample_type:
        t, u = s(vt.type, "sample_type"), s(vt.unit, "sample_type unit")
        if not t or "-" in t:
            raise Rejection("invalid_argument", "invalid sample type name %r" % t)
        sample_types.append("%s:%s" % (t, u))
    if p.period_type.type == 0:
        raise Rejection("invalid_argument", "period_type is not set")
    period_type = "%s:%s" % (s(p.period_type.type, "period_type"),
                             s(p.period_type.unit, "period_type unit"))
    if p.time_nanos != 0:
        if p.time_nanos < now_ns - REJECT_OLDER_THAN_NS:
            raise Rejection("invalid_argument",
                            "profile is too old: time_nanos %d" % p.time_nanos)
        if p.time_nanos > now_ns + CREATION_GRACE_PERIOD_NS:
            raise Rejection("invalid_argument",
                            "profile is too far in the future: time_nanos %d"
                            % p.time_nanos)
    function_ids = set()
    for f in p.function:
        if f.id == 0:
            raise Rejection("invalid_argument", "function id is 0")
        s(f.name, "function name")
        s(f.system_name, "function system_name")
        s(f.filename, "function filename")
        function_ids.add(f.id)
    mapping_ids = set()
    for m in p.mapping:
        if m.id == 0:
            raise Rejection("invalid_argument", "mapping id is 0")
        s(m.filename, "mapping filename")
        s(m.build_id, "mapping build_id")
        mapping_ids.add(m.id)
    location_ids = set()
    for loc in p.location:
        if loc.id == 0:
            raise Rejection("invalid_argument", "location id is 0")
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
        if len(smp.value) != len(p.sample_type):
            raise Rejection("invalid_argument",
                            "sample has %d values; profile has %d sample types"
                            % (len(smp.value), len(p.sample_type)))
        for lid in smp.location_id:
            if lid not in location_ids:
                raise Rejection("invalid_argument",
                                "sample references unknown location %d" % lid)
        for i, v in enumerate(smp.value):
            totals[i] += v
        for lab in smp.label:
            key = s(lab.key, "label key")
            if lab.str:
                s(lab.str, "label value")
                label_keys.add(key)
    return {
        "sample_types": sample_types,
        "period_type": period_type,
        "period": p.period,
        "time_nanos": p.time_nanos,
        "duration_nanos": p.duration_nanos,
        "num_samples": len(p.sample),
        "totals": totals,
        # String labels on samples become series labels in Pyroscope.
        "sample_label_keys": sorted(label_keys),
        "uncompressed_size": len(data),
    }


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
        self.record_file = open(args.record, "a") if args.record else None

    def next_fault(self):
        with self.lock:
            self.requests += 1
            while self.faults:
                f = self.faults[0]
                if f["count"] <= 0:
                    self.faults.pop(0)
                    continue
                f["count"] -= 1
                return dict(f)
            return None

    def record(self, kind, entry):
        if "labels" in entry:
            # Also as a list of pairs, for clients that cannot use maps.
            entry["label_list"] = [{"name": k, "value": v}
                                   for k, v in entry["labels"].items()]
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
    entries = []
    for series in req.series:
        labels = [(l.name, l.value) for l in series.labels]
        validate_labels(labels)
        for sample in series.samples:
            raw, gzipped = maybe_gunzip(sample.raw_profile)
            summary = validate_pprof(raw, now_ns)
            entries.append(dict(summary, labels=dict(labels), id=sample.ID,
                                gzipped=gzipped, tenant=tenant, api="push",
                                received_ns=now_ns))
    return entries


def parse_legacy_name(name):
    m = re.match(r"^([^{}]+)(?:\{(.*)\})?$", name)
    if not m or not APP_NAME_RE.match(m.group(1)):
        raise Rejection("invalid_argument", "invalid application name %r" % name)
    labels = [("service_name", m.group(1))]
    if m.group(2):
        for kv in m.group(2).split(","):
            if "=" not in kv:
                raise Rejection("invalid_argument", "invalid tag %r" % kv)
            k, v = kv.split("=", 1)
            labels.append((k.strip(), v.strip()))
    return labels


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
    labels = parse_legacy_name(name)
    if q.get("format", [""])[0] != "pprof":
        raise Rejection("invalid_argument", "only format=pprof is supported here")
    from_ns = parse_legacy_time(q.get("from", ["0"])[0])
    until_ns = parse_legacy_time(q.get("until", ["0"])[0])
    if "__name__" not in dict(labels):
        labels.append(("__name__", "process_cpu"))
    validate_labels(labels)
    raw, gzipped = maybe_gunzip(body)
    summary = validate_pprof(raw, time.time_ns())
    return [dict(summary, labels=dict(labels), id="", gzipped=gzipped,
                 tenant=tenant, api="ingest", from_ns=from_ns,
                 until_ns=until_ns, spy_name=q.get("spyName", [""])[0],
                 received_ns=time.time_ns())]


def request_id(headers, body):
    """The first RawSample.ID of a binary push body, for fault records."""
    if headers.get("Content-Type", "") != "application/proto":
        return ""
    try:
        req = push_pb2.PushRequest()
        req.ParseFromString(body)
        return req.series[0].samples[0].ID
    except Exception:  # pylint: disable=broad-except
        return ""


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
        fault = state.next_fault()
        if fault and fault.get("delay_ms"):
            time.sleep(fault["delay_ms"] / 1000.0)
        if fault and fault.get("status"):
            self.reply_error(fault["status"],
                             STATUS_CONNECT.get(fault["status"], "unknown"),
                             fault.get("message", "injected fault"),
                             retry_after=fault.get("retry_after"))
            state.record("rejected", {"status": fault["status"], "fault": True,
                                      "message": fault.get("message", ""),
                                      "id": request_id(self.headers, body),
                                      "received_ns": time.time_ns()})
            return
        url = urllib.parse.urlsplit(self.path)
        try:
            if url.path == "/push.v1.PusherService/Push":
                entries = handle_push(state, self.headers, body)
            elif url.path == "/ingest":
                entries = handle_ingest(state, self.headers, url.query, body)
            else:
                raise Rejection("not_found", "no such endpoint %s" % url.path)
        except Rejection as r:
            status = 415 if r.code == "unsupported_media_type" else CONNECT_STATUS[r.code]
            state.record("rejected", {"status": status, "code": r.code,
                                      "message": r.message, "path": url.path,
                                      "received_ns": time.time_ns()})
            if status == 415:
                self.send_response(415)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.reply_error(status, r.code, r.message)
            return
        for e in entries:
            state.record("accepted", e)
        ctype = self.headers.get("Content-Type", "application/proto").split(";")[0]
        payload = b"{}" if ctype == "application/json" else b""
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
    ap.add_argument("--require-tenant", action="store_true",
                    help="multi-tenancy: 401 without X-Scope-OrgID")
    ap.add_argument("--tenant", help="accept only this X-Scope-OrgID")
    ap.add_argument("--basic-auth", help="USER:PASSWORD required")
    ap.add_argument("--bearer-token", help="Bearer token accepted")
    ap.add_argument("--tls-cert")
    ap.add_argument("--tls-key")
    ap.add_argument("--self-signed-tls", metavar="DIR",
                    help="generate DIR/ca.pem and a server cert; serve https")
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
