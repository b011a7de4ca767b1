"""Plain S3 GETs signed and sent over the S3 client's own connections, without botocore's
per-call machinery.

A census reads one ``.index`` head per file: 10^5 to 10^6 small GETs. Through s3fs each
``get_object`` runs botocore's whole call path (event hooks, parameter building and validation,
endpoint rules, signing, response parsing): about 1.3 ms of client CPU per request on this
machine, against about 0.4 ms here (most of it aiohttp's and asyncio's own). :class:`DirectGets`
keeps what makes the request the backend's own and drops the rest: the URL comes from the
client's own presigned ``get_object`` (endpoint, addressing style), the signature is SigV4
(:class:`SigV4`, checked against botocore's in the tests) for the client's region (the bucket's,
when s3fs keeps a client per bucket region) with the client's own credentials (the storage
options' keys, profile or chain, never another's; refreshed as botocore refreshes them), and the
request goes out through the client's own HTTP session (proxies, TLS settings, timeouts, pool).
Anything but a 2xx answer is handed back for the s3fs path to make again, which reports errors,
retries and redirects as before; an answer that says the signing or the address is wrong (3xx,
400, 403) turns the direct path off for that bucket.

Only filesystems whose options ask for nothing more than a plain GET take it: not anonymous,
not version-aware, no requester-pays, no extra request arguments (SSE-C keys...), SigV4.
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import hashlib
import hmac
import re
import threading
import time
import urllib.parse
from dataclasses import dataclass

# answers that say the request itself was wrong for this bucket (address, region, signature)
_WRONG_FOR_BUCKET = frozenset({301, 302, 307, 308, 400, 403})
_PROBE_KEY = "indexcore-probe"
_EMPTY_SHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
# a file name that percent-encoding leaves as it is (Paimon's: uuid, counters, suffixes)
_UNQUOTED = re.compile(r"[A-Za-z0-9_.~-]*")


@dataclass(frozen=True)
class Got:
    """One direct GET's bytes and the object's whole size (from ``Content-Range``; None if untold)."""

    data: bytes
    size: int | None


@dataclass(frozen=True)
class _Bucket:
    """How requests to one bucket are made: the origin and path before the key, the ``Host``
    signed, the signing region, the client."""

    origin: str
    path: str
    host: str
    region: str
    client: object


class SigV4:
    """AWS Signature Version 4 of a plain GET without a query (the header form S3 takes), with
    the signing key derived once per day: botocore derives it and rebuilds the canonical
    request through its general machinery on every call (about 80 us per request)."""

    def __init__(self, access_key: str, secret_key: str, token: str | None, region: str):
        self.access_key, self.token, self.region = access_key, token, region
        self._secret = secret_key
        self._day_key: tuple[str, bytes] | None = None
        self._stamp: tuple[int, str] = (-1, "")  # the second and its ISO 8601 basic form

    def _key(self, day: str) -> bytes:
        kept = self._day_key
        if kept is None or kept[0] != day:
            key = ("AWS4" + self._secret).encode()
            for part in (day, self.region, "s3", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._day_key = kept = (day, key)
        return kept[1]

    def headers(self, host: str, path: str, byte_range: str | None, when: _dt.datetime | None = None) -> dict:
        """The signed headers of ``GET path`` on ``host`` (``path`` as sent, percent-encoded)."""
        if when is not None:
            stamp = when.strftime("%Y%m%dT%H%M%SZ")
        else:  # formatted once a second
            second = int(time.time())
            if self._stamp[0] != second:
                self._stamp = (second, time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(second)))
            stamp = self._stamp[1]
        day = stamp[:8]
        signed = {"host": host}
        if byte_range is not None:
            signed["range"] = byte_range
        signed["x-amz-content-sha256"] = _EMPTY_SHA256
        signed["x-amz-date"] = stamp
        if self.token:
            signed["x-amz-security-token"] = self.token
        names = ";".join(signed)  # already in sorted order
        canonical = "\n".join(["GET", path, "", *(f"{k}:{v}" for k, v in signed.items()), "", names, _EMPTY_SHA256])
        scope = f"{day}/{self.region}/s3/aws4_request"
        to_sign = f"AWS4-HMAC-SHA256\n{stamp}\n{scope}\n{hashlib.sha256(canonical.encode()).hexdigest()}"
        signature = hmac.new(self._key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        signed["authorization"] = (f"AWS4-HMAC-SHA256 Credential={self.access_key}/{scope}, "
                                   f"SignedHeaders={names}, Signature={signature}")
        return signed


class DirectGets:
    """Signed ranged GETs for one s3fs filesystem (:meth:`of`: None when it must keep s3fs's path)."""

    def __init__(self, fs):
        self.fs = fs
        self._buckets: dict[str, _Bucket | None] = {}  # None: this bucket takes the s3fs path
        self._lock = threading.Lock()

    @classmethod
    def of(cls, fs) -> DirectGets | None:
        """A :class:`DirectGets` for ``fs`` when it is s3fs's and its options ask for a plain GET."""
        if type(fs).__module__.split(".")[0] != "s3fs" or not getattr(fs, "async_impl", False):
            return None
        plain = (not getattr(fs, "anon", True) and not getattr(fs, "version_aware", True)
                 and not getattr(fs, "req_kw", True) and not getattr(fs, "s3_additional_kwargs", True))
        return cls(fs) if plain else None

    def fetch(self, paths: list[str], starts: list[int | None], ends: list[int | None],
              concurrency: int) -> list[Got | None]:
        """Each path's bytes ``[start, end)`` (``end=None``: the whole object), ``concurrency`` at a
        time; None for a fetch the s3fs path must make (an error, a bucket not taken directly)."""
        from fsspec.asyn import sync  # fsspec's loop for async filesystems (s3fs is optional)

        try:
            return sync(self.fs.loop, self._fetch_all, paths, starts, ends, max(concurrency, 1))
        except Exception:  # noqa: BLE001  (setting up failed: every fetch goes the s3fs way)
            return [None] * len(paths)

    async def _fetch_all(self, paths, starts, ends, concurrency: int) -> list[Got | None]:
        split = [self.fs.split_path(p)[:2] for p in paths]
        folders: dict[str, str] = {}  # each folder percent-encoded once, as botocore encodes keys
        quoted = []
        for _, key in split:
            folder, slash, name = key.rpartition("/")
            encoded = folders.get(folder)
            if encoded is None:
                encoded = folders[folder] = urllib.parse.quote(folder, safe="/~")
            quoted.append(encoded + slash + (name if _UNQUOTED.fullmatch(name) else urllib.parse.quote(name, safe="~")))
        targets = {b: await self._bucket(b) for b in {b for b, _ in split}}
        signers = {}
        for b, t in targets.items():
            if t is not None:
                credentials = t.client._request_signer._credentials
                if credentials is None:
                    targets[b] = None
                    continue
                frozen = credentials.get_frozen_credentials()
                if asyncio.iscoroutine(frozen):  # aiobotocore's refreshable credentials
                    frozen = await frozen
                signers[b] = SigV4(frozen.access_key, frozen.secret_key, frozen.token, t.region)
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> Got | None:
            bucket = split[i][0]
            target = targets[bucket]
            if target is None or self._buckets.get(bucket) is None:
                return None
            async with gate:
                return await self._get(bucket, target, signers[bucket], quoted[i], starts[i], ends[i])

        return list(await asyncio.gather(*(one(i) for i in range(len(paths)))))

    async def _bucket(self, bucket: str) -> _Bucket | None:
        """The bucket's URL prefix (from the client's own presigned URL) and signing region."""
        if bucket in self._buckets:
            return self._buckets[bucket]
        target = None
        if not bucket.endswith("--x-s3"):  # S3 Express signs with its own sessions
            try:
                await self.fs.set_session()
                client = await self.fs.get_s3(bucket)
                signer = client._request_signer
                if signer.signature_version in ("s3v4", "v4") and hasattr(client._endpoint, "http_session"):
                    url = await client.generate_presigned_url("get_object",
                                                              Params={"Bucket": bucket, "Key": _PROBE_KEY})
                    parts = urllib.parse.urlsplit(url)
                    region = client.meta.region_name
                    region = "us-east-1" if region in (None, "aws-global") else region  # botocore's default
                    if parts.path.endswith("/" + _PROBE_KEY) and not parts.fragment and not parts.username:
                        target = _Bucket(f"{parts.scheme}://{parts.netloc}", parts.path[:-len(_PROBE_KEY)],
                                         _host(parts), region, client)
            except Exception:  # noqa: BLE001  (no direct path for this bucket: s3fs's own)
                target = None
        with self._lock:
            self._buckets.setdefault(bucket, target)
        return self._buckets[bucket]

    async def _get(self, bucket: str, target: _Bucket, signer: SigV4, quoted_key: str, start: int | None,
                   end: int | None) -> Got | None:
        from botocore.awsrequest import AWSPreparedRequest  # what the client's HTTP session sends

        ranged = end is not None
        if ranged:
            start = start or 0
            if end <= start:
                return None  # an empty range: s3fs's answer, whatever it is
        path = target.path + quoted_key
        try:
            headers = signer.headers(target.host, path, f"bytes={start}-{end - 1}" if ranged else None)
            request = AWSPreparedRequest("GET", target.origin + path, headers, None, False)
            answer = await target.client._endpoint.http_session.send(request)
            status = answer.status_code
            data = await answer.content if 200 <= status < 300 else None
        except Exception:  # noqa: BLE001  (a broken connection: the s3fs path retries and reports)
            return None
        if data is None:
            if status in _WRONG_FOR_BUCKET:
                with self._lock:
                    self._buckets[bucket] = None
            return None
        if status == 200:  # the whole object (a store that ignored the range)
            size = len(data)
            return Got(data[start:end] if ranged else data, size)
        told = answer.headers.get("content-range", "").rpartition("/")[2]
        return Got(data, int(told) if told.isdigit() else None)


def _host(parts: urllib.parse.SplitResult) -> str:
    """The ``Host`` a request to ``parts`` carries, as botocore signs it: lowercase, without a
    default port, IPv6 in brackets."""
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    if port is not None and port != {"http": 80, "https": 443}.get(parts.scheme):
        host = f"{host}:{port}"
    return host
