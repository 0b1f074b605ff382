#!/usr/bin/python3
"""The receiver rejects what Pyroscope rejects and accepts what it accepts."""

import base64
import gzip
import json
import os
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import receiver  # noqa: E402  (generates the pb2 modules)

profile_pb2 = receiver.profile_pb2
push_pb2 = receiver.push_pb2


def make_pprof(time_nanos=None, samples=1, values_per_sample=1,
               string0="", location_id=1, function_id=1, period_type=True,
               sample_type="cpu"):
    p = profile_pb2.Profile()
    p.string_table.extend([string0, sample_type, "nanoseconds", "main", "cpu"])
    st = p.sample_type.add()
    st.type, st.unit = 1, 2
    if period_type:
        p.period_type.type, p.period_type.unit = 4, 2
    p.period = 10000000
    p.time_nanos = time.time_ns() if time_nanos is None else time_nanos
    p.duration_nanos = 10 * 10**9
    f = p.function.add()
    f.id, f.name = function_id, 3
    loc = p.location.add()
    loc.id = location_id
    loc.line.add().function_id = function_id
    for _ in range(samples):
        s = p.sample.add()
        s.location_id.append(location_id)
        s.value.extend([10000000] * values_per_sample)
    return p.SerializeToString()


def make_push(raw, labels=None, gz=True):
    if labels is None:
        labels = [("__name__", "process_cpu"), ("service_name", "app")]
    req = push_pb2.PushRequest()
    series = req.series.add()
    for n, v in labels:
        lp = series.labels.add()
        lp.name, lp.value = n, v
    sample = series.samples.add()
    sample.raw_profile = gzip.compress(raw) if gz else raw
    sample.ID = "00000000-0000-4000-8000-000000000000"
    return req


