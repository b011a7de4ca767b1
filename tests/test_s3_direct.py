"""Direct S3 GETs (:mod:`indexcore.io.s3_direct`): the census on an S3 API makes one GET per
``.index`` file and no HEAD, equal to the local census; each request is signed with the storage
options' own credentials (checked with botocore's signer on what a real HTTP server received),
never the server's; answers other than 2xx are made again through s3fs, which reports them.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import threading
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from indexcore.errors import StorageError
from indexcore.io import Fetch, Storage
from indexcore.io.s3_direct import DirectGets, SigV4

ROOT = Path(__file__).resolve().parent.parent
USER = ("user-key", "user-secret/+=")
OPERATOR = ("AKIAOPERATOR", "operator-secret")
SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"


@pytest.fixture
def aws_env(monkeypatch):
    """The server's own credentials in the environment (which a user's requests must never carry)."""
    pytest.importorskip("s3fs")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", OPERATOR[0])
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", OPERATOR[1])
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_CONFIG_FILE", "/nonexistent")
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    for k in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.delenv(k, raising=False)


@pytest.mark.parametrize("token", [None, "session/token+="])
@pytest.mark.parametrize("byte_range", [None, "bytes=0-262143", "bytes=100-199"])
@pytest.mark.parametrize("host,path", [("bucket.s3.eu-west-2.amazonaws.com", "/a%20b/c~d.index"),
                                       ("127.0.0.1:9000", "/lake/db.db/t/bucket-0/x%E2%82%AC.index"),
                                       ("[::1]:9000", "/lake/k")])
def test_sigv4_equals_botocore(token, byte_range, host, path):
    """Our signature of a plain GET is botocore's for the same request, time and credentials."""
    botocore_auth = pytest.importorskip("botocore.auth")
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import ReadOnlyCredentials

    def botocore_signature(headers: dict, token: str | None) -> str:
        request = AWSRequest("GET", f"http://{host}{path}",
                             headers={k: v for k, v in headers.items() if k not in ("authorization", "host")})
        request.context["timestamp"] = headers["x-amz-date"]
        auth = botocore_auth.S3SigV4Auth(ReadOnlyCredentials("AKIDEXAMPLE", SECRET, token), "s3", "eu-west-2")
        return auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)

    when = dt.datetime(2026, 11, 27, 23, 59, 58, tzinfo=dt.UTC)
    signer = SigV4("AKIDEXAMPLE", SECRET, token, "eu-west-2")
    headers = signer.headers(host, path, byte_range, when)
    assert headers["x-amz-date"] == "20261127T235958Z"
    assert headers["authorization"].endswith(f"Signature={botocore_signature(headers, token)}")
    assert "Credential=AKIDEXAMPLE/20261127/eu-west-2/s3/aws4_request" in headers["authorization"]
    # the next day's key is derived again, not kept from the day before
    later = signer.headers(host, path, byte_range, when + dt.timedelta(seconds=5))
    assert later["authorization"].endswith(f"Signature={botocore_signature(later, token)}")
    assert "Credential=AKIDEXAMPLE/20261128/" in later["authorization"]


