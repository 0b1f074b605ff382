#!/usr/bin/python3
"""The stand-in receiver (tests/pyroscope_receiver) against the real Grafana
Pyroscope v2.2.1: the same corpus of push requests, valid and each kind of
invalid one, goes to both, and each must get the same HTTP status and the
same acceptance (stored or not; for stored ones, the same label names), so
the stand-in the fault tests use cannot drift from the server.

The corpus: a valid CPU profile; labels (dotted, leading digit, dash, 31
names, 30 with promoted sample labels, a value over 2048 bytes, no
service_name); pprof rules (string 0, invalid UTF-8, a '-' in a sample
type, ids 0, value count, 16,001 samples, a stack of 1,200 frames, outside
the ingestion window, over the burst, over 4 MiB); the protocol (corrupt
raw_profile, corrupt gzip, no series, a series without samples,
application/x-protobuf, an unknown Content-Encoding). Prints a table.
"""

import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "pyroscope_receiver"))
import pyroscope_server  # noqa: E402
import receiver  # noqa: E402  (its generated protos)

P = receiver.profile_lenient_pb2
PUSH = receiver.push_pb2


class Builder:
    """A lenient pprof (string table of bytes) with one function per frame."""

    def __init__(self, sample_types=(("cpu", "nanoseconds"),)):
        self.p = P.Profile()
        self.p.string_table.append(b"")
        for t, u in sample_types:
            st = self.p.sample_type.add()
            st.type, st.unit = self.s(t), self.s(u)
        self.p.period_type.type = self.s(sample_types[0][0])
        self.p.period_type.unit = self.s(sample_types[0][1])
        self.p.period = 10000000
        self.p.time_nanos = time.time_ns()
        self.p.duration_nanos = 10 * 10**9
        m = self.p.mapping.add()
        m.id, m.filename = 1, self.s("/usr/bin/app")
        self.functions = {}

    def s(self, text):
        data = text if isinstance(text, bytes) else text.encode()
        try:
            return list(self.p.string_table).index(data)
        except ValueError:
            self.p.string_table.append(data)
            return len(self.p.string_table) - 1

    def location(self, name):
        if name not in self.functions:
            fid = len(self.functions) + 1
            f = self.p.function.add()
            f.id, f.name = fid, self.s(name)
            loc = self.p.location.add()
            loc.id, loc.mapping_id = fid, 1
            loc.line.add().function_id = fid
            self.functions[name] = fid
        return self.functions[name]

    def sample(self, stack, values, labels=()):
        smp = self.p.sample.add()
        smp.location_id.extend(self.location(f) for f in stack)
        smp.value.extend(values)
        for k, v in labels:
            lab = smp.label.add()
            lab.key, lab.str = self.s(k), self.s(v)
        return smp

    def bytes(self):
        return self.p.SerializeToString()


def valid_profile(**kwargs):
    b = Builder()
    b.sample(["main", "work", "hot"], [30000000], **kwargs)
    b.sample(["main", "idle"], [10000000])
    return b


def push(labels, raw_profiles):
    req = PUSH.PushRequest()
    series = req.series.add()
    for k, v in labels:
        pair = series.labels.add()
        pair.name, pair.value = k, v
    for i, raw in enumerate(raw_profiles):
        sample = series.samples.add()
        sample.raw_profile = raw
        sample.ID = "00000000-0000-4000-8000-%012d" % i
    return req.SerializeToString()


def base_labels(service):
    return [("__name__", "process_cpu"), ("service_name", service)]


# Each case: (name, function(service) -> (headers, body)).
def case(labels=None, profile=None, raw=None, body=None, headers=None,
         gzip_raw=True):
    def make(service):
        ls = base_labels(service) if labels is None else labels(service)
        data = raw if raw is not None else (profile or valid_profile)().bytes()
        if raw is None and gzip_raw:
            data = gzip.compress(data)
        h = {"Content-Type": "application/proto"}
        h.update(headers or {})
        return h, body if body is not None else push(ls, [data])
    return make


def many_labels(n):
    return lambda s: base_labels(s) + [("l%02d" % i, "v") for i in range(n - 2)]