class ReceiverTest(unittest.TestCase):
    extra_args = []

    def setUp(self):
        self.tmp = tempfile.mkdtemp()
        ready = os.path.join(self.tmp, "ready.json")
        self.proc = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "receiver.py"),
             "--ready-file", ready] + self.extra_args)
        deadline = time.monotonic() + 30
        while not os.path.exists(ready):
            self.assertLess(time.monotonic(), deadline, "receiver did not start")
            self.assertIsNone(self.proc.poll(), "receiver exited")
            time.sleep(0.05)
        with open(ready) as f:
            info = json.load(f)
        self.url = info["url"]
        self.control = "http://127.0.0.1:%d" % info["control_port"]

    def tearDown(self):
        self.proc.kill()
        self.proc.wait()

    def post(self, body, ctype="application/proto", path="/push.v1.PusherService/Push",
             headers=None):
        req = urllib.request.Request(self.url + path, data=body, method="POST")
        if ctype:
            req.add_header("Content-Type", ctype)
        for k, v in (headers or {}).items():
            req.add_header(k, v)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, r.read(), dict(r.headers)
        except urllib.error.HTTPError as e:
            return e.code, e.read(), dict(e.headers)

    def push(self, req, **kw):
        return self.post(req.SerializeToString(), **kw)

    def control_get(self, what):
        with urllib.request.urlopen(self.control + what, timeout=10) as r:
            return json.loads(r.read())

    def control_post(self, what, obj=None):
        req = urllib.request.Request(self.control + what,
                                     data=json.dumps(obj or {}).encode(),
                                     method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            return json.loads(r.read())

    def assert_rejected(self, result, status, fragment):
        code, body, _ = result
        self.assertEqual(code, status, body)
        if status != 415:
            self.assertIn(fragment, json.loads(body)["message"])
        self.assertEqual(self.control_get("/accepted"), [])


class ProtocolTest(ReceiverTest):

    def test_accepts_valid_gzipped_push_and_records_it(self):
        code, body, _ = self.push(make_push(make_pprof(samples=3)))
        self.assertEqual((code, body), (200, b""))
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["labels"]["__name__"], "process_cpu")
        self.assertTrue(entry["gzipped"])
        self.assertEqual(entry["num_samples"], 3)
        self.assertEqual(entry["sample_types"], ["cpu:nanoseconds"])
        self.assertEqual(entry["totals"], [30000000])

    def test_accepts_uncompressed_profile_and_json_codec(self):
        req = make_push(make_pprof(), gz=False)
        body = json.dumps({"series": [{
            "labels": [{"name": "__name__", "value": "memory"}],
            "samples": [{"rawProfile": base64.b64encode(
                req.series[0].samples[0].raw_profile).decode(), "ID": "x"}]}]})
        code, resp, _ = self.post(body.encode(), ctype="application/json")
        self.assertEqual((code, resp), (200, b"{}"))
        [entry] = self.control_get("/accepted")
        self.assertFalse(entry["gzipped"])

    def test_gzip_content_encoding_of_request_body(self):
        code, _, _ = self.post(gzip.compress(make_push(make_pprof()).SerializeToString()),
                               headers={"Content-Encoding": "gzip"})
        self.assertEqual(code, 200)

    def test_rejects_unknown_content_type(self):
        self.assert_rejected(self.push(make_push(make_pprof()), ctype="text/plain"),
                             415, "")
        self.assert_rejected(self.push(make_push(make_pprof()),
                                       ctype="application/grpc"), 415, "")

    def test_rejects_garbage_request(self):
        self.assert_rejected(self.post(b"\xff\xff\xff"), 400, "decode")

    def test_rejects_missing_name_label(self):
        self.assert_rejected(
            self.push(make_push(make_pprof(), labels=[("service_name", "a")])),
            400, "invalid labels '{service_name=\"a\"}' with error: invalid metric name")

    def test_missing_service_name_becomes_unknown_service(self):
        code, _, _ = self.push(make_push(make_pprof(), labels=[("__name__", "memory")]))
        self.assertEqual(code, 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["stored_labels"]["service_name"], "unknown_service")

    def test_rejects_bad_label_names_values_and_counts(self):
        # validate.go ValidateLabels, with Pyroscope's own messages. v2 takes
        # any UTF-8 name as is (no sanitization by default).
        base = [("__name__", "process_cpu"), ("service_name", "app")]
        for name in ("a-b", "1a", "caf\u00e9"):
            code, _, _ = self.push(make_push(make_pprof(), base + [(name, "1")]))
            self.assertEqual(code, 200, name)
        self.control_post("/clear")
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("a", "1"), ("a", "2")])),
                             400, "has duplicate label name: 'a'")
        many = base + [("l%d" % i, "v") for i in range(29)]
        self.assert_rejected(self.push(make_push(make_pprof(), many)), 400,
                             "has 31 label names; limit 30")
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("a" * 1025, "v")])),
                             400, "has label name too long")
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("a", "v" * 2049)])),
                             400, "has label value too long")
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("a", "")])),
                             400, "empty value")
        # Invalid UTF-8 in a label value fails protobuf string decoding.
        req = make_push(make_pprof()).SerializeToString().replace(b"process_cpu",
                                                                   b"process\xffcpu")
        self.assert_rejected(self.post(req), 400, "decode")

    def test_label_names_with_dots_are_stored_as_sent(self):
        base = [("__name__", "process_cpu"), ("service_name", "app")]
        code, _, _ = self.push(make_push(make_pprof(), base + [("k8s.cluster", "prod"),
                                                                ("k8s_cluster", "x")]))
        self.assertEqual(code, 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["stored_labels"]["k8s.cluster"], "prod")
        self.assertEqual(entry["stored_labels"]["k8s_cluster"], "x")

    def test_sample_labels_are_series_labels_within_the_30_names(self):
        base = [("__name__", "process_cpu"), ("service_name", "app")]
        many = base + [("l%d" % i, "v") for i in range(26)]

        def with_sample_labels(names):
            p = profile_pb2.Profile()
            p.ParseFromString(make_pprof())
            for name in names:
                label = p.sample[0].label.add()
                p.string_table.extend([name, "v"])
                label.key, label.str = len(p.string_table) - 2, len(p.string_table) - 1
            return p.SerializeToString()
        # 28 series labels + span_id (stays on samples) + 2 promoted: 30.
        code, _, _ = self.push(make_push(with_sample_labels(["a", "b", "span_id"]), many))
        self.assertEqual(code, 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["stored_series"][0]["a"], "v")
        self.assertNotIn("span_id", entry["stored_series"][0])
        # A series label of the same name wins and is not counted twice.
        code, _, _ = self.push(make_push(with_sample_labels(["a", "b", "l0"]), many))
        self.assertEqual(code, 200)
        self.control_post("/clear")
        self.assert_rejected(self.push(make_push(with_sample_labels(["a", "b", "c"]), many)),
                             400, "has 31 label names; limit 30")


    def test_session_id_is_dropped_by_default(self):
        labels = [("__name__", "process_cpu"), ("service_name", "app"),
                  ("__session_id__", "0011223344556677")]
        self.assertEqual(self.push(make_push(make_pprof(), labels))[0], 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["labels"]["__session_id__"], "0011223344556677")
        self.assertNotIn("__session_id__", entry["stored_labels"])

    def test_rejects_a_string_that_is_not_utf8(self):
        p = receiver.profile_lenient_pb2.Profile()
        p.ParseFromString(make_pprof())
        p.string_table.append(b"/srv/bin_caf\xe9/app")
        m = p.mapping.add()
        m.id, m.filename = 1, len(p.string_table) - 1
        req = make_push(p.SerializeToString())
        self.assert_rejected(self.push(req), 400,
                             "invalid utf8 string hex: 2f7372762f62696e5f636166e92f617070")

    def test_long_symbols_are_cut_and_a_cut_character_refuses_the_profile(self):
        p = receiver.profile_lenient_pb2.Profile()
        p.ParseFromString(make_pprof())
        p.string_table[3] = b"f" * 70000  # cut to 65535, still valid
        self.assertEqual(self.push(make_push(p.SerializeToString()))[0], 200)
        self.control_post("/clear")
        # The last 65535 bytes start inside a 2-byte character.
        p.string_table[3] = b"\xc3\xa9" * 40000
        self.assert_rejected(self.push(make_push(p.SerializeToString())), 400,
                             "invalid utf8 string hex: a9c3a9")

    def test_rejects_too_many_sample_labels(self):
        p = profile_pb2.Profile()
        p.ParseFromString(make_pprof())
        for i in range(101):
            lab = p.sample[0].label.add()
            lab.key, lab.num = 3, i
        self.assert_rejected(self.push(make_push(p.SerializeToString())), 400,
                             "exceeds the sample labels limit (max_profile_stacktrace_"
                             "sample_labels, actual: 101, limit: 100)")

    def test_a_profile_larger_than_the_burst_is_refused_with_429_forever(self):
        p = profile_pb2.Profile()
        p.ParseFromString(make_pprof())
        p.string_table.append("x" * (2 * 1024 * 1024))
        req = make_push(p.SerializeToString())
        for _ in range(2):
            code, body, headers = self.push(req)
            self.assertEqual(code, 429, body)
            self.assertIn("push rate limit (4.0 MiB) exceeded while adding 2.0 MiB",
                          json.loads(body)["message"])
            self.assertNotIn("Retry-After", headers)
        self.assertEqual(self.control_get("/accepted"), [])
        # Just under the burst (labels count too) is fine.
        p.string_table[-1] = "x" * (2 * 1024 * 1024 - 300)
        self.assertEqual(self.push(make_push(p.SerializeToString()))[0], 200)

    def test_rejects_no_profiles(self):
        req = push_pb2.PushRequest()
        req.series.add().labels.add(name="__name__", value="x")
        self.assert_rejected(self.push(req), 400, "no profiles received")

    def test_rejects_pprof_rule_violations(self):
        window = "is outside of ingestion window (profile timestamp: "
        cases = [
            (make_pprof(string0="x"), "string 0 should be empty string"),
            (make_pprof(location_id=0), "location id is 0"),
            (make_pprof(function_id=0), "function id is 0"),
            (make_pprof(values_per_sample=2), "sample value length mismatch"),
            (make_pprof(period_type=False), "period_type"),
            (make_pprof(sample_type="cpu-time"), "sample type contains -"),
            (make_pprof(samples=16001),
             "exceeds the samples count limit (max_profile_stacktrace_samples, "
             "actual: 16001, limit: 16000)"),
            (make_pprof(time_nanos=time.time_ns() - 2 * 3600 * 10**9), window),
            (make_pprof(time_nanos=time.time_ns() + 3600 * 10**9), window),
        ]
        for raw, fragment in cases:
            with self.subTest(fragment):
                req = make_push(b"", gz=False)
                req.series[0].samples[0].raw_profile = raw
                self.assert_rejected(self.push(req), 400, fragment)
        # A profile that does not decode is not a validation error: 500.
        for raw, fragment in ((b"\x1f\x8bnot really gzip", "copy to buffer"),
                              (b"\x0a\xff\xff", "parse")):
            with self.subTest(fragment):
                req = make_push(b"", gz=False)
                req.series[0].samples[0].raw_profile = raw
                self.assert_rejected(self.push(req), 500, fragment)

    def test_rejects_oversized_profile(self):
        p = profile_pb2.Profile()
        p.ParseFromString(make_pprof())
        p.string_table.append("x" * (4 * 1024 * 1024))
        req = make_push(p.SerializeToString())
        self.assert_rejected(self.push(req), 400,
                             "uncompressed profile payload size exceeds limit of 4.2 MB")

    def test_legacy_ingest(self):
        now = int(time.time())
        code, _, _ = self.post(make_pprof(), ctype="application/octet-stream",
                               path="/ingest?name=app%%7Benv%%3Dprod%%7D&from=%d&until=%d"
                                    "&format=pprof&spyName=ringprof" % (now - 10, now))
        self.assertEqual(code, 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["labels"], {"service_name": "app", "env": "prod",
                                           "__name__": "process_cpu"})
        self.assertEqual(entry["from_ns"], (now - 10) * 10**9)
        # labelset.Parse: the app name is [A-Za-z0-9_.-/], tag names
        # [A-Za-z0-9_.]; the answer is plain text.
        for name, fragment in [("a%20b", "name: invalid service name: a b: character is "
                                         "not allowed: ' '"),
                               ("app%7Bk-1%3Dv%7D", "name: invalid label name: k-1: "
                                                    "character is not allowed: '-'"),
                               ("%7Bk%3Dv%7D", "name: service name is required")]:
            with self.subTest(name):
                code, body, _ = self.post(
                    make_pprof(), ctype="application/octet-stream",
                    path="/ingest?name=%s&from=%d&until=%d&format=pprof" % (name, now - 10, now))
                self.assertEqual(code, 400)
                self.assertIn(fragment, body.decode())
        # A ',' or '}' in a tag value ends it: the rest is lost, silently.
        self.control_post("/clear")
        code, _, _ = self.post(make_pprof(), ctype="application/octet-stream",
                               path="/ingest?name=app%%7Bk%%3Da%%7Db%%7D&from=%d&until=%d"
                                    "&format=pprof" % (now - 10, now))
        self.assertEqual(code, 200)
        self.assertEqual(self.control_get("/accepted")[0]["labels"]["k"], "a")


