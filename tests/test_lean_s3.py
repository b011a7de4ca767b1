"""``bench/lean_s3.py`` (the bench's lean read-only S3 stand-in) answers as moto answers.

The same files are served by both: moto's own server (the tests' store; each file put with
``put_object``) and the stand-in over the directory. Every request the census and s3fs make is
sent to both through botocore and s3fs (GET whole and by range, HEAD, missing keys, ``If-Match``,
ListObjectsV2 with prefix, delimiter, max-keys, start-after and continuation tokens followed to the
end), and the parsed answers are compared field by field (times and opaque tokens aside). Then the
census of a bulk-built warehouse from the stand-in equals the local census.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest
from moto_s3 import KEY, SECRET, moto_s3

ROOT = Path(__file__).resolve().parent.parent
KEYS = ["a.txt", "dir/b.bin", "dir/sub/c", "dir/sub/d e+f.txt", "dir/sub/deep/e", "dir/\u00fc.txt", "empty",
        "x/y/z/w.dat", "dir/sub%41.txt", *[f"many/{i:03d}.part" for i in range(23)]]


def _content(key: str) -> bytes:
    if key == "empty":
        return b""
    seed = sum(key.encode())
    return bytes((seed * 7 + i * 13) % 251 for i in range(50 + 97 * (seed % 11)))


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    """(moto client, stand-in client, moto s3fs, stand-in s3fs) over the same objects."""
    boto3 = pytest.importorskip("boto3")
    s3fs = pytest.importorskip("s3fs")
    root = tmp_path_factory.mktemp("lean")
    for key in KEYS:
        (root / key).parent.mkdir(parents=True, exist_ok=True)
        (root / key).write_bytes(_content(key))
    with moto_s3("lake") as moto:
        lean = subprocess.Popen([sys.executable, str(ROOT / "bench" / "lean_s3.py"), str(root), "--delay", "0"],
                                stdout=subprocess.PIPE, text=True)
        try:
            info = json.loads(lean.stdout.readline())
            endpoints = [moto, f"http://127.0.0.1:{info['port']}"]
            clients = [boto3.client("s3", endpoint_url=e, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                                    region_name="us-east-1") for e in endpoints]
            for key in KEYS:
                clients[0].put_object(Bucket="lake", Key=key, Body=_content(key))
            filesystems = [s3fs.S3FileSystem(endpoint_url=e, key=KEY, secret=SECRET, skip_instance_cache=True)
                           for e in endpoints]
            assert info["objects"] == len(KEYS)
            yield (*clients, *filesystems, endpoints[1])
        finally:
            lean.kill()
            lean.wait()


def _call(client, method: str, **kwargs) -> dict:
    """The parsed answer without what differs by store and time, or the error's status and code."""
    from botocore.exceptions import ClientError  # botocore: an optional dependency (s3fs's)

    try:
        out = getattr(client, method)(Bucket="lake", **kwargs)
    except ClientError as exc:
        return {"status": exc.response["ResponseMetadata"]["HTTPStatusCode"], "code": exc.response["Error"]["Code"]}
    if "Body" in out:
        out["Body"] = out["Body"].read()
    keep = ("Body", "ContentLength", "ContentRange", "ETag", "Contents", "CommonPrefixes", "KeyCount",
            "IsTruncated", "Prefix", "Delimiter", "MaxKeys", "StartAfter")
    got = {k: v for k, v in out.items() if k in keep}
    got["Contents"] = [{k: c[k] for k in ("Key", "Size", "ETag")} for c in got.get("Contents", [])]
    got["status"] = out["ResponseMetadata"]["HTTPStatusCode"]
    return got


@pytest.mark.parametrize("key", KEYS)
def test_objects_by_get_head_and_range(stores, key):
    moto, lean, *_ = stores
    size = len(_content(key))
    asks = [("head_object", {}), ("get_object", {})]
    ranges = ["bytes=0-9", "bytes=5-", "bytes=-7", "bytes=3-100000", f"bytes={size}-{size + 5}", "bytes=0-0"]
    asks += [("get_object", {"Range": r}) for r in ranges]
    asks += [("get_object", {"IfMatch": '"0123"'}), ("head_object", {"IfMatch": '"0123"'})]
    etag = moto.head_object(Bucket="lake", Key=key)["ETag"]
    asks += [("get_object", {"IfMatch": etag, "Range": "bytes=1-4"})]
    for method, kwargs in asks:
        a, b = _call(moto, method, Key=key, **kwargs), _call(lean, method, Key=key, **kwargs)
        if key == "empty" and "Range" in kwargs and a.get("status") == 416 == b.get("status"):
            continue  # both refuse a range of an empty object (moto and S3 differ in the code's name)
        assert a == b, (method, kwargs)


def test_missing_objects_and_bucket(stores):
    moto, lean, *_ = stores
    for method in ("get_object", "head_object"):
        for key in ("nope", "dir", "dir/", "dir/sub/nope"):
            assert _call(moto, method, Key=key) == _call(lean, method, Key=key), (method, key)
    assert _call(lean, "get_object", Key="a.txt")["status"] == 200
    for client in (moto, lean):
        with pytest.raises(Exception, match="NoSuch|404"):
            client.head_object(Bucket="other", Key="a.txt")


