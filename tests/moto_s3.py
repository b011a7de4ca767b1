"""moto's S3 server on 127.0.0.1 for tests, in one home: the environment an S3 client reads (no
profile, no proxy; test keys, or none where a test gives its own), a free port, the buckets a test
asks for, and at the end those buckets emptied and removed (moto's servers in one process share
their buckets: one left behind breaks the next fixture that makes a bucket of that name)."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

KEY = SECRET = "testing"


@contextmanager
def moto_s3(*buckets: str, keys: bool = True) -> Iterator[str]:
    """The endpoint URL of a moto S3 server holding the empty ``buckets``. ``keys``: the test keys
    in the environment; without, no key, credentials file or instance metadata is found there (the
    test passes its own). On exit the buckets go, the server stops and the environment is restored;
    a test skips where moto or boto3 is not installed."""
    server_mod = pytest.importorskip("moto.server")
    boto3 = pytest.importorskip("boto3")
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    mp = pytest.MonkeyPatch()
    mp.setenv("AWS_DEFAULT_REGION", "us-east-1")
    for k in ("AWS_PROFILE", "HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        mp.delenv(k, raising=False)
    if keys:
        mp.setenv("AWS_ACCESS_KEY_ID", KEY)
        mp.setenv("AWS_SECRET_ACCESS_KEY", SECRET)
    else:
        mp.delenv("AWS_ACCESS_KEY_ID", raising=False)
        mp.delenv("AWS_SECRET_ACCESS_KEY", raising=False)
        mp.setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
        mp.setenv("AWS_CONFIG_FILE", "/nonexistent")
        mp.setenv("AWS_EC2_METADATA_DISABLED", "true")
    server = server_mod.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)  # a free port
    server.start()
    endpoint = f"http://127.0.0.1:{server.get_host_and_port()[1]}"
    client = boto3.client("s3", endpoint_url=endpoint, aws_access_key_id=KEY, aws_secret_access_key=SECRET,
                          region_name="us-east-1")
    try:
        for bucket in buckets:
            client.create_bucket(Bucket=bucket)
        yield endpoint
    finally:
        for bucket in buckets:
            _drop_bucket(client, bucket)
        server.stop()
        mp.undo()


def _drop_bucket(client, bucket: str) -> None:
    """Empty ``bucket`` and remove it; gone already: nothing to do. Every key is listed before any
    is deleted (moto's listing pages shift under deletes), then deleted a thousand a request."""
    try:
        pages = client.get_paginator("list_object_versions").paginate(Bucket=bucket)
        items = [{"Key": item["Key"], "VersionId": item["VersionId"]}
                 for page in pages for item in page.get("Versions", []) + page.get("DeleteMarkers", [])]
        for at in range(0, len(items), 1000):
            out = client.delete_objects(Bucket=bucket, Delete={"Objects": items[at:at + 1000], "Quiet": True})
            assert not out.get("Errors"), out["Errors"][:5]
        client.delete_bucket(Bucket=bucket)
    except client.exceptions.NoSuchBucket:
        pass