class FaultTest(ReceiverTest):

    def test_status_fault_with_retry_after_then_recovers(self):
        self.control_post("/fault", {"status": 429, "retry_after": 2, "count": 2})
        for _ in range(2):
            code, _, headers = self.push(make_push(make_pprof()))
            self.assertEqual(code, 429)
            self.assertEqual(headers.get("Retry-After"), "2")
        code, _, _ = self.push(make_push(make_pprof()))
        self.assertEqual(code, 200)
        self.assertEqual(len(self.control_get("/accepted")), 1)

    def test_fault_for_requests_with_a_label(self):
        self.control_post("/fault", {"status": 500, "count": 100,
                                     "when_label": ["service_name", "bad"]})
        bad = make_push(make_pprof(), labels=[("__name__", "x"), ("service_name", "bad")])
        self.assertEqual(self.push(bad)[0], 500)
        self.assertEqual(self.push(make_push(make_pprof()))[0], 200)
        self.assertEqual(self.push(bad)[0], 500)
        self.assertEqual(self.control_get("/stats")["pending_faults"], 98)

    def test_down_refuses_connections_and_up_restores_same_port(self):
        self.control_post("/down")
        with self.assertRaises(urllib.error.URLError):
            self.push(make_push(make_pprof()))
        self.control_post("/up")
        code, _, _ = self.push(make_push(make_pprof()))
        self.assertEqual(code, 200)