def promoted(n_series, n_sample):
    def profile():
        b = Builder()
        b.sample(["main", "hot"], [10], labels=[("s%02d" % i, "v")
                                                for i in range(n_sample)]
                 + [("span_id", "00000000000000ab")])
        return b
    return case(labels=many_labels(n_series), profile=profile)


def profile_with(mutate):
    def profile():
        b = valid_profile()
        mutate(b)
        return b
    return profile


def samples(n):
    def profile():
        b = Builder()
        for i in range(n):
            b.sample(["main", "f%d" % (i % 50)], [i + 1],
                     labels=[("span_id", "%016x" % i)])
        return b
    return profile


def big(n_bytes):
    def profile():
        b = valid_profile()
        b.p.string_table.append(b"x" * n_bytes)
        return b
    return profile


def deep(depth):
    def profile():
        b = Builder()
        b.sample(["f%d" % i for i in range(depth)], [10])
        return b
    return profile


def set_attr(path, value):
    def mutate(b):
        obj = b.p
        for part in path[:-1]:
            obj = obj[part] if isinstance(part, int) else getattr(obj, part)
        setattr(obj, path[-1], value)
    return mutate


CORPUS = [
    ("valid", case()),
    ("valid, raw_profile not gzipped", case(gzip_raw=False)),
    ("no service_name", case(labels=lambda s: [("__name__", "process_cpu"),
                                               ("job", s)])),
    ("dotted label name", case(labels=lambda s: base_labels(s) +
                               [("k8s.cluster", "prod")])),
    ("label name with a leading digit", case(
        labels=lambda s: base_labels(s) + [("9lives", "x")])),
    ("label name with a dash", case(
        labels=lambda s: base_labels(s) + [("my-label", "x")])),
    ("a.b and a_b", case(labels=lambda s: base_labels(s) +
                         [("a.b", "1"), ("a_b", "2")])),
    ("30 label names", case(labels=many_labels(30))),
    ("31 label names", case(labels=many_labels(31))),
    ("28 series + 2 sample label names", promoted(28, 2)),
    ("28 series + 3 sample label names", promoted(28, 3)),
    ("label value of 2049 bytes", case(
        labels=lambda s: base_labels(s) + [("long", "v" * 2049)])),
    ("string 0 not empty", case(profile=profile_with(
        lambda b: b.p.string_table.__setitem__(0, b"x")))),
    ("invalid UTF-8 string", case(profile=profile_with(
        lambda b: b.p.string_table.append(b"caf\xe9")))),
    ("sample type with '-'", case(profile=profile_with(
        lambda b: b.p.string_table.__setitem__(b.p.sample_type[0].type,
                                               b"cpu-time")))),
    ("location id 0", case(profile=profile_with(
        lambda b: setattr(b.p.location[0], "id", 0)))),
    ("function id 0", case(profile=profile_with(
        lambda b: setattr(b.p.function[0], "id", 0)))),
    ("two values for one sample type", case(profile=profile_with(
        lambda b: b.p.sample[0].value.append(1)))),
    ("16,000 samples", case(profile=samples(16000))),
    ("16,001 samples", case(profile=samples(16001))),
    ("a stack of 1,200 frames", case(profile=deep(1200))),
    ("2 hours old", case(profile=profile_with(
        set_attr(["time_nanos"], time.time_ns() - 2 * 3600 * 10**9)))),
    ("1 hour in the future", case(profile=profile_with(
        set_attr(["time_nanos"], time.time_ns() + 3600 * 10**9)))),
    ("2.5 MiB uncompressed (over the burst)", case(profile=big(5 << 19))),
    ("4.5 MiB uncompressed (over the size limit)", case(profile=big(9 << 19))),
    ("corrupt raw_profile", case(raw=b"\x0a\xff\xff\xff\xff\x0f garbage")),
    ("corrupt gzip raw_profile", case(raw=b"\x1f\x8b\x08\x00garbage")),
    ("no series", case(body=b"")),
    ("a series without samples",
     lambda s: ({"Content-Type": "application/proto"},
                push(base_labels(s), []))),
    ("Content-Type application/x-protobuf",
     case(headers={"Content-Type": "application/x-protobuf"})),
    ("Content-Encoding br", case(headers={"Content-Encoding": "br"})),
]


