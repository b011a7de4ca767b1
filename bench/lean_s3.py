"""A lean read-only S3 stand-in on 127.0.0.1 serving a local directory, with a fixed delay per request.

``python bench/lean_s3.py DIR [--delay 0.02] [--bucket lake] [--prefix P] [--skip-suffix .parquet]``
serves every file below ``DIR`` as an object of one bucket and prints one JSON line
``{"port": N, "objects": M, "bytes": B}`` once it listens. It exists because moto, the store the
tests use, costs about 1.1 ms of CPU per request: on this 2-core machine moto alone needs more CPU
than issue 29's 20 ms bound leaves for 100,000 files, so a census against it measures moto. This
server is one asyncio event loop (no thread per request or connection), parses HTTP/1.1 by hand
and reads each object's bytes from disk when asked (``pread``), so its CPU per request is a small
fraction of moto's; ``/__bench_stats`` reports it.

What it answers, as S3 does (path-style URLs, as botocore sends them to an IP endpoint):

- ``GET /bucket/key`` with or without ``Range`` (``bytes=a-b``, ``bytes=a-``, ``bytes=-n``; 206 with
  ``Content-Range``; 416 ``InvalidRange`` past the end), ``If-Match`` (412 when the ETag differs);
  ``HEAD /bucket/key`` (the object's size in ``Content-Length``); 404 ``NoSuchKey``;
- ``GET /bucket?list-type=2`` (ListObjectsV2): ``prefix``, ``delimiter`` (common prefixes),
  ``max-keys``, ``start-after``, ``continuation-token``, ``encoding-type=url`` (botocore asks for it
  and decodes keys);
- ``HEAD /bucket`` and ``GET /bucket?location`` (s3fs's bucket probes); 404 ``NoSuchBucket``.

Not S3 (stated): **no authentication** (any or no signature is accepted, never checked), no
writes (PUT, POST and DELETE answer 403 ``AccessDenied``: the store is read-only), no versions,
no ListObjects v1 (501 ``NotImplemented``); ETags are each file's MD5 (as S3's for a single-part
upload), computed once at start; the objects are the files as they are at start (sizes and ETags
are not re-read). ``--delay`` is added to every request before it is answered, on a timer, so the
delays of concurrent requests overlap as a store's do; requests on one connection are answered in
order. Connections are kept alive (HTTP/1.1) unless the client closes them.

``GET /__bench_stats`` answers ``{"requests": N, "methods": {"GET": n, ...}, "cpu_seconds": S,
"delay": D, "most_in_flight": {"manifest": n, ...}}`` (requests served by method; this process's
CPU time: the store's own, which a real store does not add to the client's machine; the most
requests waiting at once for keys in a folder of each name, e.g. ``manifest``) and is neither counted nor delayed;
``GET /__bench_delay/S`` sets the delay to S seconds from then on. The same two paths as
``bench/slow_s3.py`` (moto), so ``bench/bench_spark_metadata.py --s3 --store lean|moto`` runs either.

A bench tool, not part of indexcore; ``tests/test_lean_s3.py`` checks its answers against moto's.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import bisect
import email.utils
import hashlib
import json
import os
import sys
import time
import urllib.parse
from xml.sax.saxutils import escape

STATS, DELAY = "/__bench_stats", "/__bench_delay/"
_XMLNS = "http://s3.amazonaws.com/doc/2006-03-01/"
_REASONS = {200: "OK", 204: "No Content", 206: "Partial Content", 400: "Bad Request", 403: "Forbidden",
            404: "Not Found", 405: "Method Not Allowed", 412: "Precondition Failed",
            416: "Requested Range Not Satisfiable", 501: "Not Implemented"}
_CHUNK = 1 << 16  # read a file in pieces of this size to compute its MD5


class Objects:
    """The bucket's objects: keys sorted (for listings), each key's file, size, ETag, time and the
    headers every answer about it carries (made once, not per request)."""

    def __init__(self, root: str, prefix: str = "", skip: tuple[str, ...] = ()):
        found = {}
        for folder, _dirs, names in os.walk(root):
            for name in names:
                if skip and name.endswith(skip):
                    continue
                path = os.path.join(folder, name)
                key = (prefix + os.path.relpath(path, root).replace(os.sep, "/")).lstrip("/")
                digest = hashlib.md5()
                with open(path, "rb") as f:
                    while chunk := f.read(_CHUNK):
                        digest.update(chunk)
                st = os.stat(path)
                etag = f'"{digest.hexdigest()}"'
                head = [("ETag", etag), ("Last-Modified", email.utils.formatdate(st.st_mtime, usegmt=True)),
                        ("Accept-Ranges", "bytes"), ("Content-Type", "binary/octet-stream")]
                found[key] = (path, st.st_size, etag, st.st_mtime, head)
        self.keys = sorted(found)
        self.by_key = found

    def listing(self, prefix: str, delimiter: str, start: str, max_keys: int,
                start_after: str = "") -> tuple[list, list, str | None]:
        """ListObjectsV2's page from ``start`` (the first key it may hold): (keys, common prefixes,
        the next page's start or None), at most ``max_keys`` entries (a common prefix counts one;
        one not after ``start_after`` is left out, as moto leaves it)."""
        keys, prefixes, n = [], [], 0
        at = bisect.bisect_left(self.keys, max(start, prefix))
        while at < len(self.keys):
            key = self.keys[at]
            if not key.startswith(prefix):
                break
            if n == max_keys:
                return keys, prefixes, key
            cut = key.find(delimiter, len(prefix)) if delimiter else -1
            if cut >= 0:
                common = key[:cut + len(delimiter)]
                at = bisect.bisect_left(self.keys, _after_all(common))  # every key under it rolled up
                if start_after and common <= start_after:
                    continue
                prefixes.append(common)
            else:
                keys.append(key)
                at += 1
            n += 1
        return keys, prefixes, None


def _after_all(prefix: str) -> str:
    """The least string after every string that starts with ``prefix``."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class Store:
    """What a request is answered with: the objects of one bucket, the delay and the counts."""

    def __init__(self, objects: Objects, bucket: str, delay: float):
        self.objects, self.bucket, self.delay = objects, bucket, delay
        self.requests, self.methods = 0, {}
        self.in_flight: dict[str, int] = {}  # requests waiting for their answer, by the key's folder name
        self.most_in_flight: dict[str, int] = {}  # the most there ever were at once, by folder name

    def answer(self, method: str, target: str, headers: dict) -> tuple[int, list, bytes]:
        """(status, headers, body) of one request (its path and query in ``target``)."""
        path, _, query = target.partition("?")
        path = urllib.parse.unquote(path)
        bucket, _, key = path.lstrip("/").partition("/")
        if method not in ("GET", "HEAD"):
            return _error(403, "AccessDenied", "this store is read-only", path, method)
        if bucket != self.bucket:
            return _error(404, "NoSuchBucket", "The specified bucket does not exist", bucket, method)
        if not key:
            args = urllib.parse.parse_qs(query, keep_blank_values=True)
            if method == "HEAD":
                return 200, [("x-amz-bucket-region", "us-east-1")], b""
            if "location" in args:
                return 200, [("Content-Type", "application/xml")], (
                    f'<?xml version="1.0" encoding="UTF-8"?>\n<LocationConstraint xmlns="{_XMLNS}"/>').encode()
            if args.get("list-type") == ["2"]:
                return self._list(args)
            return _error(501, "NotImplemented", "only ListObjectsV2 (list-type=2) lists", path, method)
        found = self.objects.by_key.get(key)
        if found is None:
            return _error(404, "NoSuchKey", "The specified key does not exist.", key, method)
        file, size, etag, _mtime, head = found
        wanted = headers.get("if-match")
        if wanted is not None and wanted != "*" and etag not in (w.strip() for w in wanted.split(",")):
            return _error(412, "PreconditionFailed", "At least one of the pre-conditions you specified did not hold",
                          key, method)
        if method == "HEAD":
            return 200, [*head, ("Content-Length", str(size))], b""
        span = _range(headers.get("range"), size)
        if span == "invalid":
            return _error(416, "InvalidRange", "The requested range is not satisfiable", key, method,
                          [("Content-Range", f"bytes */{size}")])
        lo, hi = span if span else (0, size - 1)
        fd = os.open(file, os.O_RDONLY)
        try:
            data = os.pread(fd, hi - lo + 1, lo) if hi >= lo else b""
        finally:
            os.close(fd)
        if span:
            return 206, [*head, ("Content-Range", f"bytes {lo}-{hi}/{size}")], data
        return 200, head, data

    def _list(self, args: dict) -> tuple[int, list, bytes]:
        """ListObjectsV2 (keys URL-encoded with ``encoding-type=url``, as botocore asks)."""
        one = {k: v[0] for k, v in args.items()}
        prefix, delimiter = one.get("prefix", ""), one.get("delimiter", "")
        max_keys = int(one.get("max-keys", "1000") or 1000)
        url = one.get("encoding-type") == "url"
        token = one.get("continuation-token")
        start_after = "" if token else one.get("start-after", "")  # a token wins, as moto answers
        start = base64.urlsafe_b64decode(token.encode()).decode() if token else (start_after + "\0" if start_after
                                                                                  else "")
        keys, prefixes, after = self.objects.listing(prefix, delimiter, start, max_keys, start_after)

        def text(s: str) -> str:
            return escape(urllib.parse.quote(s, safe="/~") if url else s)

        parts = [f'<?xml version="1.0" encoding="UTF-8"?>\n<ListBucketResult xmlns="{_XMLNS}">',
                 f"<Name>{escape(self.bucket)}</Name><Prefix>{text(prefix)}</Prefix>",
                 f"<MaxKeys>{max_keys}</MaxKeys><KeyCount>{len(keys) + len(prefixes)}</KeyCount>"]
        if delimiter:
            parts.append(f"<Delimiter>{text(delimiter)}</Delimiter>")
        if url:
            parts.append("<EncodingType>url</EncodingType>")
        if token:
            parts.append(f"<ContinuationToken>{escape(token)}</ContinuationToken>")
        if start_after:
            parts.append(f"<StartAfter>{text(start_after)}</StartAfter>")
        parts.append(f"<IsTruncated>{'true' if after is not None else 'false'}</IsTruncated>")
        if after is not None:
            parts.append(f"<NextContinuationToken>{base64.urlsafe_b64encode(after.encode()).decode()}"
                         "</NextContinuationToken>")
        for key in keys:
            _file, size, etag, mtime, _head = self.objects.by_key[key]
            stamp = time.strftime("%Y-%m-%dT%H:%M:%S.000Z", time.gmtime(mtime))
            parts.append(f"<Contents><Key>{text(key)}</Key><LastModified>{stamp}</LastModified>"
                         f"<ETag>{escape(etag)}</ETag><Size>{size}</Size><StorageClass>STANDARD</StorageClass>"
                         "</Contents>")
        parts.extend(f"<CommonPrefixes><Prefix>{text(p)}</Prefix></CommonPrefixes>" for p in prefixes)
        parts.append("</ListBucketResult>")
        return 200, [("Content-Type", "application/xml")], "".join(parts).encode()

    def stats(self) -> dict:
        return {"requests": self.requests, "methods": dict(self.methods), "cpu_seconds": time.process_time(),
                "delay": self.delay, "most_in_flight": dict(self.most_in_flight)}