class RateLimitTest(ReceiverTest):
    # 0.05 MiB burst refilled at ~1 KiB/s: the second 40 KB profile in a
    # row does not fit until the bucket refills.
    extra_args = ["--ingestion-rate-mb", "0.001", "--ingestion-burst-size-mb", "0.05"]

    def test_token_bucket_per_tenant(self):
        p = profile_pb2.Profile()
        p.ParseFromString(make_pprof())
        p.string_table.append("x" * 40000)
        req = make_push(p.SerializeToString())
        self.assertEqual(self.push(req)[0], 200)
        code, body, _ = self.push(req)
        self.assertEqual(code, 429)
        self.assertIn("push rate limit (1.0 KiB) exceeded while adding 39 KiB",
                      json.loads(body)["message"])
        # Another tenant has its own bucket.
        self.assertEqual(self.push(req, headers={"X-Scope-OrgID": "other"})[0], 200)


class SeriesLimitTest(ReceiverTest):
    extra_args = ["--max-series", "2"]

    def test_new_series_beyond_the_limit_are_refused_and_sessions_do_not_count(self):
        def labels(**extra):
            return [("__name__", "process_cpu"), ("service_name", "app")] + \
                sorted(extra.items())
        # Many processes with their own session ids: one series.
        for i in range(5):
            sid = "%016x" % i
            self.assertEqual(self.push(make_push(make_pprof(),
                                                 labels(__session_id__=sid)))[0], 200)
        self.assertEqual(self.push(make_push(make_pprof(), labels(pid="1")))[0], 200)
        code, body, _ = self.push(make_push(make_pprof(), labels(pid="2")))
        self.assertEqual(code, 429)
        self.assertIn("Maximum active series limit exceeded (2/2)",
                      json.loads(body)["message"])
        # Known series still pass.
        self.assertEqual(self.push(make_push(make_pprof(), labels(pid="1")))[0], 200)