def test_options_that_need_more_than_a_plain_get_keep_s3fs(aws_env):
    s3fs = pytest.importorskip("s3fs")
    opts = {"endpoint_url": "http://127.0.0.1:9", "skip_instance_cache": True}
    assert DirectGets.of(s3fs.S3FileSystem(key="a", secret="b", **opts)) is not None
    for extra in ({"anon": True}, {"requester_pays": True}, {"version_aware": True},
                  {"s3_additional_kwargs": {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": "k" * 32}}):
        assert DirectGets.of(s3fs.S3FileSystem(key="a", secret="b", **opts, **extra)) is None, extra
    memory = Storage("memory://direct-test")
    assert memory._direct is None


def test_the_client_pool_is_as_large_as_the_concurrency(aws_env):
    opts = {"endpoint_url": "http://127.0.0.1:9", "key": "a", "secret": "b", "skip_instance_cache": True}
    assert Storage("s3://lake/wh", storage_options=opts, concurrency=48).fs.config_kwargs[
        "max_pool_connections"] == 48
    kept = {**opts, "config_kwargs": {"max_pool_connections": 7, "connect_timeout": 3}}
    storage = Storage("s3://lake/wh", storage_options=kept, concurrency=48)
    assert storage.fs.config_kwargs == {"max_pool_connections": 7, "connect_timeout": 3}
    assert storage.storage_options == kept  # the user's options as given


class _Recorder(ThreadingHTTPServer):
    """An S3-like HTTP server on 127.0.0.1 that records every request (method, path, headers) and
    serves ``objects`` (path -> bytes) with ranges; other keys are NoSuchKey, ``denied`` keys 403."""

    daemon_threads = True

    def __init__(self, objects: dict[str, bytes], denied: set[str] = frozenset()):
        self.objects, self.denied, self.seen = objects, denied, []
        super().__init__(("127.0.0.1", 0), _RecorderHandler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _RecorderHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:
        pass

    def _answer(self, code: int, body: bytes, headers: dict) -> None:
        self.send_response(code)
        for k, v in headers.items():
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self) -> None:  # noqa: N802
        self.server.seen.append((self.command, self.path, {k.lower(): v for k, v in self.headers.items()}))
        path = urllib.parse.unquote(self.path.split("?", 1)[0])
        if path in self.server.denied:
            return self._answer(403, b"<Error><Code>AccessDenied</Code><Message>no</Message></Error>",
                                {"Content-Type": "application/xml"})
        data = self.server.objects.get(path)
        if data is None:
            return self._answer(404, b"<Error><Code>NoSuchKey</Code><Message>none</Message></Error>",
                                {"Content-Type": "application/xml"})
        wanted = re.fullmatch(r"bytes=(\d+)-(\d+)", self.headers.get("range", ""))
        if wanted is None:
            return self._answer(200, data, {"ETag": '"e"', "Last-Modified": "Fri, 27 Nov 2026 00:00:00 GMT"})
        lo, hi = int(wanted[1]), min(int(wanted[2]), len(data) - 1)
        return self._answer(206, data[lo:hi + 1], {"Content-Range": f"bytes {lo}-{hi}/{len(data)}", "ETag": '"e"'})

    do_HEAD = do_GET


@pytest.fixture
def recorder():
    objects = {"/lake/wh/a.index": bytes(range(256)) * 4, "/lake/wh/b.index": b"b" * 5000,
               "/lake/wh/big.index": b"x" * 300_000, "/lake/wh/sub dir/c€.index": b"c" * 10,
               "/lake/wh/snapshot/LATEST": b"12"}
    server = _Recorder(objects, denied={"/lake/wh/secret.index"})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def _verify(seen: list, secret: str) -> None:
    """Each recorded request's signature, recomputed with botocore from the headers received."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import ReadOnlyCredentials

    for method, path, headers in seen:
        lower = headers
        found = re.fullmatch(r"AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/s3/aws4_request, "
                             r"SignedHeaders=([^,]+), Signature=([0-9a-f]{64})", lower["authorization"])
        assert found, lower["authorization"]
        key, _day, region, names, signature = found.groups()
        signed = {n: lower[n] for n in names.split(";") if n != "host"}
        request = AWSRequest(method, f"http://{lower['host']}{path}", headers=signed)
        request.context["timestamp"] = lower["x-amz-date"]
        auth = S3SigV4Auth(ReadOnlyCredentials(key, secret, None), "s3", region)
        assert auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request) == signature


def test_direct_gets_carry_the_users_credentials_one_request_each(aws_env, recorder):
    """Fetches are one GET each (whole files too: no HEAD), signed with the options' key (checked
    with botocore on what the server received), never the environment's; sizes come from the answer."""
    storage = Storage("s3://lake/wh", storage_options={"endpoint_url": recorder.url, "key": USER[0],
                                                       "secret": USER[1], "skip_instance_cache": True})
    assert storage._direct is not None
    got = storage.fetch_many([Fetch("a.index", 0, 100), Fetch("b.index"), Fetch("big.index", 0, 1000),
                              Fetch("sub dir/c€.index", 2, 8), Fetch("a.index", 1000, 5000)])
    assert got == [bytes(range(100)), b"b" * 5000, b"x" * 1000, b"c" * 6, (bytes(range(256)) * 4)[1000:]]
    assert sorted((m, p, h.get("range", "")) for m, p, h in recorder.seen) == [  # made side by side
        ("GET", "/lake/wh/a.index", "bytes=0-99"), ("GET", "/lake/wh/a.index", "bytes=1000-4999"),
        ("GET", "/lake/wh/b.index", ""), ("GET", "/lake/wh/big.index", "bytes=0-999"),
        ("GET", "/lake/wh/sub%20dir/c%E2%82%AC.index", "bytes=2-7")]
    assert all(f"Credential={USER[0]}/" in h["authorization"] for _, _, h in recorder.seen)
    assert not any(OPERATOR[0] in json.dumps(h) for _, _, h in recorder.seen)
    _verify(recorder.seen, USER[1])
    # the big file's size came with its range: reading its start costs one GET, no HEAD
    assert storage.cache.size("lake/wh/big.index") == 300_000
    n = len(recorder.seen)
    assert storage.read_prefix("big.index", 1000)[1] == 300_000
    assert [(m, h.get("range")) for m, _, h in recorder.seen[n:]] == [("GET", "bytes=0-999")]
    # a hint rewritten in place: read, its size never kept
    assert storage.fetch_many([Fetch("snapshot/LATEST", 0, 1)]) == [b"1"]
    assert storage.cache.size("lake/wh/snapshot/LATEST") is None
    # a whole file: one GET without a range (s3fs's path sends a HEAD for its size first), then cached
    n = len(recorder.seen)
    assert storage.read_bytes("b.index") == storage.read_bytes("b.index") == b"b" * 5000
    assert [(m, p, h.get("range")) for m, p, h in recorder.seen[n:]] == [("GET", "/lake/wh/b.index", None)]
    assert all(f"Credential={USER[0]}/" in h["authorization"] for _, _, h in recorder.seen)


def test_failed_direct_gets_are_made_again_through_s3fs_and_reported(aws_env, recorder):
    """A missing key and a denied one: s3fs asks again (with the same user's key) and the read
    names the file; a 403 turns the direct path off for the bucket."""
    storage = Storage("s3://lake/wh", storage_options={"endpoint_url": recorder.url, "key": USER[0],
                                                       "secret": USER[1], "skip_instance_cache": True,
                                                       "config_kwargs": {"retries": {"max_attempts": 1}}})
    got = storage.fetch_many([Fetch("missing.index", 0, 10), Fetch("a.index", 0, 4)])
    assert isinstance(got[0], FileNotFoundError) and got[1] == bytes(range(4))
    assert [p for _, p, _ in recorder.seen].count("/lake/wh/missing.index") >= 2  # direct, then s3fs
    with pytest.raises(StorageError, match="missing.index"):
        storage.read_prefix("missing.index", 100)
    assert storage._direct._buckets["lake"] is not None  # a missing key is no reason to stop
    denied = storage.fetch_many([Fetch("secret.index", 0, 10)])[0]
    assert isinstance(denied, OSError) and not isinstance(denied, FileNotFoundError)
    assert storage._direct._buckets["lake"] is None
    with pytest.raises(StorageError, match="secret.index"):
        storage.read_prefix("secret.index", 100)
    assert all(f"Credential={USER[0]}/" in h["authorization"] for _, _, h in recorder.seen)
    _verify(recorder.seen, USER[1])
    n = len(recorder.seen)
    assert storage.fetch_many([Fetch("b.index", 0, 10)]) == [b"b" * 10]
    assert len(recorder.seen) == n + 1  # s3fs's own request now


def test_census_on_s3_one_get_per_index_file_no_head(tmp_path, aws_env):
    """The census of a bulk sample from ``bench/slow_s3.py`` (moto, connections kept alive) equals
    the local census; the store counts by method: no HEAD per file (whole manifests included), one
    GET per ``.index`` file plus the metadata files."""
    pytest.importorskip("moto")
    from indexcore import open_warehouse
    from indexcore.views.census import file_indexes
    from indexcore.views.census_rows import plain
    from indexcore.write.bulk_sample import build_large_bulk

    build_large_bulk(str(tmp_path), seed=3, files=120, workers=1)
    local = open_warehouse(str(tmp_path)).table("large.events")
    want = plain(file_indexes(local)).drop_columns(["file_path", "index_file_path"])
    index_files = {lf.index_path for lf in local.plan().files if lf.index_path and lf.file.embedded_index is None}
    metadata = sum(len(files) for folder, _, files in os.walk(tmp_path / "large.db" / "events")
                   if os.path.basename(folder) in ("snapshot", "manifest", "schema"))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "slow_s3.py"), str(tmp_path), "--delay", "0",
                             "--skip-suffix", ".parquet", "--skip-suffix", ".orc"], stdout=subprocess.PIPE,
                            text=True, env=env)
    try:
        endpoint = f"http://127.0.0.1:{json.loads(proc.stdout.readline())['port']}"

        def methods() -> dict:
            with urllib.request.urlopen(endpoint + "/__bench_stats") as r:
                return json.loads(r.read())["methods"]

        opts = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "skip_instance_cache": True}
        before = methods()
        got = file_indexes(open_warehouse("s3://lake", storage_options=opts).table("large.events"))
        after = methods()
    finally:
        proc.kill()
        proc.wait()
    assert plain(got).drop_columns(["file_path", "index_file_path"]).equals(want)
    heads = after.get("HEAD", 0) - before.get("HEAD", 0)
    gets = after.get("GET", 0) - before.get("GET", 0)
    assert len(index_files) > 20
    assert heads <= 1, (heads, gets)  # the table's existence check; never one per file
    assert len(index_files) <= gets <= len(index_files) + metadata, (gets, len(index_files), metadata)
