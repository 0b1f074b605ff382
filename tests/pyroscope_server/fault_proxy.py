#!/usr/bin/python3
"""A fault-injecting HTTP proxy in front of a real Pyroscope server.

    proxy = FaultProxy(upstream_url).start()
    ... ship to proxy.url ...
    proxy.down(); proxy.up()                 # an outage: connection refused
    proxy.fault(status=429, count=20)        # the next 20 pushes refused
    proxy.stats()                            # {"forwarded", "faulted", ...}

Every request is forwarded unchanged (method, path, headers, body) unless a
fault is pending: then it is answered with that status and a Connect JSON
error body (as Pyroscope's rate limiter words a 429) without reaching the
server, so a refused push is never stored. `down()` closes the listener
(clients get connection refused) until `up()` reopens it on the same port.

Command line: `fault_proxy.py UPSTREAM_URL --ready-file PATH [--start-down]` writes
{"url", "control"}; control endpoint: POST /down, /up, /fault (JSON
{"status", "count", "path_contains"}), GET /stats.
"""

import argparse
import http.client
import http.server
import json
import os
import socket
import sys
import threading
import time
import urllib.parse
import urllib.request

_HOP_HEADERS = {"connection", "keep-alive", "transfer-encoding", "te",
                "trailer", "upgrade", "proxy-connection"}
_CODES = {429: "resource_exhausted", 500: "internal", 502: "unavailable",
          503: "unavailable", 504: "unavailable", 400: "invalid_argument"}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *_):
        pass

    def _proxy(self):
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        fault = proxy.take_fault(self.path)
        if fault is not None:
            status = fault["status"]
            payload = json.dumps({
                "code": _CODES.get(status, "unknown"),
                "message": fault.get("message") or
                "pushing profiles: push rate limit (4.0 MiB) exceeded "
                "while adding %d B" % len(body)}).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        upstream = urllib.parse.urlsplit(proxy.upstream)
        connection = http.client.HTTPConnection(upstream.hostname,
                                                upstream.port, timeout=60)
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in _HOP_HEADERS and k.lower() != "host"}
        try:
            connection.request(self.command, self.path, body=body,
                               headers=headers)
            response = connection.getresponse()
            data = response.read()
        except OSError as e:
            self.send_error(502, "upstream: %s" % e)
            return
        finally:
            connection.close()
        proxy.count("forwarded", self.path, response.status)
        self.send_response(response.status)
        for k, v in response.getheaders():
            if k.lower() not in _HOP_HEADERS and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = _proxy
    do_POST = _proxy


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FaultProxy:
    def __init__(self, upstream, port=0):
        self.upstream = upstream.rstrip("/")
        self.port = port
        self._lock = threading.Lock()
        self._faults = []
        self._stats = {"forwarded": 0, "faulted": 0, "pushes_forwarded": 0,
                       "pushes_faulted": 0, "statuses": {}}
        self._server = None
        self._thread = None

    @property
    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def start(self):
        return self.up()

    def up(self):
        with self._lock:
            if self._server is not None:
                return self
            deadline = time.monotonic() + 10
            while True:
                try:
                    server = _Server(("127.0.0.1", self.port), _Handler)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.1)
            server.proxy = self
            self.port = server.server_address[1]
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever,
                                            daemon=True)
            self._thread.start()
        return self

    def down(self):
        with self._lock:
            server, self._server = self._server, None
        if server is not None:
            server.shutdown()
            server.server_close()

    def stop(self):
        self.down()

    def fault(self, status, count=1, path_contains="/push.v1.PusherService/",
              message=None):
        """The next `count` requests whose path contains `path_contains`
        are answered `status` without reaching the server."""
        with self._lock:
            self._faults.append({"status": status, "count": count,
                                 "path_contains": path_contains,
                                 "message": message})

    def take_fault(self, path):
        with self._lock:
            for fault in self._faults:
                if fault["count"] > 0 and fault["path_contains"] in path:
                    fault["count"] -= 1
                    self._faults = [f for f in self._faults if f["count"] > 0]
                    self._record("faulted", path, fault["status"])
                    return fault
        return None

    def count(self, kind, path, status):
        with self._lock:
            self._record(kind, path, status)

    def _record(self, kind, path, status):
        self._stats[kind] += 1
        if "/push.v1.PusherService/" in path:
            self._stats["pushes_" + kind] += 1
        key = str(status)
        self._stats["statuses"][key] = self._stats["statuses"].get(key, 0) + 1

    def pending_faults(self):
        with self._lock:
            return sum(f["count"] for f in self._faults)

    def stats(self):
        with self._lock:
            return json.loads(json.dumps(self._stats))


class _ControlHandler(http.server.BaseHTTPRequestHandler):
    def log_message(self, *_):
        pass

    def _answer(self, value):
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        self._answer(self.server.proxy.stats())

    def do_POST(self):
        proxy = self.server.proxy
        length = int(self.headers.get("Content-Length") or 0)
        request = json.loads(self.rfile.read(length) or b"{}")
        if self.path == "/down":
            proxy.down()
        elif self.path == "/up":
            proxy.up()
        elif self.path == "/fault":
            proxy.fault(int(request["status"]), int(request.get("count", 1)),
                        request.get("path_contains", "/push.v1.PusherService/"),
                        request.get("message"))
        self._answer({"ok": True})


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("upstream")
    parser.add_argument("--ready-file", required=True)
    parser.add_argument("--start-down", action="store_true",
                        help="start with the port closed (POST /up opens it)")
    args = parser.parse_args()
    proxy = FaultProxy(args.upstream).start()
    if args.start_down:
        proxy.down()
    control = http.server.ThreadingHTTPServer(("127.0.0.1", 0),
                                              _ControlHandler)
    control.proxy = proxy
    tmp = args.ready_file + ".tmp"
    with open(tmp, "w") as f:
        json.dump({"url": proxy.url, "control": "http://127.0.0.1:%d"
                   % control.server_address[1]}, f)
    os.rename(tmp, args.ready_file)
    control.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