class TenantAuthTest(ReceiverTest):
    extra_args = ["--tenant", "team-a", "--basic-auth", "user:secret"]

    def test_requires_tenant_and_credentials(self):
        good_auth = "Basic " + base64.b64encode(b"user:secret").decode()
        req = make_push(make_pprof())
        self.assert_rejected(self.push(req, headers={"Authorization": good_auth}),
                             401, "no org id")
        self.assert_rejected(self.push(req, headers={"Authorization": good_auth,
                                                     "X-Scope-OrgID": "team-b"}),
                             401, "unknown tenant")
        self.assert_rejected(self.push(req, headers={"X-Scope-OrgID": "team-a"}),
                             401, "credentials")
        code, _, _ = self.push(req, headers={"Authorization": good_auth,
                                             "X-Scope-OrgID": "team-a"})
        self.assertEqual(code, 200)
        self.assertEqual(self.control_get("/accepted")[0]["tenant"], "team-a")


RECORD_PATH = os.path.join(os.environ.get("TEST_TMPDIR", tempfile.gettempdir()),
                           "receiver_record_%d.jsonl" % os.getpid())


class RecordTest(ReceiverTest):
    extra_args = ["--record", RECORD_PATH]

    def test_records_accepted_and_rejected_as_json_lines(self):
        self.assertEqual(self.push(make_push(make_pprof()))[0], 200)
        self.assertEqual(self.push(make_push(make_pprof(string0="x")))[0], 400)
        with open(RECORD_PATH) as f:
            lines = [json.loads(line) for line in f]
        self.assertEqual([l["kind"] for l in lines], ["accepted", "rejected"])
        self.assertEqual(lines[0]["labels"]["__name__"], "process_cpu")
        self.assertIn("string 0 should be empty string", lines[1]["message"])


class LabelSanitizationTest(ReceiverTest):
    extra_args = ["--label-sanitization"]

    def test_v1_names_are_checked_and_renamed(self):
        base = [("__name__", "process_cpu"), ("service_name", "app")]
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("a-b", "1")])),
                             400, "with error: invalid label name 'a-b'")
        # SanitizeLegacyLabelName: no leading digit.
        self.assert_rejected(self.push(make_push(make_pprof(), base + [("1a", "1")])),
                             400, "with error: invalid label name '1a'")
        code, _, _ = self.push(make_push(make_pprof(), base + [("k8s.cluster", "prod")]))
        self.assertEqual(code, 200)
        [entry] = self.control_get("/accepted")
        self.assertEqual(entry["stored_labels"]["k8s_cluster"], "prod")
        self.assertNotIn("k8s.cluster", entry["stored_labels"])
        # Equal after renaming: the same value merges, another is refused.
        code, _, _ = self.push(make_push(make_pprof(), base + [("a.b", "1"), ("a_b", "1")]))
        self.assertEqual(code, 200)
        self.control_post("/clear")
        self.assert_rejected(
            self.push(make_push(make_pprof(), base + [("a.b", "1"), ("a_b", "2")])), 400,
            "has duplicate label name 'a_b' after label name sanitization from 'a.b'")


if __name__ == "__main__":
    unittest.main()