def _range(value: str | None, size: int):
    """A ``Range`` header's (first, last) byte within ``size``; None for none or one S3 ignores (a
    list of ranges, another unit); "invalid" for a range that starts past the end."""
    if not value or not value.startswith("bytes=") or "," in value:
        return None
    first, dash, last = value[6:].strip().partition("-")
    if not dash:
        return None
    try:
        if not first:  # the last n bytes (of an empty object: the whole of it, as moto answers)
            n = int(last)
            return None if not size else (max(0, size - n), size - 1) if n > 0 else "invalid"
        lo = int(first)
        hi = min(int(last), size - 1) if last else size - 1
    except ValueError:
        return None
    if lo >= size:
        return "invalid"
    return None if hi < lo else (lo, hi)


def _error(status: int, code: str, message: str, resource: str, method: str,
           extra: list | None = None) -> tuple[int, list, bytes]:
    """S3's XML error (no body for HEAD, as S3 answers it)."""
    body = b"" if method == "HEAD" else (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<Error><Code>{code}</Code><Message>{escape(message)}</Message>'
        f"<Resource>{escape(resource)}</Resource><RequestId>0</RequestId></Error>").encode()
    return status, [("Content-Type", "application/xml"), *(extra or [])], body


class Connection(asyncio.Protocol):
    """One client connection: requests parsed as they arrive, each answered after the delay, in order."""

    def __init__(self, store: Store):
        self.store, self.buffer, self.transport = store, b"", None
        self.pending: list = []  # answers waiting for their delay, in request order
        self.closing = False

    def connection_made(self, transport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        while (end := self.buffer.find(b"\r\n\r\n")) >= 0:
            lines = self.buffer[:end].decode("latin-1").split("\r\n")
            headers = {}
            for line in lines[1:]:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
            length = int(headers.get("content-length") or 0)
            if len(self.buffer) < end + 4 + length:
                return  # the body is still coming (a write, refused once it is whole)
            self.buffer = self.buffer[end + 4 + length:]
            method, target, version = (lines[0].split(" ") + ["", "", ""])[:3]
            close = headers.get("connection", "").lower() == "close" or version == "HTTP/1.0"
            self._request(method, target, headers, close)

    def _request(self, method: str, target: str, headers: dict, close: bool) -> None:
        store = self.store
        if target == STATS or target.startswith(DELAY):
            if target.startswith(DELAY):
                store.delay = float(target[len(DELAY):])
            body = json.dumps(store.stats()).encode()
            entry = [(200, [("Content-Type", "application/json")], body), close, method]
            self.pending.append(entry)
            self._flush()
            return
        store.requests += 1
        store.methods[method] = store.methods.get(method, 0) + 1
        try:
            answer = store.answer(method, target, headers)
        except Exception as exc:  # a bench tool: say what broke, keep serving
            answer = _error(400, "InvalidRequest", f"{type(exc).__name__}: {exc}", target, method)
        entry = [None, close, method]
        self.pending.append(entry)
        folder = target.partition("?")[0].rsplit("/", 2)[-2] if target.count("/") >= 2 else ""
        now = store.in_flight[folder] = store.in_flight.get(folder, 0) + 1
        store.most_in_flight[folder] = max(store.most_in_flight.get(folder, 0), now)
        asyncio.get_running_loop().call_later(store.delay, self._ready, entry, answer, folder)

    def _ready(self, entry: list, answer, folder: str) -> None:
        entry[0] = answer
        self.store.in_flight[folder] -= 1
        self._flush()

    def _flush(self) -> None:
        while self.pending and self.pending[0][0] is not None and not self.closing:
            (status, headers, body), close, method = self.pending.pop(0)
            if self.transport.is_closing():
                return
            length = next((v for k, v in headers if k == "Content-Length"), str(len(body)))
            head = "".join(f"{k}: {v}\r\n" for k, v in headers if k != "Content-Length")
            self.transport.write(
                (f"HTTP/1.1 {status} {_REASONS.get(status, 'Status')}\r\n{head}Content-Length: {length}\r\n"
                 f"x-amz-request-id: 0\r\n{'Connection: close' + chr(13) + chr(10) if close else ''}\r\n").encode()
                + (b"" if method == "HEAD" else body))
            if close:
                self.closing = True
                self.transport.close()


async def serve(objects: Objects, bucket: str, delay: float, port: int = 0, ready=None) -> None:
    """Serve until cancelled; ``ready(port)`` is called once it listens."""
    store = Store(objects, bucket, delay)
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: Connection(store), "127.0.0.1", port, backlog=1024)
    if ready is not None:
        ready(server.sockets[0].getsockname()[1])
    async with server:
        await server.serve_forever()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("root", metavar="DIR", help="the directory whose files become the bucket's objects")
    ap.add_argument("--delay", type=float, default=0.02, help="seconds added to every request (default 0.02)")
    ap.add_argument("--bucket", default="lake")
    ap.add_argument("--prefix", default="", help="key prefix the files are served under")
    ap.add_argument("--skip-suffix", action="append", default=[], help="leave out files ending so")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    args = ap.parse_args()
    objects = Objects(args.root, args.prefix, tuple(args.skip_suffix))
    size = sum(v[1] for v in objects.by_key.values())

    def ready(port: int) -> None:
        print(json.dumps({"port": port, "objects": len(objects.keys), "bytes": size}), flush=True)

    asyncio.run(serve(objects, args.bucket, args.delay, args.port, ready))


if __name__ == "__main__":
    sys.exit(main())
