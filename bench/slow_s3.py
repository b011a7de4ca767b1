"""A moto S3 server on 127.0.0.1 that adds a fixed delay to every request (an object store's latency).

``python bench/slow_s3.py DIR [--delay 0.02] [--bucket lake] [--skip-suffix .parquet]`` puts every
file below ``DIR`` into the bucket (straight into moto's in-memory backend, no upload requests;
``--skip-suffix``: files the measured work never reads, such as data files for a census), then
serves it; it prints one JSON line ``{"port": N, "objects": M, "bytes": B}`` once it listens.
Every request sleeps ``--delay`` seconds in its own server thread before moto answers it (delays
of concurrent requests overlap, as a store's do). ``GET /__bench_stats`` answers
``{"requests": N, "methods": {"GET": n, "HEAD": m}, "cpu_seconds": S}`` (requests served, by method; this process's CPU time: moto's own cost,
which a real store does not add to the client's machine) and is not counted or delayed;
``GET /__bench_delay/S`` sets the delay to S seconds from then on (a floor measured on the same
server at 0).

Connections are kept alive (HTTP/1.1, as S3 keeps them): werkzeug's own server closes every
connection after one answer, so each request cost the client a TCP connect and a new aiohttp
connection, which a real store does not. ``--close`` serves as werkzeug does (a connection per
request), to compare.

Used by ``bench/bench_spark_metadata.py --s3``; it is a bench tool, not part of indexcore.
"""

from __future__ import annotations

import argparse
import io
import json
import logging
import os
import sys
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

STATS, DELAY = "/__bench_stats", "/__bench_delay/"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("root", metavar="DIR", help="the directory whose files become the bucket's objects")
    ap.add_argument("--delay", type=float, default=0.02, help="seconds added to every request (default 0.02)")
    ap.add_argument("--bucket", default="lake")
    ap.add_argument("--prefix", default="", help="key prefix the files are put under")
    ap.add_argument("--skip-suffix", action="append", default=[], help="leave out files ending so")
    ap.add_argument("--close", action="store_true", help="close each connection after one answer (werkzeug's server)")
    args = ap.parse_args()
    for k, v in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                 "AWS_DEFAULT_REGION": "us-east-1"}.items():
        os.environ.setdefault(k, v)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.core import DEFAULT_ACCOUNT_ID
    from moto.moto_server.werkzeug_app import create_backend_app
    from moto.s3.models import s3_backends
    from werkzeug.serving import make_server

    backend = s3_backends[DEFAULT_ACCOUNT_ID]["aws"]
    backend.create_bucket(args.bucket, "us-east-1")
    objects = size = 0
    skip = tuple(args.skip_suffix)
    for folder, _dirs, names in os.walk(args.root):
        for name in names:
            if skip and name.endswith(skip):
                continue
            path = os.path.join(folder, name)
            key = os.path.join(args.prefix, os.path.relpath(path, args.root)).replace(os.sep, "/")
            with open(path, "rb") as f:
                data = f.read()
            backend.put_object(args.bucket, key, data)
            objects, size = objects + 1, size + len(data)
    # the s3 app itself: moto's dispatcher looks the service up per request (about 2 ms of stat calls)
    app = create_backend_app("s3")
    lock, served, delay, methods = threading.Lock(), [0], [args.delay], {}

    def delayed(environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path == STATS or path.startswith(DELAY):
            if path.startswith(DELAY):
                delay[0] = float(path[len(DELAY):])
            body = json.dumps({"requests": served[0], "methods": methods, "cpu_seconds": time.process_time(),
                               "delay": delay[0]}).encode()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        with lock:
            served[0] += 1
            method = environ.get("REQUEST_METHOD", "")
            methods[method] = methods.get(method, 0) + 1
        time.sleep(delay[0])
        return app(environ, start_response)

    if args.close:
        server = make_server("127.0.0.1", 0, delayed, threaded=True)
    else:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _keep_alive_handler(delayed))
    server.daemon_threads = True
    print(json.dumps({"port": server.server_address[1], "objects": objects, "bytes": size}), flush=True)
    server.serve_forever()


def _keep_alive_handler(app):
    """An HTTP/1.1 request handler serving the WSGI ``app`` with connections kept alive (one
    thread per connection; each request's body read by its Content-Length, each answer sized)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body go out as two writes: no 40 ms wait for an ACK

        def log_message(self, *args) -> None:
            pass

        def _serve(self) -> None:
            path, _, query = self.path.partition("?")
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            host, port = self.server.server_address[:2]
            environ = {
                "REQUEST_METHOD": self.command, "SCRIPT_NAME": "",
                "PATH_INFO": urllib.parse.unquote_to_bytes(path).decode("latin-1"), "QUERY_STRING": query,
                "SERVER_NAME": host, "SERVER_PORT": str(port), "SERVER_PROTOCOL": self.request_version,
                "REMOTE_ADDR": self.client_address[0], "wsgi.version": (1, 0), "wsgi.url_scheme": "http",
                "wsgi.input": io.BytesIO(body), "wsgi.errors": sys.stderr, "wsgi.multithread": True,
                "wsgi.multiprocess": False, "wsgi.run_once": False, "CONTENT_LENGTH": str(length),
            }
            if self.headers.get("Content-Type"):
                environ["CONTENT_TYPE"] = self.headers["Content-Type"]
            for name, value in self.headers.items():
                key = "HTTP_" + name.upper().replace("-", "_")
                if key not in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                    environ[key] = f"{environ[key]},{value}" if key in environ else value
            answer = {}

            def start_response(status, headers, exc_info=None):
                answer["status"], answer["headers"] = status, headers

            chunks = app(environ, start_response)
            try:
                data = b"".join(chunks)
            finally:
                getattr(chunks, "close", lambda: None)()
            code, _, reason = answer["status"].partition(" ")
            self.send_response(int(code), reason)
            sized = str(len(data))
            for name, value in answer["headers"]:
                if name.lower() == "content-length" and self.command == "HEAD":
                    sized = value  # the object's size, as S3 answers HEAD
                elif name.lower() not in ("content-length", "connection", "transfer-encoding"):
                    self.send_header(name, value)
            self.send_header("Content-Length", sized)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_HEAD = do_PUT = do_POST = do_DELETE = _serve

    return Handler


if __name__ == "__main__":
    sys.exit(main())