def send(url, headers, body):
    request = urllib.request.Request(
        url + "/push.v1.PusherService/Push", data=body,
        headers=dict(headers, **{"Connect-Protocol-Version": "1"}),
        method="POST")
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")


def start_receiver(work):
    ready = os.path.join(work, "receiver.json")
    log = open(os.path.join(work, "receiver.log"), "wb")
    process = subprocess.Popen(
        ["/usr/bin/python3",
         os.path.join(ROOT, "tests", "pyroscope_receiver", "receiver.py"),
         "--exit-with-parent", "--ready-file", ready],
        stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 30
    while not os.path.exists(ready):
        if time.monotonic() > deadline or process.poll() is not None:
            raise AssertionError("the stand-in receiver did not start")
        time.sleep(0.05)
    with open(ready) as f:
        info = json.load(f)
    return process, info["url"], "http://127.0.0.1:%d" % info["control_port"]


def receiver_stored(control):
    with urllib.request.urlopen(control + "/accepted", timeout=10) as r:
        accepted = json.load(r)
    out = {}
    for entry in accepted:
        labels = entry["stored_labels"]
        service = labels.get("service_name") or labels.get("job")
        if labels.get("service_name") == "unknown_service":
            service = labels.get("job", service)
        for series in entry["stored_series"]:
            out.setdefault(service, set()).update(
                k for k in series if not k.startswith("__") or k == "__name__")
    return out


def server_stored(client, services, start_ms, end_ms):
    out = {}
    for s in client.series(["{}"], start_ms, end_ms):
        service = s.get("service_name")
        if service == "unknown_service":
            service = s.get("job", service)
        if service in services:
            out.setdefault(service, set()).update(
                k for k in s if not k.startswith("__") or k == "__name__")
    return out


def main():
    pyroscope_server.skip_unless_available()
    work = tempfile.mkdtemp(prefix="differential-",
                            dir=os.environ.get("TEST_TMPDIR"))
    stand_in, receiver_url, control = start_receiver(work)
    server = pyroscope_server.PyroscopeServer(
        log_path=os.path.join(work, "pyroscope.log"))
    try:
        server.start()
    except pyroscope_server.ServerError as e:
        print("FAIL: %s" % e)
        stand_in.kill()
        return 1
    start_ms = int(time.time() * 1000) - 7200 * 1000
    rows, failures = [], []
    try:
        for i, (name, make) in enumerate(CORPUS):
            service = "diff-%02d" % i
            headers, body = make(service)
            real, real_body = send(server.url, headers, body)
            fake, fake_body = send(receiver_url, headers, body)
            rows.append([name, service, real, fake, real_body[:90],
                         fake_body[:90]])
        end_ms = int(time.time() * 1000) + 7200 * 1000
        services = {r[1] for r in rows}
        # Stored by the server: wait until every one the server answered
        # 2xx is queryable, then read what else is there.
        want = {r[1] for r in rows if r[2] // 100 == 2}
        stored = server.query.wait_for(
            lambda: (lambda got: got if want <= set(got) else None)(
                server_stored(server.query, services, start_ms, end_ms)),
            "the accepted profiles in the server's index", 90)
        fake_stored = receiver_stored(control)
        print("%-42s %-5s %-5s %-7s %-7s" % ("case", "real", "stand", "stored",
                                            "stand-in"))
        for name, service, real, fake, real_body, fake_body in rows:
            real_names = stored.get(service)
            fake_names = fake_stored.get(service)
            same = (real == fake and (real_names is None) == (fake_names is None)
                    and (real_names is None or real_names == fake_names))
            print("%-42s %-5d %-5d %-7s %-7s%s" % (
                name[:42], real, fake, real_names is not None,
                fake_names is not None, "" if same else "   <- DIFFERS"))
            if not same:
                failures.append(
                    "%s: real %d %s stored %s; stand-in %d %s stored %s"
                    % (name, real, real_body, sorted(real_names or []), fake,
                       fake_body, sorted(fake_names or [])))
    finally:
        server.stop()
        stand_in.kill()
    for f in failures:
        print("FAIL: " + f)
    print("PASS" if not failures else "%d case(s) differ" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