def _pages(client, **kwargs) -> list[dict]:
    """Every page of a listing, each token followed (the tokens themselves are each store's own)."""
    pages = []
    while True:
        page = _call(client, "list_objects_v2", **kwargs)
        pages.append(page)
        if not page.get("IsTruncated"):
            return pages
        kwargs["ContinuationToken"] = client.list_objects_v2(Bucket="lake", **kwargs)["NextContinuationToken"]


@pytest.mark.parametrize("prefix", ["", "dir/", "dir/s", "dir/sub/", "many/", "many/01", "nope/", "x"])
@pytest.mark.parametrize("delimiter", [None, "/"])
@pytest.mark.parametrize("max_keys", [None, 1, 7])
def test_list_objects_v2(stores, prefix, delimiter, max_keys):
    moto, lean, *_ = stores
    kwargs = {"Prefix": prefix}
    if delimiter:
        kwargs["Delimiter"] = delimiter
    if max_keys:
        kwargs["MaxKeys"] = max_keys
    a, b = _pages(moto, **dict(kwargs)), _pages(lean, **dict(kwargs))
    assert len(a) == len(b)
    assert a == b
    if prefix == "":
        start = {"StartAfter": "dir/sub/c"}
        assert _pages(moto, **kwargs, **start) == _pages(lean, **kwargs, **start)


def test_s3fs_sees_the_same_tree(stores):
    *_, moto_fs, lean_fs, _endpoint = stores
    assert lean_fs.find("lake") == moto_fs.find("lake")
    assert lean_fs.find("lake", withdirs=True) == moto_fs.find("lake", withdirs=True)
    for path in ("lake", "lake/dir", "lake/dir/sub", "lake/many"):
        assert lean_fs.ls(path, detail=False) == moto_fs.ls(path, detail=False)
    for path in ("lake/a.txt", "lake/dir", "lake/dir/sub/d e+f.txt", "lake/empty"):
        a, b = moto_fs.info(path), lean_fs.info(path)
        assert {k: a.get(k) for k in ("type", "size", "ETag")} == {k: b.get(k) for k in ("type", "size", "ETag")}
    for key in KEYS:
        assert lean_fs.cat_file(f"lake/{key}") == moto_fs.cat_file(f"lake/{key}") == _content(key)
        if _content(key):
            assert lean_fs.cat_file(f"lake/{key}", start=3, end=40) == _content(key)[3:40]
        else:  # a range of an empty object: refused by both
            for fs in (moto_fs, lean_fs):
                with pytest.raises(OSError, match="range"):
                    fs.cat_file(f"lake/{key}", start=3, end=40)
    assert lean_fs.exists("lake") and not lean_fs.exists("lake/nope")


def test_read_only_and_counted(stores):
    """Writes are refused (the store is read-only); requests are counted by method."""
    _moto, lean, *_rest, endpoint = stores
    with urllib.request.urlopen(endpoint + "/__bench_stats") as r:
        before = json.loads(r.read())
    with pytest.raises(Exception, match="AccessDenied"):
        lean.put_object(Bucket="lake", Key="new", Body=b"x")
    with pytest.raises(Exception, match="AccessDenied"):
        lean.delete_object(Bucket="lake", Key="a.txt")
    lean.head_object(Bucket="lake", Key="a.txt")
    with urllib.request.urlopen(endpoint + "/__bench_stats") as r:
        after = json.loads(r.read())
    grew = {m: after["methods"].get(m, 0) - before["methods"].get(m, 0) for m in after["methods"]}
    assert grew.get("HEAD") == 1 and grew.get("PUT", 0) >= 1 and grew.get("DELETE", 0) >= 1
    assert after["cpu_seconds"] >= before["cpu_seconds"] > 0


def test_census_from_the_stand_in_equals_the_local_one(tmp_path, stores):
    """A bulk-built warehouse's census read from the stand-in equals the local census."""
    from indexcore import open_warehouse
    from indexcore.views.census import file_indexes
    from indexcore.views.census_rows import plain
    from indexcore.write.bulk_sample import build_large_bulk

    build_large_bulk(str(tmp_path), seed=5, files=120, workers=1)
    want = plain(file_indexes(open_warehouse(str(tmp_path)).table("large.events")))
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "lean_s3.py"), str(tmp_path), "--delay", "0",
                             "--skip-suffix", ".parquet", "--skip-suffix", ".orc"], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        endpoint = f"http://127.0.0.1:{json.loads(proc.stdout.readline())['port']}"
        opts = {"endpoint_url": endpoint, "key": "testing", "secret": "testing", "skip_instance_cache": True}
        got = plain(file_indexes(open_warehouse("s3://lake", storage_options=opts).table("large.events")))
    finally:
        proc.kill()
        proc.wait()
    paths = ["file_path", "index_file_path"]
    assert got.drop_columns(paths).equals(want.drop_columns(paths))
    assert got.num_rows == want.num_rows > 100
